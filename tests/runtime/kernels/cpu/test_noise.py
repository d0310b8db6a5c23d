"""Tests for runtime.kernels.cpu.noise (gaussian, salt-and-pepper and shot noise)."""
import numpy as np
import pytest

from runtime.kernels.cpu.noise import gaussian, salt_and_pepper, salt_pepper_defaults, shot


def _rng(seed=0):
    return np.random.default_rng(seed)


def test_gaussian_statistics_and_type():
    x = np.zeros((300, 300), np.float32)
    out = gaussian(x, _rng(), mean=1.5, stddev=2.0)
    assert out.dtype == np.float32 and out.shape == x.shape
    assert abs(out.mean() - 1.5) < 0.03 and abs(out.std() - 2.0) < 0.03
    u8 = gaussian(np.full((300, 300), 250, np.uint8), _rng(), stddev=10.0)
    assert u8.dtype == np.uint8 and u8.max() == 255 and (u8 == 255).mean() > 0.25   # saturates


def test_gaussian_without_spread_adds_the_mean_with_cast_rounding():
    x = np.array([0, 1, 2, 3, 254, 255], np.uint8)
    np.testing.assert_array_equal(gaussian(x, _rng(), mean=0.5, stddev=0.0), [1, 2, 3, 4, 255, 255])
    np.testing.assert_array_equal(gaussian(np.array([-3, 0], np.int16), _rng(), mean=-0.5,
                                           stddev=0.0), [-4, -1])
    f = np.array([0.1, 0.2], np.float32)
    np.testing.assert_array_equal(gaussian(f, _rng(), mean=0.25, stddev=0.0),
                                  f + np.float32(0.25))
    with pytest.raises(ValueError, match="stddev"):
        gaussian(f, _rng(), stddev=-1.0)


def test_gaussian_is_reproducible_from_the_seed():
    x = np.zeros(100, np.float32)
    np.testing.assert_array_equal(gaussian(x, _rng(7)), gaussian(x, _rng(7)))
    assert not np.array_equal(gaussian(x, _rng(7)), gaussian(x, _rng(8)))


def test_salt_and_pepper_per_pixel_and_per_channel():
    x = np.full((200, 200, 3), 100, np.uint8)
    out = salt_and_pepper(x, _rng(), prob=0.3, layout="HWC")
    hit = out != 100
    assert (hit.all(-1) == hit.any(-1)).all()                   # whole pixels
    assert abs(hit.any(-1).mean() - 0.3) < 0.01
    assert set(np.unique(out).tolist()) == {0, 100, 255}
    assert abs((out == 255).mean() / hit.mean() - 0.5) < 0.02
    pc = salt_and_pepper(x, _rng(), prob=0.3, per_channel=True)
    hit = pc != 100
    assert not (hit.all(-1) == hit.any(-1)).all() and abs(hit.mean() - 0.3) < 0.01
    chw = np.full((3, 50, 60), 7, np.int16)
    out = salt_and_pepper(chw, _rng(), prob=0.5, layout="CHW")
    hit = out != 7
    assert (hit.all(0) == hit.any(0)).all()                     # the C axis is the first


def test_salt_and_pepper_values():
    x = np.full((4, 5, 3), 100, np.uint8)
    assert (salt_and_pepper(x, _rng(), prob=1.0, salt_vs_pepper=1.0) == 255).all()
    assert (salt_and_pepper(x, _rng(), prob=1.0, salt_vs_pepper=0.0) == 0).all()
    assert (salt_and_pepper(x, _rng(), prob=0.0) == 100).all()
    f = x.astype(np.float32)
    assert (salt_and_pepper(f, _rng(), prob=1.0, salt_vs_pepper=0.0) == -1.0).all()
    assert (salt_and_pepper(x, _rng(), prob=1.0, salt_vs_pepper=1.0, salt_val=7.6) == 8).all()
    assert (salt_and_pepper(x, _rng(), prob=1.0, salt_vs_pepper=1.0, salt_val=300) == 255).all()
    assert salt_pepper_defaults(np.int16) == (32767.0, -32768.0)
    with pytest.raises(ValueError, match="prob"):
        salt_and_pepper(x, _rng(), prob=1.5)


def test_shot_statistics_quantization_and_identity():
    x = np.full((300, 300), 100.0, np.float32)
    out = shot(x, _rng(), factor=0.5)
    # out / factor ~ Poisson(200): mean 200 * 0.5, variance 200 * 0.25
    assert abs(out.mean() - 100) < 0.1 and abs(out.var() - 50) < 2
    assert (np.mod(out, 0.5) == 0).all()
    u8 = shot(np.full((100, 100), 250, np.uint8), _rng(), factor=100.0)
    assert set(np.unique(u8).tolist()) <= {0, 100, 200, 255}
    v = np.array([0, 1, 254], np.uint8)
    np.testing.assert_array_equal(shot(v, _rng(), factor=0.0), v)
    np.testing.assert_array_equal(shot(np.full(3, -5.0, np.float32), _rng(), factor=2.0), 0)


def test_salt_and_pepper_compiled_pass_equals_the_masks():
    """The compiled pass replaces boolean-mask assignments: same draws, same values."""
    from runtime.kernels.cpu import noise as nz
    for t, (dt, shape) in enumerate([(np.uint8, (7, 9, 3)), (np.float32, (5, 4)),
                                     (np.int16, (2, 6, 8, 3)), (np.bool_, (11,)),
                                     (np.float64, (3, 4, 1))]):
        x = (np.random.default_rng(t).random(shape) * 200).astype(dt)
        for per_channel in (False, True):
            for layout in ("", "HWC", "CHW"):
                if layout and len(shape) != 3:
                    continue
                got = nz.salt_and_pepper(x, np.random.default_rng(99), prob=0.3,
                                         salt_vs_pepper=0.4, per_channel=per_channel,
                                         layout=layout)
                draw = list(x.shape)
                axis = None if per_channel else nz._channel_axis(layout, x.ndim)
                if axis is not None and x.ndim > 1:
                    draw[axis] = 1
                u = np.random.default_rng(99).random(size=tuple(draw))
                s, p = (nz.fill_in_type(v, x.dtype) for v in nz.salt_pepper_defaults(x.dtype))
                want = x.copy()
                want[np.broadcast_to(u < 0.3 * 0.4, x.shape)] = s
                want[np.broadcast_to((u < 0.3) & ~(u < 0.3 * 0.4), x.shape)] = p
                np.testing.assert_array_equal(got, want)
