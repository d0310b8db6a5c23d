"""Tests of the uint8 linear/triangular fast paths of runtime/kernels/cpu/resize.py::resample
(runtime/kernels/cpu/resize_uint8.py, resize_frac.py, resize_edges.py).

The fast path (torch's antialiased bilinear on integer windows, edge lines recomputed with
DALI's taps) must stay within 1 of the float32 reference path and of DALI 2.4 (oracle).
"""
import numpy as np
import pytest
import torch

from runtime.kernels.cpu import resize as R
from runtime.kernels.cpu import resize_uint8
from runtime.kernels.cpu.resize import resample, resize, separable
from runtime.kernels.cpu.resize_filters import make_filter
from runtime.kernels.cpu.resize_taps import axis_taps
from runtime.kernels.params.resize_geometry import resize_output_shape

torch.set_num_threads(1)


def _photos():
    data = pytest.importorskip("skimage.data")
    return [data.astronaut(), data.chelsea(), data.coffee()]


def _reference(img, p, kind="linear", aa=True):
    """The float32 separable path (independent of torch.interpolate)."""
    return separable(img, p.out_h, p.out_w, p, kind, kind, aa, np.dtype(np.uint8))


def _windows(h, w, rng, n):
    out = []
    for _ in range(n):
        ch, cw = int(rng.integers(1, h + 1)), int(rng.integers(1, w + 1))
        y, x = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
        if rng.random() < 0.3:
            y = 0
        if rng.random() < 0.3:
            x = w - cw
        out.append(((y, x), (y + ch, x + cw)))
    return out


@pytest.mark.parametrize("kind, aa", [("linear", True), ("triangular", True),
                                      ("linear", False)])
def test_fast_path_within_one_of_reference(kind, aa):
    rng = np.random.default_rng(0)
    for img in _photos():
        h, w = img.shape[:2]
        cases = [dict(size=(int(rng.integers(1, 300)), int(rng.integers(1, 300))),
                      roi_start=s, roi_end=e) for s, e in _windows(h, w, rng, 12)]
        cases += [dict(resize_shorter=256), dict(size=(224, 224)), dict(size=(600, 500))]
        for kw in cases:
            p = resize_output_shape((h, w), **kw)
            got = resample(img, p, interp_type=kind, antialias=aa)
            ref = _reference(img, p, kind, aa)
            assert got.shape == ref.shape == (p.out_h, p.out_w, 3) and got.dtype == np.uint8
            assert np.abs(got.astype(int) - ref).max() <= 1, kw


@pytest.mark.parametrize("shape", [(1, 9, 3), (9, 1, 3), (2, 2, 3), (3, 517, 3), (1, 1, 3),
                                   (5, 7, 1), (5, 7, 4)])
@pytest.mark.parametrize("size", [(1, 1), (4, 4), (224, 224), (2, 300)])
def test_odd_sizes(shape, size):
    img = np.random.default_rng(1).integers(0, 256, shape, dtype=np.uint8)
    for kw in (dict(size=size), dict(size=size, roi_start=(0, 0), roi_end=(1, 1))):
        p = resize_output_shape(shape[:2], **kw)
        got = resample(img, p)
        assert np.abs(got.astype(int) - _reference(img, p)).max() <= 1


def test_deterministic_no_alias_and_readonly_input():
    img = _photos()[0][:300, :400].copy()
    img.setflags(write=False)
    before = img.copy()
    p = resize_output_shape(img.shape[:2], size=(224, 224), roi_start=(0, 17),
                            roi_end=(250, 301))
    a, b = resample(img, p), resample(img, p)
    assert np.array_equal(a, b) and a.flags.c_contiguous and a.flags.writeable
    # a scale-1 integer crop must not return a view of the input
    q = resize_output_shape(img.shape[:2], size=(300, 400))
    c = resample(img, q)
    assert np.array_equal(c, img) and not np.shares_memory(c, img)
    assert np.array_equal(img, before)


def test_hw_layout_matches_hwc():
    img = _photos()[1][..., 0].copy()
    p = resize_output_shape(img.shape, size=(100, 130), roi_start=(5, 9), roi_end=(200, 300))
    assert np.array_equal(resample(img, p, layout="HW"), resample(img[..., None], p)[..., 0])


@pytest.mark.oracle
def test_oracle_integer_windows():
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    rng = np.random.default_rng(2)
    img = _photos()[2]
    h, w = img.shape[:2]
    t = dalidyn.as_tensor(img, layout="HWC")
    for (s, e) in _windows(h, w, rng, 6):
        kw = dict(size=(224, 224), roi_start=s, roi_end=e)
        ours = resample(img, resize_output_shape((h, w), **kw))
        ref = np.asarray(dalidyn.resize(t, **kw))
        assert ours.shape == ref.shape
        assert np.abs(ours.astype(int) - ref).max() <= 1, kw


def test_tent_filter_matches_closed_form():
    # DALI's triangular table [0, 1, 0], linearly interpolated: max(0, 1 - |p - 1|)
    flt = make_filter("linear", True, 300.0, 224)
    p = np.linspace(0, 3.5, 10001, dtype=np.float32)
    got = flt(p.copy())
    # exact: min(p, 2 - p) is exact in float32 (2 - p by Sterbenz for 1 <= p <= 2), and so is
    # 1 - |p - 1| in float64 for a float32 p
    np.testing.assert_array_equal(got, np.maximum(0, 1 - np.abs(p.astype(np.float64) - 1)))


def test_threads_give_the_same_results():
    from concurrent.futures import ThreadPoolExecutor
    img = _photos()[0]
    rng = np.random.default_rng(5)
    params = [resize_output_shape(img.shape[:2], size=(224, 224), roi_start=s, roi_end=e)
              for s, e in _windows(*img.shape[:2], rng, 16)]
    seq = [resample(img, p) for p in params]
    with ThreadPoolExecutor(2) as ex:
        par = list(ex.map(lambda p: resample(img, p), params))
    assert all(np.array_equal(a, b) for a, b in zip(seq, par))


@pytest.mark.oracle
def test_oracle_fractional_windows():
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    img = _photos()[1]
    t = dalidyn.as_tensor(img, layout="HWC")
    for kw in (dict(resize_shorter=256), dict(size=(150.5, 201.3))):
        ours = resample(img, resize_output_shape(img.shape[:2], **kw))
        ref = np.asarray(dalidyn.resize(t, **kw))
        assert ours.shape == ref.shape
        assert np.abs(ours.astype(int) - ref).max() <= 1, kw


# --- portrait resize_shorter (W by torch's tent, fractional H by its matrix) ----------------

def _portraits():
    return [np.ascontiguousarray(p.transpose(1, 0, 2)) for p in _photos()[1:]]


@pytest.mark.parametrize("kw", [dict(resize_shorter=256), dict(resize_shorter=150),
                                dict(resize_shorter=97), dict(resize_shorter=700),
                                dict(resize_x=224, resize_y=311.4)])
def test_mixed_path_within_one_of_reference(kw):
    mixed = 0
    for img in _portraits():
        p = resize_output_shape(img.shape[:2], **kw)
        mixed += float(p.x0).is_integer() and not float(p.y0).is_integer()   # the mixed case
        got = resample(img, p)
        ref = _reference(img, p)
        assert got.shape == ref.shape == (p.out_h, p.out_w, 3) and got.dtype == np.uint8
        assert np.abs(got.astype(int) - ref).max() <= 1, kw
        # and against an independent float64 computation from the taps (exact weights)
        iy, wy = axis_taps(img.shape[0], p.out_h, p.y0, p.y1, "linear", True, True)
        ix, wx = axis_taps(img.shape[1], p.out_w, p.x0, p.x1, "linear", True, False)
        f = img.astype(np.float64)
        rows = np.einsum("ok,okwc->owc", wy.astype(np.float64), f[iy])
        exact = np.einsum("pk,opkc->opc", wx.astype(np.float64), rows[:, ix])
        assert np.abs(got - np.floor(exact + 0.5)).max() <= 1, kw
    assert mixed


def _assert_reads_only_support(img, p, seed):
    """Resample ``img``; then again with every pixel outside the lines the (DALI, linear)
    taps read replaced by noise: the result must not change.  Returns the first result."""
    h, w = img.shape[:2]
    base = resample(img, p)
    iy, _ = axis_taps(h, p.out_h, p.y0, p.y1, "linear", True, True)
    ix, _ = axis_taps(w, p.out_w, p.x0, p.x1, "linear", True, False)
    noisy = np.random.default_rng(seed).integers(0, 256, img.shape, dtype=np.uint8)
    y0, y1, x0, x1 = iy.min(), iy.max() + 1, ix.min(), ix.max() + 1
    noisy[y0:y1, x0:x1] = img[y0:y1, x0:x1]
    np.testing.assert_array_equal(resample(noisy, p), base)
    return base


def test_mixed_path_reads_only_its_support():
    # the fused decode+resize fills only the rows/columns the filters read; anything else
    # (stale canvas pixels) must not change the result, bit for bit
    img = _portraits()[0]
    h, w = img.shape[:2]
    for kw in (dict(resize_shorter=256), dict(resize_x=200, resize_y=150.7)):
        p = resize_output_shape((h, w), **kw)
        base = _assert_reads_only_support(img, p, seed=3)
        assert np.array_equal(resample(img, p), base)         # deterministic


def test_rrc_path_reads_only_its_support():
    img = _photos()[0]
    h, w = img.shape[:2]
    rng = np.random.default_rng(4)
    for s, e in _windows(h, w, rng, 10):
        p = resize_output_shape((h, w), size=(224, 224), roi_start=s, roi_end=e)
        _assert_reads_only_support(img, p, seed=5)


def test_edge_lines_follow_dali_edge_replication():
    # a window touching the image border: DALI replicates the edge pixel for taps outside;
    # a hand-computable case: constant rows/columns except a bright last column
    img = np.zeros((40, 50, 3), np.uint8)
    img[:, -1] = 200
    p = resize_output_shape(img.shape[:2], size=(20, 25))      # 2x downscale, tent radius 2
    got = resample(img, p).astype(int)
    # last output column: centre at 49.0 (source), taps 47.5..50.5 -> pixels 47, 48, 49, 50
    # (50 replicates 49) with tent weights 0.25, 0.75, 0.75, 0.25 (sum 2): (0.75+0.25)*200/2
    assert np.all(got[:, -1] == 100)
    assert np.all(got[:, :-2] == 0)


@pytest.mark.oracle
def test_oracle_portrait_resize_shorter():
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    for img in _portraits():
        t = dalidyn.as_tensor(img, layout="HWC")
        for kw in (dict(resize_shorter=256), dict(resize_shorter=123)):
            ours = resample(img, resize_output_shape(img.shape[:2], **kw))
            ref = np.asarray(dalidyn.resize(t, **kw))
            assert ours.shape == ref.shape
            assert np.abs(ours.astype(int) - ref).max() <= 1, kw


# --- fractional W window (landscape resize_shorter, subpixel_scale): resize_frac.frac_uint8 --

from runtime.kernels.cpu import resize_frac as RF  # noqa: E402


def _exact(img, p, kind="linear", aa=True):
    """float64 separable sum straight from DALI's taps (independent of both paths)."""
    iy, wy = axis_taps(img.shape[0], p.out_h, p.y0, p.y1, kind, aa, True)
    ix, wx = axis_taps(img.shape[1], p.out_w, p.x0, p.x1, kind, aa, False)
    f = img.astype(np.float64)
    rows = np.einsum("ok,okwc->owc", wy.astype(np.float64), f[iy])
    return np.floor(np.einsum("pk,opkc->opc", wx.astype(np.float64), rows[:, ix]) + 0.5)


_FRAC_CASES = [dict(resize_shorter=256), dict(resize_shorter=150), dict(resize_shorter=97),
               dict(resize_shorter=700), dict(size=(150.5, 201.3)),
               dict(size=(120, 170), roi_start=(10.5, 3.25), roi_end=(300.75, 400.5)),
               dict(size=(100, 90), roi_start=(250, 400.5), roi_end=(20, 30)),      # flips
               dict(size=(64, 333), roi_start=(0, 420.2), roi_end=(300, 10.9)),
               dict(resize_x=211.7, resize_y=97)]


@pytest.mark.parametrize("kind, aa", [("linear", True), ("triangular", True),
                                      ("linear", False)])
def test_frac_path_within_one_of_reference(kind, aa, monkeypatch):
    calls = []
    real = R.frac_uint8

    def spy(*args):
        res = real(*args)
        calls.append(res is not None)
        return res
    monkeypatch.setattr(R, "frac_uint8", spy)
    for img in _photos():            # landscape (astronaut is square: H and W both exact)
        for kw in _FRAC_CASES:
            p = resize_output_shape(img.shape[:2], **kw)
            got = resample(img, p, interp_type=kind, antialias=aa)
            ref = _reference(img, p, kind, aa)
            assert got.shape == ref.shape == (p.out_h, p.out_w, 3) and got.dtype == np.uint8
            assert np.abs(got.astype(int) - ref).max() <= 1, kw
            assert np.abs(got - _exact(img, p, kind, aa)).max() <= 1, kw
    assert sum(calls) >= 10          # the fractional path really ran


def test_frac_path_input_strides_and_determinism():
    img = _photos()[1]
    p = resize_output_shape(img.shape[:2], resize_shorter=201)
    base = RF.frac_uint8(img, p.out_h, p.out_w, p, "linear", "linear", True)
    assert base is not None and base.flags.c_contiguous and base.flags.writeable
    assert np.array_equal(base, resample(img, p))
    # a strided view, a negatively strided view and a read-only input: same results
    wide = np.zeros((img.shape[0], img.shape[1] * 2, 3), np.uint8)
    wide[:, ::2] = img
    view = wide[:, ::2]
    assert np.array_equal(RF.frac_uint8(view, p.out_h, p.out_w, p, "linear", "linear", True),
                          base)
    flipped = img[::-1, ::-1]                              # negative strides
    q = resize_output_shape(img.shape[:2], size=(150.5, 201.3))
    assert np.array_equal(resample(flipped, q), resample(np.ascontiguousarray(flipped), q))
    ro = img.copy()
    ro.setflags(write=False)
    assert np.array_equal(resample(ro, p), base)


def test_frac_path_reads_only_its_support():
    img = _photos()[2]
    h, w = img.shape[:2]
    for kw in (dict(resize_shorter=256), dict(size=(150.5, 201.3)),
               dict(size=(90, 120), roi_start=(20.5, 30.25), roi_end=(200.5, 330.75))):
        p = resize_output_shape((h, w), **kw)
        _assert_reads_only_support(img, p, seed=6)


def test_frac_path_threads_give_the_same_results():
    from concurrent.futures import ThreadPoolExecutor
    img = _photos()[1]
    params = [resize_output_shape(img.shape[:2], resize_shorter=s) for s in range(180, 260, 5)]
    seq = [resample(img, p) for p in params]
    with ThreadPoolExecutor(2) as ex:
        par = list(ex.map(lambda p: resample(img, p), params))
    assert all(np.array_equal(a, b) for a, b in zip(seq, par))


def test_frac_path_declines_other_filters_and_channels():
    img = _photos()[1]
    p = resize_output_shape(img.shape[:2], resize_shorter=200)
    assert RF.frac_uint8(img, p.out_h, p.out_w, p, "cubic", "linear", True) is None
    assert RF.frac_uint8(img[..., :1], p.out_h, p.out_w, p, "linear", "linear", True) is None
    four = np.concatenate([img, img[..., :1]], axis=2)
    assert RF.frac_uint8(four, p.out_h, p.out_w, p, "linear", "linear", True) is None
    # those still resize (float32 path), within 1 of the independent sum
    got = resample(four, p)
    assert np.abs(got[..., :3] - _exact(img, p)).max() <= 1


def test_pixel_transposes_exact():
    rng = np.random.default_rng(7)
    for h, w in ((1, 1), (1, 5), (4, 1), (3, 7), (16, 9)):
        px = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        flat = np.concatenate([px.reshape(-1), [rng.integers(0, 256)]]).astype(np.uint8)
        quads = RF.pixel_transpose(flat, h, w).view(np.uint8).reshape(w, h, 4)
        assert np.array_equal(quads[..., :3], px.transpose(1, 0, 2))
        back = RF.unpack_transpose(np.ascontiguousarray(quads))
        assert back.shape == (h, w, 3) and np.array_equal(back, px)


def test_rows_pass_rounds_half_up_hand_computed():
    # two source rows [10, 20] and [11, 250]; weights (0.25, 0.75) and (0.5, 0.5)
    bags = RF.Bags(np.array([[0, 1], [0, 1]]), np.array([[0.25, 0.75], [0.5, 0.5]],
                                                        np.float32), 2)
    table = RF.row_table(np.array([[10, 20], [11, 250]], np.uint8))
    out = np.empty((2, 2), np.uint8)
    RF.rows_pass_u8(table, bags, out)
    # 0.25*10+0.75*11 = 10.75 -> 11; 0.25*20+0.75*250 = 192.5 -> 193 (half up);
    # 0.5*10+0.5*11 = 10.5 -> 11; 0.5*20+0.5*250 = 135
    assert out.tolist() == [[11, 193], [11, 135]]


@pytest.mark.oracle
def test_oracle_frac_windows():
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    for img in (_photos()[2], np.ascontiguousarray(_photos()[1][:250])):
        t = dalidyn.as_tensor(img, layout="HWC")
        for kw in (dict(resize_shorter=256), dict(resize_shorter=113),
                   dict(size=(150.5, 201.3)),
                   dict(size=(100, 90), roi_start=(250, 380.5), roi_end=(20, 30)),
                   dict(resize_x=211.7, resize_y=97, antialias=False)):
            ours = resize(img, **kw)
            ref = np.asarray(dalidyn.resize(t, **kw))
            assert ours.shape == ref.shape
            assert np.abs(ours.astype(int) - ref).max() <= 1, kw


@pytest.mark.parametrize("shape", [(1, 9, 3), (9, 1, 3), (2, 2, 3), (3, 517, 3), (1, 1, 3),
                                   (517, 3, 3)])
def test_frac_path_odd_sizes(shape):
    img = np.random.default_rng(8).integers(0, 256, shape, dtype=np.uint8)
    for kw in (dict(size=(2.5, 3.7)), dict(size=(1, 1.5)), dict(resize_shorter=7.3),
               dict(size=(300.2, 2.5)),
               dict(size=(4, 5), roi_start=(0.5, 0.25), roi_end=(0.75, 0.9)),
               dict(size=(3, 3), roi_start=(1, 1), roi_end=(0.2, 0.3))):
        p = resize_output_shape(shape[:2], **kw)
        got = resample(img, p)
        ref = _reference(img, p)
        assert got.shape == ref.shape and np.abs(got.astype(int) - ref).max() <= 1, kw


def _exact_f64(img, p, kind="linear", aa=True):
    """Independent float64 separable resample with DALI's edge-clamped taps, rounded."""
    h, w = img.shape[:2]
    iy, wy = axis_taps(h, p.out_h, p.y0, p.y1, kind, aa, True)
    ix, wx = axis_taps(w, p.out_w, p.x0, p.x1, kind, aa, False)
    f = img.astype(np.float64)
    rows = np.einsum("ok,okwc->owc", wy.astype(np.float64), f[iy])
    return np.floor(np.einsum("pk,opkc->opc", wx.astype(np.float64), rows[:, ix]) + 0.5)


@pytest.mark.parametrize("chans", [3, 1, 4])
def test_rrc_edge_fix_ran_and_exact(chans, monkeypatch):
    # random integer windows (many touching the image border) -> 224x224 and up/down
    # scales: the compiled edge fix must run and stay within 1 of float64 and of the
    # float32 path
    import runtime.kernels.cpu.resize_edges as E
    calls = []
    real = E.fix_edges
    monkeypatch.setattr(resize_uint8, "fix_edges", lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(7)
    img = rng.integers(0, 256, (97, 131, chans), dtype=np.uint8)
    img[:, :5] = 255        # bright borders make a wrong edge replication visible
    img[-4:] = 0
    for s, e in _windows(97, 131, rng, 25):
        for size in ((224, 224), (31, 40), (60, 300)):
            p = resize_output_shape((97, 131), size=size, roi_start=s, roi_end=e)
            n = len(calls)
            got = resample(img, p)
            assert got.shape == (p.out_h, p.out_w, chans) and got.dtype == np.uint8
            assert np.abs(got.astype(int) - _exact_f64(img, p)).max() <= 1, (s, e, size)
            assert np.abs(got.astype(int) - _reference(img, p)).max() <= 1, (s, e, size)
            if (p.out_h, p.out_w) != (e[0] - s[0], e[1] - s[1]):
                assert len(calls) > n
    assert calls


def test_edge_fix_equals_float32_formula():
    # the kernel's arithmetic written out with numpy float32 scalars, sequentially: the inner
    # sum along the axis that is not at its edge, then that edge axis' taps, + 0.5, truncated
    # (rows first, then columns, which redo the corners); interior pixels untouched
    from runtime.kernels.cpu.resize_edges import fix_edges
    from runtime.kernels.cpu.resize_taps import tent_plan
    f32 = np.float32
    rng = np.random.default_rng(3)
    src = rng.integers(0, 256, (40, 50, 2), dtype=np.uint8)
    ylo, py = tent_plan(40, 17, 5, 37, "linear", True)
    xlo, px = tent_plan(50, 21, 0, 50, "linear", True)
    out = np.zeros((17, 21, 2), np.uint8)
    fix_edges(src, ylo, xlo, py, px, out)
    ky, kx = py.w.shape[1], px.w.shape[1]

    def pixel(i, j, c, col_pass):
        acc = f32(0)
        for a in range(kx if col_pass else ky):
            s = f32(0)
            for b in range(ky if col_pass else kx):
                t, q = (b, a) if col_pass else (a, b)
                s = f32(s + f32(py.w[i, t] if col_pass else px.w[j, q])
                        * f32(src[ylo + py.rel[i, t], xlo + px.rel[j, q], c]))
            acc = f32(acc + f32(px.w[j, a] if col_pass else py.w[i, a]) * s)
        return int(f32(acc + f32(0.5)))

    edge_rows = [i for i in range(17) if not py.head <= i < py.tail]
    edge_cols = [j for j in range(21) if not px.head <= j < px.tail]
    assert edge_rows and edge_cols
    for i in range(17):
        for j in range(21):
            for c in range(2):
                if j in edge_cols:
                    assert out[i, j, c] == pixel(i, j, c, True), (i, j, c)
                elif i in edge_rows:
                    assert out[i, j, c] == pixel(i, j, c, False), (i, j, c)
                else:
                    assert out[i, j, c] == 0, (i, j, c)


def test_tent_plan_matches_axis_taps():
    # the cached, window-relative plan must give the same taps and weights as the absolute
    # per-axis table (windows at both borders and inside) and list every edge output
    from runtime.kernels.cpu.resize_taps import tent_plan
    for in_len, out_len, a, b in [(100, 37, 0, 100), (100, 37, 13, 71), (100, 224, 90, 100),
                                  (400, 224, 0, 250), (50, 7, 1, 49), (300, 224, 77, 300)]:
        lo, plan = tent_plan(in_len, out_len, a, b, "linear", True)
        idx, w = axis_taps(in_len, out_len, a, b, "linear", True, False)
        np.testing.assert_array_equal(plan.rel + lo, idx)
        # same weights up to float32 rounding of the sample positions (see _rel_taps): each
        # table rounds i * scale + origin twice, at < 512 (absolute, <= 2 x 1.5e-5) and < 256
        # (relative, <= 2 x 7.6e-6); the tent's slope is <= 1 -> 4.5e-5; measured max 1.5e-5
        np.testing.assert_allclose(plan.w, w, atol=5e-5)
        # edge outputs: every output with a tap outside [a, b) is listed
        outside = np.flatnonzero(((idx < a) | (idx >= b)).any(1) & (w > 0).any(1))
        listed = set(range(plan.head)) | set(range(plan.tail, out_len))
        assert set(outside.tolist()) <= listed
        assert lo + plan.n > idx.max() and lo <= idx.min()


def test_resample_part_equals_whole_image():
    # a region (the resample's source box, as the fused ROI decode cuts it) resampled in place
    # gives the bits of resampling the whole image; boxes that miss a line read give None
    from runtime.kernels.cpu.fused_roi import source_region
    from runtime.kernels.cpu.resize import resample_part
    from runtime.kernels.params.resize_geometry import crop_resize_params
    from runtime.kernels.cpu.resize_taps import tent_plan
    rng = np.random.default_rng(5)
    ran = 0
    for _ in range(300):
        H, W = int(rng.integers(2, 300)), int(rng.integers(2, 300))
        chans = int(rng.choice([1, 3, 4]))
        img = rng.integers(0, 256, (H, W, chans), dtype=np.uint8)
        h, w = int(rng.integers(1, H + 1)), int(rng.integers(1, W + 1))
        y, x = int(rng.integers(0, H - h + 1)), int(rng.integers(0, W - w + 1))
        p = crop_resize_params((H, W), (int(rng.integers(1, 260)), int(rng.integers(1, 260))),
                               y, x, y + h, x + w)
        kind, aa = str(rng.choice(["linear", "triangular"])), bool(rng.random() < 0.8)
        y0, x0, y1, x1 = source_region((H, W), p, 1)
        got = resample_part(img[y0:y1, x0:x1].copy(), (y0, x0), (H, W), p, interp_type=kind,
                            antialias=aa)
        if got is None:
            continue
        ran += 1
        np.testing.assert_array_equal(got, resample(img, p, interp_type=kind, antialias=aa))
        # without the first line the computation reads: None
        ylo, _ = tent_plan(H, p.out_h, int(p.y0), int(p.y1), kind, aa)
        first = min(int(p.y0), ylo)
        if (p.out_h, p.out_w) != (h, w) and first + 1 < H:
            assert resample_part(img[first + 1:].copy(), (first + 1, 0), (H, W), p,
                                 interp_type=kind, antialias=aa) is None
    assert ran > 200
    # other filters / dtypes are not this path's
    p = crop_resize_params((50, 60), (20, 20), 0, 0, 50, 60)
    img = rng.integers(0, 256, (50, 60, 3), dtype=np.uint8)
    assert resample_part(img, (0, 0), (50, 60), p, interp_type="cubic") is None
    assert resample_part(img, (0, 0), (50, 60), p, dtype=np.float32) is None
