"""``erase`` (runtime/kernels/cpu/masking.py): regions checked against a coordinate-grid
reference (each pixel tested against every region's bounds), eager == deferred."""
import math

import numpy as np
import pytest

import ndd
from runtime.kernels.cpu.masking import erase, grid_mask, jitter, paste


def _ref_erase(img, boxes, fill):
    """``boxes``: per region, a dict axis -> (start, extent) in pixels; the pixels whose index
    ``k`` satisfies ``floor(start) <= k < floor(start + extent)`` on every listed axis."""
    out = img.copy()
    grids = np.indices(img.shape)
    for box in boxes:
        inside = np.ones(img.shape, bool)
        for ax, (st, ex) in box.items():
            inside &= (grids[ax] >= math.floor(st)) & (grids[ax] < math.floor(st + ex))
        if np.ndim(fill) == 0:
            out[inside] = fill
        else:
            full = np.broadcast_to(np.asarray(fill, img.dtype), img.shape)
            out[inside] = full[inside]
    return out


@pytest.fixture
def img():
    return (np.arange(7 * 9 * 3) % 251 + 1).astype(np.uint8).reshape(7, 9, 3)


def test_default_hw_multiple_regions_and_clipping(img):
    anchor = [1, 2, -1.5, 6.7, 5.2, 0.3]
    shape = [2, 3, 3.0, 9.0, 1.9, 2.0]
    got = erase(img, anchor, shape, layout="HWC")
    boxes = [{0: (anchor[k], shape[k]), 1: (anchor[k + 1], shape[k + 1])} for k in (0, 2, 4)]
    np.testing.assert_array_equal(got, _ref_erase(img, boxes, 0))


def test_axis_names_axes_and_precedence(img):
    got = erase(img, [1, 2], [2, 3], layout="HWC", axis_names="WH")
    np.testing.assert_array_equal(got, _ref_erase(img, [{1: (1, 2), 0: (2, 3)}], 0))
    np.testing.assert_array_equal(erase(img, [1, 2], [2, 3], layout="HWC", axes=[1, 0]), got)
    # axis_names given explicitly wins over axes
    np.testing.assert_array_equal(
        erase(img, [1, 2], [2, 3], layout="HWC", axes=[0, 1], axis_names="WH"), got)
    # one axis: the whole extent of the others
    got = erase(img, [4], [3], layout="HWC", axis_names="W")
    np.testing.assert_array_equal(got, _ref_erase(img, [{1: (4, 3)}], 0))
    got = erase(img, [1], [1], layout="HWC", axes=[2])
    np.testing.assert_array_equal(got, _ref_erase(img, [{2: (1, 1)}], 0))


def test_normalized_and_centered(img):
    h, w = img.shape[:2]
    got = erase(img, [0.1, 0.2], [0.3, 0.5], layout="HWC", normalized=True)
    ref = _ref_erase(img, [{0: (0.1 * h, 0.3 * h), 1: (0.2 * w, 0.5 * w)}], 0)
    np.testing.assert_array_equal(got, ref)
    got = erase(img, [0.5, 0.25], [2, 3], layout="HWC", normalized_anchor=True)
    np.testing.assert_array_equal(got, _ref_erase(img, [{0: (0.5 * h, 2), 1: (0.25 * w, 3)}], 0))
    got = erase(img, [1, 2], [0.5, 0.5], layout="HWC", normalized_shape=True)
    np.testing.assert_array_equal(got, _ref_erase(img, [{0: (1, 0.5 * h), 1: (2, 0.5 * w)}], 0))
    got = erase(img, [3.5, 4.0], [3, 4], layout="HWC", centered_anchor=True)
    np.testing.assert_array_equal(got, _ref_erase(img, [{0: (2.0, 3), 1: (2.0, 4)}], 0))


def test_fill_values(img):
    got = erase(img, [1, 2], [3, 3], layout="HWC", fill_value=[7, 8, 9])
    np.testing.assert_array_equal(got, _ref_erase(img, [{0: (1, 3), 1: (2, 3)}], [7, 8, 9]))
    got = erase(img, [1, 2], [3, 3], layout="HWC", fill_value=[300.0])   # cast: saturates
    np.testing.assert_array_equal(got, _ref_erase(img, [{0: (1, 3), 1: (2, 3)}], 255))
    chw = np.ascontiguousarray(img.transpose(2, 0, 1))
    got = erase(chw, [1, 2], [3, 3], layout="CHW", fill_value=[7, 8, 9])
    ref = _ref_erase(chw, [{1: (1, 3), 2: (2, 3)}], np.array([7, 8, 9])[:, None, None])
    np.testing.assert_array_equal(got, ref)
    f = img.astype(np.float32) / 7
    got = erase(f, [0, 0], [2, 2], layout="HWC", fill_value=[0.25])
    np.testing.assert_array_equal(got, _ref_erase(f, [{0: (0, 2), 1: (0, 2)}], 0.25))


def test_nothing_to_erase(img):
    np.testing.assert_array_equal(erase(img, None, None, layout="HWC"), img)
    np.testing.assert_array_equal(erase(img, [1, 2], [-2, 3], layout="HWC"), img)
    np.testing.assert_array_equal(erase(img, [10, 20], [2, 3], layout="HWC"), img)


@pytest.mark.parametrize("kw", [dict(anchor=[1, 2], shape=[2, 3, 4]),
                                dict(anchor=[1, 2]),
                                dict(anchor=[1, 2, 3], shape=[1, 1, 1]),
                                dict(anchor=[1, 2], shape=[2, 3], fill_value=[1, 2]),
                                dict(anchor=[1, 2], shape=[2, 3], axis_names="D")])
def test_errors(img, kw):
    with pytest.raises(ValueError):
        ndd.erase(ndd.as_tensor(img, layout="HWC"), **kw).evaluate()


def test_errors_layout_and_dtype(img):
    with pytest.raises(ValueError, match="layout"):
        ndd.erase(ndd.as_tensor(img[..., 0]), anchor=[1, 2], shape=[2, 3]).evaluate()
    with pytest.raises(ValueError, match="float64"):
        ndd.erase(ndd.as_tensor(img.astype(np.float64), layout="HWC"), anchor=[1, 2],
                  shape=[2, 3]).evaluate()


def _arrays(b):
    return [np.asarray(t) for t in b.tensors]


def test_per_sample_regions_eager_equals_deferred(img):
    imgs = [img, img[:4, :5].copy(), img[::-1].copy()]
    anchors = [np.array([1, 2], np.float32), np.array([0, 0, 2, 2], np.float32),
               np.array([], np.float32)]
    shapes = [np.array([2, 3], np.float32), np.array([1, 1, 5, 5], np.float32),
              np.array([], np.float32)]
    res = []
    for mode in (ndd.EvalMode.eager, ndd.EvalMode.deferred):
        with mode:
            out = ndd.erase(ndd.as_batch(imgs, layout="HWC"), anchor=ndd.as_batch(anchors),
                            shape=ndd.as_batch(shapes), fill_value=[1, 2, 3])
            res.append(_arrays(out))
    for e, d in zip(*res):
        np.testing.assert_array_equal(e, d)
    for x, a, s, got in zip(imgs, anchors, shapes, res[0]):
        boxes = [{0: (a[k], s[k]), 1: (a[k + 1], s[k + 1])} for k in range(0, a.size, 2)]
        np.testing.assert_array_equal(got, _ref_erase(x, boxes, [1, 2, 3]))


# ---- paste ----------------------------------------------------------------------------------

def _ref_paste(img, ratio, fill, px, py, least=0):
    """np.pad with per-channel constants; sizes from Python floats of the float32 values."""
    h, w, c = img.shape
    r = float(np.float32(ratio))
    oh, ow = max(math.floor(h * r), math.floor(least)), max(math.floor(w * r), math.floor(least))
    top = math.floor(float(np.float32(py)) * (oh - h))
    left = math.floor(float(np.float32(px)) * (ow - w))
    chans = [np.pad(img[..., k], ((top, oh - h - top), (left, ow - w - left)),
                    constant_values=fill[k % len(fill)]) for k in range(c)]
    return np.stack(chans, -1)


@pytest.mark.parametrize("ratio,px,py,least", [(2, 0.5, 0.5, 0), (2.2739, 0, 1, 0),
                                               (1.35, 0.5, 0.1, 0), (2.8548, 0.968, 0.0147, 0),
                                               (1.0, 0.3, 0.3, 12), (1.2, 1, 0, 8.5)])
def test_paste_reference(img, ratio, px, py, least):
    got = np.asarray(ndd.paste(ndd.as_tensor(img, layout="HWC"), ratio=ratio,
                               fill_value=[1, 2, 3], paste_x=px, paste_y=py,
                               min_canvas_size=least))
    np.testing.assert_array_equal(got, _ref_paste(img, ratio, [1, 2, 3], px, py, least))


def test_paste_fill_single_and_cast(img):
    np.testing.assert_array_equal(paste(img, ratio=1.5, fill_value=[9]),
                                  _ref_paste(img, 1.5, [9], 0.5, 0.5))
    got = paste(img, ratio=1.5, fill_value=[300, -2, 2.5])
    np.testing.assert_array_equal(got, _ref_paste(img, 1.5, [255, 0, 3], 0.5, 0.5))


@pytest.mark.parametrize("kw", [dict(ratio=0.5, fill_value=[0]),
                                dict(ratio=2, fill_value=[1, 2]),
                                dict(ratio=2, fill_value=[0], paste_x=1.5),
                                dict(ratio=2, fill_value=[0], paste_y=-0.1)])
def test_paste_errors(img, kw):
    with pytest.raises(ValueError):
        ndd.paste(ndd.as_tensor(img, layout="HWC"), **kw).evaluate()


def test_paste_errors_type_layout(img):
    with pytest.raises(ValueError, match="uint8"):
        ndd.paste(ndd.as_tensor(img.astype(np.float32), layout="HWC"), ratio=2,
                  fill_value=[0]).evaluate()
    with pytest.raises(ValueError, match="HWC"):
        ndd.paste(ndd.as_tensor(np.ascontiguousarray(img.transpose(2, 0, 1)), layout="CHW"),
                  ratio=2, fill_value=[0]).evaluate()


def test_paste_per_sample_eager_equals_deferred(img):
    imgs = [img, img[:4, :5].copy(), img[::-1].copy()]
    ratios = [np.float32(1.5), np.float32(2.0), np.float32(3.3)]
    pxs = [np.float32(0.0), np.float32(0.7), np.float32(1.0)]
    res = []
    for mode in (ndd.EvalMode.eager, ndd.EvalMode.deferred):
        with mode:
            out = ndd.paste(ndd.as_batch(imgs, layout="HWC"), ratio=ndd.as_batch(ratios),
                            paste_x=ndd.as_batch(pxs), fill_value=[4, 5, 6])
            res.append(_arrays(out))
    for e, d in zip(*res):
        np.testing.assert_array_equal(e, d)
    for x, r, p, got in zip(imgs, ratios, pxs, res[0]):
        np.testing.assert_array_equal(got, _ref_paste(x, r, [4, 5, 6], p, 0.5))


# ---- grid_mask ------------------------------------------------------------------------------

def _ref_grid(h, w, tile, ratio, angle, sx, sy):
    """Per-pixel float64 loop: (mask, margin) with margin the distance of the nearer
    fractional part from ``ratio`` (where float32 and float64 may disagree)."""
    mask = np.zeros((h, w), bool)
    margin = np.zeros((h, w))
    c, s = math.cos(angle), math.sin(angle)
    for y in range(h):
        for x in range(w):
            fu = ((x * c - y * s - sx) / tile) % 1.0
            fv = ((x * s + y * c - sy) / tile) % 1.0
            mask[y, x] = fu < ratio and fv < ratio
            wrap = [min(f, 1 - f) for f in (fu, fv) if f != 0.0]   # exact 0: no ambiguity
            margin[y, x] = min([abs(fu - ratio), abs(fv - ratio)] + wrap)
    return mask, margin


@pytest.mark.parametrize("kw", [dict(tile=8, ratio=0.5, angle=0.0, shift_x=0.0, shift_y=0.0),
                                dict(tile=5, ratio=0.3, angle=0.0, shift_x=3.0, shift_y=-2.0),
                                dict(tile=9, ratio=0.6, angle=0.7, shift_x=1.2, shift_y=4.4),
                                dict(tile=13, ratio=0.45, angle=-2.2, shift_x=-7.0,
                                     shift_y=0.3)])
def test_grid_mask_reference(img, kw):
    big = np.resize(img, (31, 27, 3))
    got = grid_mask(big, **kw)
    mask, margin = _ref_grid(31, 27, kw["tile"], kw["ratio"], kw["angle"], kw["shift_x"],
                             kw["shift_y"])
    # unrotated: exact in float32 too (integer coordinates and shifts, ratios away
    # from every k / tile); rotated: only the pixels away from the boundaries
    sure = margin > 1e-5 if kw["angle"] else np.ones_like(mask)
    assert sure.mean() > 0.9
    ref = np.where(mask[..., None], 0, big)
    np.testing.assert_array_equal(got[sure], ref[sure])


def test_grid_mask_errors_and_layout(img):
    with pytest.raises(ValueError, match="positive"):
        ndd.grid_mask(ndd.as_tensor(img, layout="HWC"), tile=0).evaluate()
    with pytest.raises(ValueError, match="HWC"):
        ndd.grid_mask(ndd.as_tensor(img[..., 0], layout="HW"), tile=4).evaluate()
    with pytest.raises(ValueError, match="float64"):
        ndd.grid_mask(ndd.as_tensor(img.astype(np.float64), layout="HWC")).evaluate()


def test_grid_mask_per_sample_eager_equals_deferred(img):
    imgs = [img, img[:4, :5].copy(), np.resize(img, (20, 30, 3))]
    tiles = [np.int32(3), np.int32(4), np.int32(7)]
    angles = [np.float32(0.0), np.float32(0.5), np.float32(-1.0)]
    res = []
    for mode in (ndd.EvalMode.eager, ndd.EvalMode.deferred):
        with mode:
            out = ndd.grid_mask(ndd.as_batch(imgs, layout="HWC"), tile=ndd.as_batch(tiles),
                                angle=ndd.as_batch(angles), ratio=0.4, shift_x=1.0)
            res.append(_arrays(out))
    for e, d in zip(*res):
        np.testing.assert_array_equal(e, d)
    for x, t, a, got in zip(imgs, tiles, angles, res[0]):
        mask, margin = _ref_grid(x.shape[0], x.shape[1], int(t), 0.4, float(a), 1.0, 0.0)
        sure = margin > 1e-5
        np.testing.assert_array_equal(got[sure], np.where(mask[..., None], 0, x)[sure])


@pytest.mark.parametrize("dtype,chans", [(np.uint8, 1), (np.uint8, 3), (np.int16, 2),
                                         (np.int32, 3), (np.float32, 4)])
def test_grid_mask_compiled_pass_equals_the_float32_mask(dtype, chans):
    """The compiled pass (row masks spread over each pixel's bytes) against the whole-image
    numpy mask of the same float32 formula, for every pixel size; odd sizes, any angle."""
    from runtime.kernels.cpu.masking import grid_mask_mask
    rng = np.random.default_rng(chans)
    for h, w in ((1, 1), (5, 37), (23, 4)):
        x = rng.normal(0, 90, (h, w, chans)).astype(dtype)
        kw = dict(tile=int(rng.integers(1, 9)), ratio=float(rng.uniform(0.1, 0.9)),
                  angle=float(rng.uniform(-3, 3)), shift_x=float(rng.uniform(-5, 5)),
                  shift_y=float(rng.uniform(-5, 5)))
        want = np.where(grid_mask_mask(h, w, **kw)[..., None], np.zeros((), dtype), x)
        got = grid_mask(x, **kw)
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got, want)
    nan = np.full((4, 6, 1), np.nan, np.float32)          # masked pixels are 0, not NaN * 0
    out = grid_mask(nan, tile=2, ratio=0.5)
    np.testing.assert_array_equal(np.isnan(out[..., 0]), ~grid_mask_mask(4, 6, tile=2,
                                                                          ratio=0.5))


# ---- jitter ---------------------------------------------------------------------------------

def _coords(h, w):
    """uint8 HWC image coding each pixel's (y, x) in channels 0 and 1 (channel 2 = 200)."""
    yy, xx = np.mgrid[0:h, 0:w]
    return np.stack([yy + 10, xx + 10, np.full_like(yy, 200)], -1).astype(np.uint8)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_jitter_offsets_statistics(n):
    h, w = 60, 70
    x = _coords(h, w)
    out = jitter(x, np.random.default_rng(3), n_degree=n, fill_value=1).astype(int)
    filled = out[..., 2] == 1
    assert (out[filled] == 1).all()                      # all channels take the fill together
    yy, xx = np.mgrid[0:h, 0:w]
    dy, dx = out[..., 0] - 10 - yy, out[..., 1] - 10 - xx
    lo, hi = -(n // 2), n - 1 - n // 2
    for d in (dy[~filled], dx[~filled]):
        assert d.min() >= lo and d.max() <= hi
        counts = np.bincount(d - lo, minlength=n)
        # uniform over the n offsets (interior pixels: every offset keeps the source inside)
        assert counts.min() > 0.8 * d.size / n and counts.max() < 1.2 * d.size / n
    assert (out[~filled][:, 2] == 200).all()
    # the fill appears exactly where the drawn source leaves the image
    inner = np.zeros((h, w), bool)
    inner[-lo:h - hi, -lo:w - hi] = True
    assert not filled[inner].any()
    if n > 2:
        assert filled[~inner].any()


def test_jitter_mask_and_degree_one(img):
    np.testing.assert_array_equal(jitter(img, np.random.default_rng(0), n_degree=1), img)
    np.testing.assert_array_equal(jitter(img, np.random.default_rng(0), n_degree=9, mask=0),
                                  img)
    with pytest.raises(ValueError, match="nDegree"):
        ndd.jitter(ndd.as_tensor(img, layout="HWC"), nDegree=0).evaluate()
    with pytest.raises(ValueError, match="HWC"):
        ndd.jitter(ndd.as_tensor(img[..., 0], layout="HW")).evaluate()
    with pytest.raises(ValueError, match="interp_type"):
        ndd.jitter(ndd.as_tensor(img, layout="HWC"),
                   interp_type=ndd.types.INTERP_CUBIC).evaluate()


def test_jitter_reproducible_eager_equals_deferred():
    imgs = [_coords(20, 30), _coords(9, 11), _coords(33, 17)]
    masks = [np.int32(1), np.int32(0), np.int32(1)]
    res = []
    for mode in (ndd.EvalMode.eager, ndd.EvalMode.deferred, ndd.EvalMode.sync_cpu):
        with mode:
            out = ndd.jitter(ndd.as_batch(imgs, layout="HWC"), nDegree=5, fill_value=1,
                             mask=ndd.as_batch(masks), rng=ndd.random.RNG(seed=42))
            res.append(_arrays(out))
    for other in res[1:]:
        for e, d in zip(res[0], other):
            np.testing.assert_array_equal(e, d)
    np.testing.assert_array_equal(res[0][1], imgs[1])
    assert not np.array_equal(res[0][0], imgs[0])
    again = ndd.jitter(ndd.as_batch(imgs, layout="HWC"), nDegree=5, fill_value=1,
                       mask=ndd.as_batch(masks), rng=ndd.random.RNG(seed=43))
    assert not np.array_equal(_arrays(again)[0], res[0][0])
    ndd.random.set_seed(5)
    a = _arrays(ndd.jitter(ndd.as_batch(imgs, layout="HWC"), nDegree=3))
    ndd.random.set_seed(5)
    b = _arrays(ndd.jitter(ndd.as_batch(imgs, layout="HWC"), nDegree=3))
    for p, q in zip(a, b):
        np.testing.assert_array_equal(p, q)


# ---- water ----------------------------------------------------------------------------------

def _ref_water_nn(img, ax, ay, fx, fy, px, py, fill):
    """Per-pixel float64 loop (nn: the pixel containing the source point); returns the image
    and the pixels whose point is within 1e-4 of a pixel edge (float32 may round across)."""
    h, w = img.shape[:2]
    out = np.empty_like(img)
    edge = np.zeros((h, w), bool)
    for y in range(h):
        for x in range(w):
            wx, wy = ax * math.sin(fx * y + px), ay * math.cos(fy * x + py)
            sx, sy = x + wx, y + wy
            # near a whole number, float32 may round across (e.g. 10 sin(pi) ~ -9e-7)
            edge[y, x] = min(abs(wx - round(wx)), abs(wy - round(wy))) < 1e-4
            i, j = math.floor(sy), math.floor(sx)
            out[y, x] = img[i, j] if 0 <= i < h and 0 <= j < w else fill
    return out, edge


@pytest.mark.parametrize("kw", [dict(ax=10.0, ay=10.0, fx=2 * math.pi / 128,
                                     fy=2 * math.pi / 128, px=0.0, py=0.0),
                                dict(ax=3.3, ay=-2.2, fx=0.3, fy=0.21, px=0.4, py=1.1),
                                dict(ax=-6.0, ay=4.0, fx=0.05, fy=0.5, px=-2.0, py=0.3)])
def test_water_reference(img, kw):
    big = np.resize(img, (33, 40, 3))
    got = np.asarray(ndd.water(ndd.as_tensor(big, layout="HWC"), ampl_x=kw["ax"],
                               ampl_y=kw["ay"], freq_x=kw["fx"], freq_y=kw["fy"],
                               phase_x=kw["px"], phase_y=kw["py"], fill_value=3))
    ref, edge = _ref_water_nn(big, **kw, fill=3)
    assert edge.mean() < 0.15
    np.testing.assert_array_equal(got[~edge], ref[~edge])


def test_water_linear_blends_neighbours():
    # a horizontal ramp moved by a constant sub-pixel shift: linear gives the ramp at the
    # shifted position (sample_points' convention: value at s is the blend around s - 0.5)
    ramp = np.tile(np.arange(40, dtype=np.float32) * 2, (10, 1))[..., None]
    out = np.asarray(ndd.water(ndd.as_tensor(ramp, layout="HWC"), ampl_x=0.75, ampl_y=0.0,
                               freq_x=0.0, phase_x=math.pi / 2,
                               interp_type=ndd.types.INTERP_LINEAR))
    xs = np.arange(40) + 0.75 - 0.5
    # (rows 0 and 9 blend with the fill outside, like the columns at the right edge)
    np.testing.assert_allclose(out[1:-1, 1:-2, 0], np.tile(xs[1:-2] * 2, (8, 1)), atol=1e-5)


def test_water_mask_eager_equals_deferred(img):
    imgs = [img, np.resize(img, (20, 30, 3))]
    masks = [np.int32(0), np.int32(1)]
    res = []
    for mode in (ndd.EvalMode.eager, ndd.EvalMode.deferred):
        with mode:
            out = ndd.water(ndd.as_batch(imgs, layout="HWC"), mask=ndd.as_batch(masks),
                            ampl_x=2.5, freq_y=0.3)
            res.append(_arrays(out))
    for e, d in zip(*res):
        np.testing.assert_array_equal(e, d)
    np.testing.assert_array_equal(res[0][0], imgs[0])
    assert not np.array_equal(res[0][1], imgs[1])
    with pytest.raises(ValueError, match="HWC"):
        ndd.water(ndd.as_tensor(img[..., 0], layout="HW")).evaluate()
