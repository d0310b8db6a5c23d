"""debayer: a per-pixel reference of bilinear demosaicing (Python loops over the 3 x 3
neighbourhood, unlike the kernel's whole-image numpy), DALI 2.4 oracle cases, front end,
errors."""
from __future__ import annotations

import numpy as np
import pytest

import ndd
from runtime.kernels.cpu.debayer import debayer

RNG = np.random.default_rng(3)
PATTERNS = [(0, 0), (0, 1), (1, 0), (1, 1)]


def _colour_at(y, x, bp):
    """'B', 'R' or 'G' of sensor pixel (y, x)."""
    by, bx = (1 + bp[0]) % 2, (1 + bp[1]) % 2
    if y % 2 == by and x % 2 == bx:
        return "B"
    if y % 2 != by and x % 2 != bx:
        return "R"
    return "G"


def _reference(img, bp, gray=False):
    h, w = img.shape
    p = img.astype(np.int64)
    out = np.zeros((h, w, 3), np.int64)
    for y in range(1, h - 1):
        for x in range(1, w - 1):
            here = _colour_at(y, x, bp)
            cross = (p[y - 1, x] + p[y + 1, x] + p[y, x - 1] + p[y, x + 1] + 2) // 4
            diag = (p[y - 1, x - 1] + p[y - 1, x + 1] + p[y + 1, x - 1] + p[y + 1, x + 1]
                    + 2) // 4
            horiz = (p[y, x - 1] + p[y, x + 1] + 1) // 2
            vert = (p[y - 1, x] + p[y + 1, x] + 1) // 2
            if here == "G":
                left = _colour_at(y, x - 1, bp)
                rgb = {left: horiz, ("R" if left == "B" else "B"): vert, "G": p[y, x]}
            else:
                rgb = {here: p[y, x], "G": cross, ("R" if here == "B" else "B"): diag}
            out[y, x] = rgb["R"], rgb["G"], rgb["B"]
            if gray:
                if here == "G":
                    s = (4 * 9617 * p[y, x] + 2 * (p[y, x - 1] + p[y, x + 1])
                         * (1868 if left == "B" else 4899)
                         + 2 * (p[y - 1, x] + p[y + 1, x]) * (4899 if left == "B" else 1868))
                else:
                    s = (4 * p[y, x] * (1868 if here == "B" else 4899) + 4 * 9617 * cross
                         - 4 * 9617 * cross + 9617 * (p[y - 1, x] + p[y + 1, x] + p[y, x - 1]
                                                       + p[y, x + 1])
                         + (p[y - 1, x - 1] + p[y - 1, x + 1] + p[y + 1, x - 1]
                            + p[y + 1, x + 1]) * (4899 if here == "B" else 1868))
                out[y, x, 0] = (s + 2 ** 15) >> 16
    if gray:
        out = out[..., :1]
    if h <= 2:
        return np.zeros_like(out).astype(img.dtype)
    if w > 2:
        out[1:-1, 0] = out[1:-1, 1]
        out[1:-1, -1] = out[1:-1, -2]
    out[0], out[-1] = out[1], out[-2]
    return out.astype(img.dtype)


@pytest.mark.parametrize("bp", PATTERNS)
@pytest.mark.parametrize("shape,dtype", [((8, 10), np.uint8), ((6, 4), np.uint16),
                                         ((2, 6), np.uint8), ((4, 2), np.uint8),
                                         ((12, 14), np.uint16)])
def test_bilinear_and_gray_match_the_reference(bp, shape, dtype):
    hi = 256 if dtype == np.uint8 else 65536
    img = RNG.integers(0, hi, shape).astype(dtype)
    np.testing.assert_array_equal(debayer(img, blue_position=bp), _reference(img, bp))
    np.testing.assert_array_equal(debayer(img, algorithm="gray_ocv", blue_position=bp),
                                  _reference(img, bp, gray=True))


@pytest.mark.parametrize("algorithm", ["bilinear_ocv", "edgeaware_ocv", "vng_ocv"])
@pytest.mark.parametrize("bp", PATTERNS)
def test_uniform_colour_planes_come_back(algorithm, bp):
    # a flat scene: R = 200, G = 100, B = 30 at their sites -> those values everywhere
    h, w = 12, 10
    img = np.array([[{"R": 200, "G": 100, "B": 30}[_colour_at(y, x, bp)] for x in range(w)]
                    for y in range(h)], np.uint8)
    out = debayer(img, algorithm=algorithm, blue_position=bp)
    inner = out[2:-2, 2:-2] if algorithm == "vng_ocv" else out
    assert (inner == np.array([200, 100, 30], np.uint8)).all()


@pytest.mark.parametrize("algorithm,dtype", [("edgeaware_ocv", np.uint8),
                                             ("edgeaware_ocv", np.uint16),
                                             ("vng_ocv", np.uint8)])
@pytest.mark.parametrize("bp", PATTERNS)
def test_sensor_values_kept_and_green_between_neighbours(algorithm, dtype, bp):
    """Every inner pixel keeps its own sensor value in its own channel, and edge-aware green at
    a red / blue site is the mean of two of its four direct neighbours (horizontal or
    vertical pair, rounded up)."""
    h, w = 16, 18
    hi = 256 if dtype == np.uint8 else 65536
    img = RNG.integers(0, hi, (h, w)).astype(dtype)
    out = debayer(img, algorithm=algorithm, blue_position=bp).astype(np.int64)
    p = img.astype(np.int64)
    m = 3 if algorithm == "vng_ocv" else 1      # VNG copies a wider border
    for y in range(m, h - m):
        for x in range(m, w - m):
            here = _colour_at(y, x, bp)
            assert out[y, x, "RGB".index(here)] == p[y, x], (y, x)
            if algorithm == "edgeaware_ocv" and here != "G":
                pairs = {(p[y, x - 1] + p[y, x + 1] + 1) >> 1,
                         (p[y - 1, x] + p[y + 1, x] + 1) >> 1}
                assert out[y, x, 1] in pairs, (y, x)


def test_errors():
    img = np.zeros((4, 4), np.uint8)
    with pytest.raises(ValueError, match="even"):
        debayer(np.zeros((5, 4), np.uint8))
    with pytest.raises(ValueError, match="uint8 and uint16"):
        debayer(img.astype(np.float32))
    with pytest.raises(ValueError, match="2x2 tile"):
        debayer(img, blue_position=(2, 0))
    with pytest.raises(ValueError, match="Unsupported debayer algorithm"):
        debayer(img, algorithm="fancy")
    with pytest.raises(ValueError, match="not supported on CPU"):
        debayer(img, algorithm="default_npp")
    with pytest.raises(ValueError, match="VNG"):
        debayer(img.astype(np.uint16), algorithm="vng_ocv")
    with pytest.raises(ValueError, match="VNG"):       # checked before the shape
        debayer(np.zeros((5, 4), np.uint16), algorithm="vng_ocv")
    assert debayer(img, algorithm="edgeaware_ocv").shape == (4, 4, 3)   # implemented now


def test_front_end_per_sample_patterns_and_sequences():
    imgs = [RNG.integers(0, 256, (6, 8)).astype(np.uint8) for _ in range(2)]
    with ndd.EvalMode.sync_cpu:
        out = ndd.debayer(ndd.as_batch(imgs, layout="HW"),
                          blue_position=ndd.as_batch([np.array([0, 1], np.int32),
                                                      np.array([1, 1], np.int32)]))
        assert out.layout == "HWC"
    for i, bp in enumerate([(0, 1), (1, 1)]):
        np.testing.assert_array_equal(np.asarray(out.select(i)), debayer(imgs[i],
                                                                         blue_position=bp))
    seq = ndd.debayer(ndd.as_batch([np.stack(imgs)], layout="FHW"), blue_position=[0, 0],
                      algorithm="gray_ocv")
    got = np.asarray(seq.select(0))
    assert got.shape == (2, 6, 8, 1)
    np.testing.assert_array_equal(got[1], debayer(imgs[1], algorithm="gray_ocv"))
    with pytest.raises(Exception, match="Unsupported debayer algorithm"):
        ndd.debayer(ndd.as_batch(imgs, layout="HW"), blue_position=[0, 0],
                    algorithm="fancy").evaluate()


@pytest.mark.oracle
@pytest.mark.parametrize("algorithm", ["bilinear_ocv", "gray_ocv", "default"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_matches_dali(algorithm, dtype):
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    rng = np.random.default_rng(17)
    hi = 256 if dtype == np.uint8 else 65536
    imgs = [rng.integers(0, hi, s).astype(dtype) for s in ((20, 24), (2, 2), (6, 2),
                                                            (40, 18))]
    bps = [np.array(bp, np.int32) for bp in PATTERNS]
    kw = {} if algorithm == "default" else {"algorithm": algorithm}
    want = dali.debayer(dali.as_batch(imgs, layout="HW"), blue_position=dali.as_batch(bps),
                        **kw).evaluate()
    got = ndd.debayer(ndd.as_batch(imgs, layout="HW"), blue_position=ndd.as_batch(bps), **kw)
    for i in range(len(imgs)):
        np.testing.assert_array_equal(np.asarray(got.select(i)), np.asarray(want.select(i)))


@pytest.mark.oracle
@pytest.mark.parametrize("algorithm,dtype", [("edgeaware_ocv", np.uint8),
                                             ("edgeaware_ocv", np.uint16),
                                             ("vng_ocv", np.uint8)])
def test_edgeaware_and_vng_match_dali(algorithm, dtype):
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    rng = np.random.default_rng(23)
    hi = 256 if dtype == np.uint8 else 65536
    shapes = [(20, 26), (2, 2), (6, 2), (2, 10), (4, 6), (8, 8), (34, 18), (10, 14)]
    imgs, bps = [], []
    for s in shapes:
        for bp in PATTERNS:
            imgs.append(rng.integers(0, hi, s).astype(dtype))
            bps.append(np.array(bp, np.int32))
    want = dali.debayer(dali.as_batch(imgs, layout="HW"), blue_position=dali.as_batch(bps),
                        algorithm=algorithm).evaluate()
    got = ndd.debayer(ndd.as_batch(imgs, layout="HW"), blue_position=ndd.as_batch(bps),
                      algorithm=algorithm)
    for i in range(len(imgs)):
        np.testing.assert_array_equal(np.asarray(got.select(i)), np.asarray(want.select(i)),
                                      err_msg=f"{imgs[i].shape} {bps[i]}")


@pytest.mark.oracle
def test_vng_on_uint16_raises_as_dali():
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    imgs = [np.zeros((8, 8), np.uint16)]
    with pytest.raises(RuntimeError, match="VNG debayering only supported with UINT8"):
        dali.debayer(dali.as_batch(imgs, layout="HW"), blue_position=[0, 0],
                     algorithm="vng_ocv").evaluate()
    with pytest.raises(Exception, match="VNG debayering only supported with UINT8"):
        ndd.debayer(ndd.as_batch(imgs, layout="HW"), blue_position=[0, 0],
                    algorithm="vng_ocv").evaluate()
