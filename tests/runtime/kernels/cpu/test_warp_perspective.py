"""experimental.warp_perspective and experimental.remap: a numpy reference of OpenCV's sampling
(written per pixel with Python floats / numpy scalars, unlike the compiled kernel), DALI 2.4
oracle cases, the front end and the errors."""
from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

import ndd
from runtime.kernels.cpu.warp_perspective import remap, warp_perspective
from runtime.kernels.params.warp import corner_to_center, invert_perspective

RNG = np.random.default_rng(7)
F = np.float32


def _image(h, w, c, dtype, rng=RNG):
    if np.dtype(dtype) == np.float32:
        return (rng.standard_normal((h, w, c)) * 100).astype(np.float32)
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, (h, w, c)).astype(dtype)


def _matrix(rng=RNG, strength=1.0):
    jitter = rng.standard_normal((3, 3)) * np.array([[.15, .15, 3], [.15, .15, 3],
                                                       [.002, .002, .03]]) * strength
    return (np.eye(3) + jitter).astype(np.float32)


def _reflect(p, n, delta):
    if n == 1:
        return 0
    while p < 0 or p >= n:
        p = -p - 1 + delta if p < 0 else n - 1 - (p - n) - delta
    return p


def _border(p, n, mode):
    if 0 <= p < n:
        return p
    if mode == "constant":
        return None
    if mode == "replicate":
        return min(max(p, 0), n - 1)
    if mode == "wrap":
        return p % n
    return _reflect(p, n, 1 if mode == "reflect_101" else 0)


def _ref_nn(img, m, oh, ow, mode, fill):
    """OpenCV's nearest: double coordinates, rounded half to even (no blocks needed: the
    matrices here are exactly representable steps)."""
    h, w, c = img.shape
    out = np.empty((oh, ow, c), img.dtype)
    md = np.asarray(m, np.float64)
    for y in range(oh):
        for x in range(ow):
            wgt = md[2, 0] * x + md[2, 1] * y + md[2, 2]
            wgt = 1.0 / wgt if wgt else 0.0
            sx = int(np.rint((md[0, 0] * x + md[0, 1] * y + md[0, 2]) * wgt))
            sy = int(np.rint((md[1, 0] * x + md[1, 1] * y + md[1, 2]) * wgt))
            bx, by = _border(sx, w, mode), _border(sy, h, mode)
            out[y, x] = fill if bx is None or by is None else img[by, bx]
    return out


def _ref_linear_float(img, m, oh, ow, mode, fill):
    """OpenCV's float32-point bilinear (uint8 / uint16 / float32 with 1, 3 or 4 channels)."""
    h, w, c = img.shape
    m32 = np.asarray(m, np.float32).reshape(-1)
    out = np.empty((oh, ow, c), img.dtype)
    for y in range(oh):
        for x in range(ow):
            fx, fy = F(x), F(y)
            wgt = fx * m32[6] + fy * m32[7] + m32[8]
            sx = (fx * m32[0] + fy * m32[1] + m32[2]) / wgt
            sy = (fx * m32[3] + fy * m32[4] + m32[5]) / wgt
            ix, iy = math.floor(sx), math.floor(sy)
            ax, ay = sx - F(ix), sy - F(iy)
            if mode == "constant" and not (-1 <= ix < w and -1 <= iy < h):
                out[y, x] = fill
                continue
            taps = []
            for dy, dx in ((0, 0), (0, 1), (1, 0), (1, 1)):
                bx, by = _border(ix + dx, w, mode), _border(iy + dy, h, mode)
                taps.append(np.full(c, F(fill), F) if bx is None or by is None
                            else img[by, bx].astype(F))
            v0 = taps[0] + ax * (taps[1] - taps[0])
            v1 = taps[2] + ax * (taps[3] - taps[2])
            v = v0 + ay * (v1 - v0)
            if img.dtype.kind in "iu":
                info = np.iinfo(img.dtype)
                v = np.clip(np.rint(v), info.min, info.max)
            out[y, x] = v
    return out


def _ref_linear_fixed(img, m, oh, ow, mode, fill):
    """OpenCV's classic bilinear (int16): source points in 1/32 pixel, float32 weights."""
    h, w, c = img.shape
    md = np.asarray(m, np.float64)
    out = np.empty((oh, ow, c), img.dtype)
    for y in range(oh):
        for x in range(ow):
            wgt = md[2, 0] * x + md[2, 1] * y + md[2, 2]
            wgt = 32.0 / wgt if wgt else 0.0
            X = int(np.rint((md[0, 0] * x + md[0, 1] * y + md[0, 2]) * wgt))
            Y = int(np.rint((md[1, 0] * x + md[1, 1] * y + md[1, 2]) * wgt))
            sx, sy, ax, ay = X >> 5, Y >> 5, F(X & 31) / F(32), F(Y & 31) / F(32)
            wts = [(F(1) - ay) * (F(1) - ax), (F(1) - ay) * ax, ay * (F(1) - ax), ay * ax]
            if mode == "constant" and (sx >= w or sx + 1 < 0 or sy >= h or sy + 1 < 0):
                out[y, x] = fill
                continue
            acc = np.zeros(c, F)
            for k, (dy, dx) in enumerate(((0, 0), (0, 1), (1, 0), (1, 1))):
                bx, by = _border(sx + dx, w, mode), _border(sy + dy, h, mode)
                v = np.full(c, F(fill), F) if bx is None or by is None else img[by, bx].astype(F)
                acc = acc + v * wts[k] if k else v * wts[k]
            info = np.iinfo(img.dtype)
            out[y, x] = np.clip(np.rint(acc), info.min, info.max)
    return out


MODES = ("constant", "replicate", "reflect", "reflect_101", "wrap")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype,c", [(np.uint8, 3), (np.uint8, 1), (np.uint16, 4),
                                     (np.float32, 3)])
def test_linear_float_points_match_the_reference(mode, dtype, c):
    img = _image(13, 17, c, dtype)
    m = _matrix()
    out = warp_perspective(img, m, size=(11, 19), interp="linear", border_mode=mode,
                           fill_value=7.0, pixel_origin="center")
    ref = _ref_linear_float(img, m, 11, 19, mode, 7)
    if dtype == np.float32:
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-3)
    else:
        assert np.abs(out.astype(np.int64) - ref).max() <= 1
        assert (out == ref).mean() > 0.99


@pytest.mark.parametrize("mode", MODES)
def test_linear_int16_is_the_fixed_point_path(mode):
    img = _image(9, 12, 2, np.int16)
    m = _matrix()
    out = warp_perspective(img, m, size=(10, 14), interp="linear", border_mode=mode,
                           fill_value=-3.0, pixel_origin="center")
    ref = _ref_linear_fixed(img, m, 10, 14, mode, -3)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32])
def test_nearest_matches_the_reference(mode, dtype):
    img = _image(8, 11, 3, dtype)
    m = _matrix()
    out = warp_perspective(img, m, size=(9, 13), interp="nn", border_mode=mode,
                           fill_value=5.0, pixel_origin="center")
    np.testing.assert_array_equal(out, _ref_nn(img, m, 9, 13, mode, 5))


def test_identity_and_translation():
    img = _image(6, 7, 3, np.uint8)
    for interp in ("nn", "linear", "cubic"):
        np.testing.assert_array_equal(warp_perspective(img, np.eye(3), interp=interp), img)
    shift = np.array([[1, 0, 2], [0, 1, 1], [0, 0, 1]], np.float32)
    out = warp_perspective(img, shift, interp="nn", pixel_origin="center")
    np.testing.assert_array_equal(out[:-1, :-2], img[1:, 2:])
    assert (out[-1] == 0).all() and (out[:, -2:] == 0).all()


def test_inverse_map_false_inverts_the_matrix():
    img = _image(10, 12, 3, np.uint8)
    m = _matrix()
    a = warp_perspective(img, m, inverse_map=False)
    b = warp_perspective(img, invert_perspective(corner_to_center(m)).astype(np.float64),
                         pixel_origin="center")
    # the second call rounds the inverse to float32 on the way: allow the odd last bit
    assert np.abs(a.astype(int) - b).max() <= 1


def test_corner_origin_is_a_half_pixel_shift():
    m = np.array([[2, 0, 0], [0, 2, 0], [0, 0, 1]], np.float32)
    c = corner_to_center(m)
    # corner: dst center (x + .5) maps to 2x + 1 -> center coordinate 2x + 0.5
    np.testing.assert_allclose(c, [[2, 0, 0.5], [0, 2, 0.5], [0, 0, 1]])


def test_fill_per_channel_and_hw_images():
    img = _image(5, 5, 3, np.uint8)
    far = np.array([[1, 0, 100], [0, 1, 100], [0, 0, 1]], np.float32)
    out = warp_perspective(img, far, fill_value=[10, 20, 300])
    assert (out == np.array([10, 20, 255], np.uint8)).all()
    gray = img[:, :, 0]
    assert warp_perspective(gray, np.eye(3)).shape == (5, 5)
    assert warp_perspective(img, np.eye(3), size=(0.4, 7.5)).shape == (1, 8, 3)


def test_errors():
    img = _image(4, 4, 3, np.uint8)
    with pytest.raises(ValueError, match="input types"):
        warp_perspective(img.astype(np.int32), np.eye(3))
    with pytest.raises(ValueError, match="more than 4 channels"):
        warp_perspective(np.zeros((4, 4, 5), np.uint8), np.eye(3))
    with pytest.raises(ValueError, match="fill_value should match"):
        warp_perspective(img, np.eye(3), fill_value=[1, 2])
    with pytest.raises(ValueError, match="border_mode"):
        warp_perspective(img, np.eye(3), border_mode="mirror")
    with pytest.raises(ValueError, match="9 numbers"):
        warp_perspective(img, np.eye(2))
    with pytest.raises(ValueError, match="interp_type"):
        warp_perspective(img, np.eye(3), interp="lanczos3")


# ------------------------------------------------------------------------ remap
def test_remap_identity_and_shift():
    img = _image(6, 9, 3, np.uint8)
    xs, ys = np.meshgrid(np.arange(9, dtype=np.float32), np.arange(6, dtype=np.float32))
    np.testing.assert_array_equal(remap(img, xs, ys, pixel_origin="center"), img)
    np.testing.assert_array_equal(remap(img, xs + 0.5, ys + 0.5, interp="nn"), img)
    out = remap(img, xs + 1, ys, interp="nn", pixel_origin="center")
    np.testing.assert_array_equal(out[:, :-1], img[:, 1:])
    assert (out[:, -1] == 0).all()


def test_remap_linear_is_a_bilinear_blend():
    img = _image(5, 6, 1, np.float32)
    mx = np.full((5, 6), 2.25, np.float32)
    my = np.full((5, 6), 1.75, np.float32)
    out = remap(img, mx, my, pixel_origin="center")
    p = img[:, :, 0].astype(np.float64)
    want = (p[1, 2] * .75 * .25 + p[1, 3] * .25 * .25 + p[2, 2] * .75 * .75
            + p[2, 3] * .25 * .75)
    np.testing.assert_allclose(out[..., 0], want, rtol=1e-5)


def test_remap_errors():
    img = _image(4, 4, 3, np.uint8)
    good = np.zeros((4, 4), np.float32)
    with pytest.raises(ValueError, match="HWC"):
        remap(img[:, :, 0], good, good)
    with pytest.raises(ValueError, match="height and width"):
        remap(img, np.zeros((3, 4), np.float32), good)
    with pytest.raises(ValueError, match="pixel_origin"):
        remap(img, good, good, pixel_origin="middle")


# ------------------------------------------------------------------------ front end
def test_front_end_names_per_sample_matrices_and_sequences():
    imgs = [_image(12, 15, 3, np.uint8), _image(9, 7, 3, np.uint8)]
    mats = [_matrix(), _matrix()]
    with ndd.EvalMode.sync_cpu:
        out = ndd.experimental.warp_perspective(ndd.as_batch(imgs, layout="HWC"),
                                                matrix=ndd.as_batch(mats), border_mode="wrap")
        for i in range(2):
            np.testing.assert_array_equal(np.asarray(out.select(i)),
                                          warp_perspective(imgs[i], mats[i], border_mode="wrap"))
        via_input = ndd.experimental.warp_perspective(ndd.as_batch(imgs, layout="HWC"),
                                                      ndd.as_batch(mats), size=[5, 6])
        assert [np.asarray(via_input.select(i)).shape for i in range(2)] == [(5, 6, 3)] * 2
        seq = np.stack([imgs[0], imgs[0][::-1].copy()])
        s = ndd.experimental.warp_perspective(ndd.as_batch([seq], layout="FHWC"),
                                              matrix=mats[0])
        np.testing.assert_array_equal(np.asarray(s.select(0))[1],
                                      warp_perspective(seq[1], mats[0]))
    deferred = ndd.experimental.warp_perspective(ndd.as_batch(imgs, layout="HWC"),
                                                 matrix=mats[0], interp_type="cubic")
    np.testing.assert_array_equal(np.asarray(deferred.select(1)),
                                  warp_perspective(imgs[1], mats[0], interp="cubic"))
    assert ndd.experimental.remap.__module__ == "ndd.experimental"


def test_front_end_errors():
    img = ndd.as_batch([_image(4, 4, 3, np.int32)], layout="HWC")
    with pytest.raises(Exception, match="input types"):
        ndd.experimental.warp_perspective(img, matrix=np.eye(3, dtype=np.float32)).evaluate()
    u8 = ndd.as_batch([_image(4, 4, 3, np.uint8)], layout="HWC")
    with pytest.raises(Exception, match="border_mode"):
        ndd.experimental.warp_perspective(u8, matrix=np.eye(3, dtype=np.float32),
                                          border_mode="mirror").evaluate()
    with pytest.raises(Exception, match="should not be provided at the same time"):
        ndd.experimental.warp_perspective(u8, ndd.as_batch([np.eye(3, dtype=np.float32)]),
                                          matrix=np.eye(3, dtype=np.float32)).evaluate()


# ------------------------------------------------------------------------ DALI 2.4
ORACLE = []
for _dt in (np.uint8, np.int16, np.uint16, np.float32):
    for _interp in ("nn", "linear", "cubic"):
        for _mode in MODES:
            ORACLE.append((_dt, _interp, _mode))


def _near_half(matrix, origin, inverse, out_hw, tol=1e-5):
    """(H, W) mask of the output pixels whose source point, computed in float64 from the
    same matrix, lies within ``tol`` of a half-pixel boundary in x or y (where a nearest
    neighbour depends on the last bits of the point's arithmetic)."""
    m = np.asarray(matrix, np.float32)
    if origin == "corner":
        m = corner_to_center(m)
    m = m.astype(np.float64)
    if not inverse:
        m = invert_perspective(m)
    m = m.reshape(3, 3)
    ys, xs = np.mgrid[0:out_hw[0], 0:out_hw[1]].astype(np.float64)
    pts = np.tensordot(m, np.stack([xs, ys, np.ones_like(xs)]), axes=1)
    near = np.zeros(out_hw, bool)
    for p in (pts[0] / pts[2], pts[1] / pts[2]):
        near |= np.abs(p - np.floor(p) - 0.5) < tol
    return near


def test_near_half_marks_only_ties():
    # identity map shifted by exactly half a pixel in x: every point is a tie in x only
    m = np.array([[1, 0, 0.5], [0, 1, 0.25], [0, 0, 1]], np.float32)
    assert _near_half(m, "center", True, (3, 4)).all()
    m = np.array([[1, 0, 0.25], [0, 1, 0.25], [0, 0, 1]], np.float32)
    assert not _near_half(m, "center", True, (3, 4)).any()


def _dali_interp(types, name):
    return {"nn": types.INTERP_NN, "linear": types.INTERP_LINEAR,
            "cubic": types.INTERP_CUBIC}[name]


@pytest.mark.oracle
@pytest.mark.parametrize("dtype,interp,mode", ORACLE,
                         ids=[f"{np.dtype(d).name}-{i}-{m}" for d, i, m in ORACLE])
def test_matches_dali(dtype, interp, mode):
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    from nvidia.dali import types
    # (a seed of its own per case, the same in every process: ``hash`` of strings is not)
    rng = np.random.default_rng(zlib.crc32(f"{np.dtype(dtype).name}-{interp}-{mode}".encode()))
    imgs = [_image(int(h), int(w), int(c), dtype, rng)
            for h, w, c in ((23, 31, 3), (17, 9, 1), (8, 12, 4), (6, 5, 2))]
    mats = [_matrix(rng, 0.5) for _ in imgs]
    for origin in ("corner", "center"):
        for inverse in (True, False):
            kw = dict(border_mode=mode, fill_value=[9.0], pixel_origin=origin,
                      inverse_map=inverse)
            for img, m in zip(imgs, mats):
                lay = "HWC"
                got = dali.experimental.warp_perspective(
                    dali.as_batch([img], layout=lay), matrix=m, size=[19, 22],
                    interp_type=_dali_interp(types, interp), **kw).evaluate()
                want = np.asarray(got.select(0))
                ours = warp_perspective(img, m, size=(19, 22), interp=interp, **kw)
                if interp == "nn":
                    # equal except where the exact source point lies within float32
                    # rounding of a pixel boundary (x.5): DALI's OpenCV computes the points
                    # in vector lanes whose rounding ndd does not reproduce there
                    differ = (ours != want).reshape(19, 22, -1).any(-1)
                    ties = _near_half(m, origin, inverse, (19, 22))
                    assert not (differ & ~ties).any(), np.argwhere(differ & ~ties)[:5]
                    assert differ.sum() <= 2
                elif interp == "linear" and dtype == np.int16:
                    np.testing.assert_array_equal(ours, want)
                elif dtype == np.float32:
                    np.testing.assert_allclose(ours, want, rtol=1e-4, atol=1e-2)
                else:
                    assert np.abs(ours.astype(np.int64) - want).max() <= 1


@pytest.mark.oracle
def test_errors_like_dali():
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    img = _image(4, 4, 5, np.uint8)
    with pytest.raises(RuntimeError, match="more than 4 channels"):
        dali.experimental.warp_perspective(dali.as_batch([img], layout="HWC"),
                                           matrix=np.eye(3, dtype=np.float32)).evaluate()
    with pytest.raises(Exception, match="more than 4 channels"):
        ndd.experimental.warp_perspective(ndd.as_batch([img], layout="HWC"),
                                          matrix=np.eye(3, dtype=np.float32)).evaluate()


def test_planar_layouts_warp_every_plane():
    img = _image(3, 16, 24, np.uint8)
    m = _matrix()
    with ndd.EvalMode.sync_cpu:
        out = ndd.experimental.warp_perspective(ndd.as_batch([img], layout="CHW"), matrix=m,
                                                size=[10, 12], fill_value=[7.0])
        seq = ndd.experimental.warp_perspective(ndd.as_batch([np.stack([img, img[:, ::-1]])],
                                                             layout="FCHW"), matrix=m)
    want = np.stack([warp_perspective(p, m, size=(10, 12), fill_value=7.0) for p in img])
    np.testing.assert_array_equal(np.asarray(out.select(0)), want)
    got = np.asarray(seq.select(0))
    assert got.shape == (2, 3, 16, 24)
    np.testing.assert_array_equal(got[1, 2], warp_perspective(img[2, ::-1], m))
    with pytest.raises(Exception, match="Only scalar fill_value"):
        ndd.experimental.warp_perspective(ndd.as_batch([img], layout="CHW"), matrix=m,
                                          fill_value=[1.0, 2.0, 3.0]).evaluate()


@pytest.mark.oracle
def test_planar_layouts_match_dali():
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    rng = np.random.default_rng(8)
    img = rng.integers(0, 256, (3, 16, 24), dtype=np.uint8)
    m = _matrix(rng, 0.5)
    for lay, x in (("CHW", img), ("FCHW", np.stack([img, img[:, ::-1].copy()]))):
        want = dali.experimental.warp_perspective(dali.as_batch([x], layout=lay), matrix=m,
                                                  size=[10, 12]).evaluate()
        got = ndd.experimental.warp_perspective(ndd.as_batch([x], layout=lay), matrix=m,
                                                size=[10, 12])
        np.testing.assert_array_equal(np.asarray(got.select(0)), np.asarray(want.select(0)))
