"""ndd vs NVIDIA DALI 2.4 dynamic mode, at the ndd API level, on real photos and small arrays.

Results must be exact (decoding and float arithmetic included), resampled uint8 within 1;
dtypes of operator results must match DALI's promotion.
"""
import numpy as np
import pytest

import ndd

pytestmark = pytest.mark.oracle


@pytest.fixture(scope="module")
def dyn():
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    return dalidyn


def _np_dali(x):
    if hasattr(x, "tensors") and hasattr(x, "batch_size"):
        return [np.asarray(x.tensors[i].cpu()) for i in range(x.batch_size)]
    return np.asarray(x.cpu())


def _np_ndd(x):
    if isinstance(x, ndd.Batch):
        return [np.asarray(t) for t in x.tensors[:]]
    return np.asarray(x)


ARRS = {
    "u8": np.array([250, 10, 0, 128], np.uint8),
    "i8": np.array([-128, 5, 127, -3], np.int8),
    "i32": np.array([-991, 7, 30, -4], np.int32),
    "f32": np.array([0.5, -2.25, 3.0, 7.5], np.float32),
    "i16": np.array([300, -300, 2, 9], np.int16),
}

CASES = [
    ("u8", "add", 10), ("u8", "add", "u8"), ("u8", "mul", "u8"), ("u8", "neg", None),
    ("i8", "add", 1), ("u8", "truediv", 3), ("i32", "floordiv", 30), ("i32", "mod", 30),
    ("i32", "floordiv", "i32"), ("u8", "sub", "i8"), ("u8", "mul", 1.5), ("i16", "add", "u8"),
    ("f32", "add", "i32"), ("u8", "lt", 100), ("f32", "ge", "i32"), ("i32", "truediv", "i32"),
    ("i16", "pow", 2), ("u8", "add", -1),
]

_OPS = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "truediv": lambda a, b: a / b, "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
    "lt": lambda a, b: a < b, "ge": lambda a, b: a >= b, "pow": lambda a, b: a ** b,
    "neg": lambda a, b: -a,
}


@pytest.mark.parametrize("left,op,right", CASES, ids=[f"{l}-{o}-{r}" for l, o, r in CASES])
def test_operator_promotion_and_values(dyn, left, op, right):
    a = ARRS[left]
    b = ARRS[right] if isinstance(right, str) else right
    if op in ("floordiv", "mod", "truediv") and isinstance(b, np.ndarray) and (b == 0).any():
        pytest.skip("division by zero")
    ours = _OPS[op](ndd.tensor(a), ndd.tensor(b) if isinstance(b, np.ndarray) else b)
    theirs = _OPS[op](dyn.tensor(a), dyn.tensor(b) if isinstance(b, np.ndarray) else b)
    o, t = _np_ndd(ours), _np_dali(theirs)
    assert o.dtype == t.dtype, f"{left} {op} {right}: ndd {o.dtype} vs DALI {t.dtype}"
    # exact, floats included: the same IEEE float32 operations (measured max difference 0)
    np.testing.assert_array_equal(o, t)


@pytest.mark.parametrize("fn", ["sqrt", "exp", "floor", "abs", "sin"])
@pytest.mark.parametrize("src", ["u8", "i16", "f32"])
def test_math_functions(dyn, fn, src):
    a = np.abs(ARRS[src]) if fn == "sqrt" else ARRS[src]
    if fn == "exp":
        a = (a % 7).astype(a.dtype)
    o = _np_ndd(getattr(ndd.math, fn)(ndd.tensor(a)))
    t = _np_dali(getattr(dyn.math, fn)(dyn.tensor(a)))
    assert o.dtype == t.dtype
    # exact: both call the C library's float32 functions (measured max difference 0)
    np.testing.assert_array_equal(o, t)


def test_clamp(dyn):
    a = ARRS["u8"]
    o = _np_ndd(ndd.math.clamp(ndd.tensor(a), 50, 200))
    t = _np_dali(dyn.math.clamp(dyn.tensor(a), 50, 200))
    assert o.dtype == t.dtype
    np.testing.assert_array_equal(o, t)


# ------------------------------------------------------------------ image ops on photos
@pytest.fixture(scope="module")
def decoded(dyn, photo_jpegs):
    enc_np = [np.frombuffer(j, np.uint8) for j in photo_jpegs]
    ours = ndd.decoders.image(ndd.batch(enc_np))
    theirs = dyn.decoders.image(dyn.batch(enc_np), device="cpu")
    return ours, theirs


def test_decode_matches(decoded):
    ours, theirs = decoded
    assert ours.layout == "HWC" and ours.dtype is ndd.uint8
    for o, t in zip(_np_ndd(ours), _np_dali(theirs)):
        assert o.shape == t.shape
        # exact: both decode with nvImageCodec's libjpeg-turbo plug-in; measured max difference 0
        np.testing.assert_array_equal(o, t)


def _same_input(decoded, dyn):
    """Feed both libraries identical pixels (DALI's decode), so later ops are compared alone."""
    _, theirs = decoded
    pix = _np_dali(theirs)
    return ndd.batch(pix, layout="HWC"), dyn.batch(pix, layout="HWC"), pix


@pytest.mark.parametrize("kwargs", [
    {"size": [64, 80]}, {"resize_shorter": 50}, {"resize_x": 37.5, "resize_y": 41},
    {"size": [40, 40], "interp_type": "cubic"}, {"size": [150, 170], "interp_type": "nn"},
], ids=["size", "shorter", "frac", "cubic", "nn-up"])
def test_resize(dyn, decoded, kwargs):
    from nvidia.dali import types
    ob, tb, _ = _same_input(decoded, dyn)
    dk = dict(kwargs)
    if "interp_type" in dk:
        dk["interp_type"] = {"cubic": types.INTERP_CUBIC, "nn": types.INTERP_NN}[dk["interp_type"]]
    for o, t in zip(_np_ndd(ndd.resize(ob, **kwargs)), _np_dali(dyn.resize(tb, **dk))):
        assert o.shape == t.shape
        # within 1: uint8 linear takes torch's antialiased bilinear (within 1 by design, see
        # runtime/kernels/cpu/resize.py), float32 sums round near .5 either way; measured max 1
        assert np.abs(o.astype(int) - t.astype(int)).max() <= 1


@pytest.mark.parametrize("kwargs", [
    {"crop": [50, 60]}, {"crop": [33, 47], "crop_pos_x": 0.25, "crop_pos_y": 0.8},
    {"crop_h": 20, "crop_w": 90, "crop_pos_x": 1.0, "crop_pos_y": 0.0},
])
def test_crop(dyn, decoded, kwargs):
    ob, tb, _ = _same_input(decoded, dyn)
    for o, t in zip(_np_ndd(ndd.crop(ob, **kwargs)), _np_dali(dyn.crop(tb, **kwargs))):
        np.testing.assert_array_equal(o, t)


@pytest.mark.parametrize("kwargs", [
    {"crop": [64, 64], "mean": [123.7, 116.3, 103.5], "std": [58.4, 57.1, 57.4], "mirror": 1},
    {"mean": [128.0], "std": [64.0], "output_layout": "HWC"},
    {"crop": [32, 48], "crop_pos_x": 0.1, "mean": [10.0, 20.0, 30.0], "std": [2.0, 3.0, 4.0],
     "scale": 0.5, "shift": 1.0},
])
def test_crop_mirror_normalize(dyn, decoded, kwargs):
    ob, tb, _ = _same_input(decoded, dyn)
    ours = ndd.crop_mirror_normalize(ob, **kwargs)
    theirs = dyn.crop_mirror_normalize(tb, **kwargs)
    assert ours.layout == kwargs.get("output_layout", "CHW")
    for o, t in zip(_np_ndd(ours), _np_dali(theirs)):
        assert o.dtype == t.dtype == np.float32 and o.shape == t.shape
        # exact: DALI's float32 (x - base) * inv is reproduced (measured max difference 0)
        np.testing.assert_array_equal(o, t)


def test_cmn_uint8_output(dyn, decoded):
    from nvidia.dali import types
    ob, tb, _ = _same_input(decoded, dyn)
    ours = ndd.crop_mirror_normalize(ob, mean=[100.0], std=[0.5], dtype=ndd.uint8,
                                     output_layout="HWC")
    theirs = dyn.crop_mirror_normalize(tb, mean=[100.0], std=[0.5], dtype=types.UINT8,
                                       output_layout="HWC")
    for o, t in zip(_np_ndd(ours), _np_dali(theirs)):
        np.testing.assert_array_equal(o, t)


@pytest.mark.parametrize("h,v", [(1, 0), (0, 1), (1, 1), (0, 0)])
def test_flip(dyn, decoded, h, v):
    ob, tb, _ = _same_input(decoded, dyn)
    for o, t in zip(_np_ndd(ndd.flip(ob, horizontal=h, vertical=v)),
                    _np_dali(dyn.flip(tb, horizontal=h, vertical=v))):
        np.testing.assert_array_equal(o, t)


@pytest.mark.parametrize("src,dst", [("f32", "uint8"), ("f32", "int8"), ("i32", "uint8"),
                                     ("i16", "int8"), ("u8", "float32"), ("f32", "int32")])
def test_cast(dyn, src, dst):
    from nvidia.dali import types
    a = ARRS[src] * (np.float32(80.3) if src == "f32" else 1)
    a = a.astype(ARRS[src].dtype)
    dd = {"uint8": types.UINT8, "int8": types.INT8, "float32": types.FLOAT,
          "int32": types.INT32}[dst]
    o = _np_ndd(ndd.cast(ndd.tensor(a), dtype=dst))
    t = _np_dali(dyn.cast(dyn.tensor(a), dtype=dd))
    assert o.dtype == t.dtype
    np.testing.assert_array_equal(o, t)


@pytest.mark.parametrize("src", ["float32", "float64"])
@pytest.mark.parametrize("dst", ["uint8", "int8", "uint16", "int16", "int32", "uint32"])
def test_cast_float_batch_compiled_path(dyn, src, dst):
    # samples large enough for the compiled loop (runtime/kernels/cpu/cast_jit.py): exact
    # halves, their float neighbours, values beyond every bound, infinities
    from nvidia.dali import types
    rng = np.random.default_rng(7)
    halves = (rng.integers(-70000, 70000, 6000) + 0.5).astype(src)
    parts = [halves, np.nextafter(halves, np.inf), np.nextafter(halves, -np.inf),
             (rng.standard_normal(6000) * 3e9).astype(src),
             np.array([np.inf, -np.inf, 2**31, 2**32, -2**31 - 1.0, 0.49999997], src)]
    batch = [np.concatenate(parts)[rng.permutation(24006)].reshape(-1, 3)
             for _ in range(3)]
    dd = {"uint8": types.UINT8, "int8": types.INT8, "uint16": types.UINT16,
          "int16": types.INT16, "int32": types.INT32, "uint32": types.UINT32}[dst]
    o = _np_ndd(ndd.cast(ndd.batch(batch), dtype=dst))
    t = _np_dali(dyn.cast(dyn.batch(batch), dtype=dd))
    for a, b in zip(o, t):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_pipeline_on_reader_batch(dyn, image_folder):
    """reader -> decode -> resize -> cmn, both libraries on the same encoded batch."""
    reader = ndd.readers.File(file_root=str(image_folder))
    enc, _ = next(iter(reader.next_epoch(batch_size=5)))
    enc_np = _np_ndd(enc)
    ours = ndd.crop_mirror_normalize(ndd.resize(ndd.decoders.image(enc), size=[48, 48]),
                                     mean=[128.0], std=[32.0])
    theirs = dyn.crop_mirror_normalize(dyn.resize(dyn.decoders.image(dyn.batch(enc_np),
                                                                     device="cpu"),
                                                  size=[48, 48]), mean=[128.0], std=[32.0])
    for o, t in zip(_np_ndd(ours), _np_dali(theirs)):
        assert o.shape == t.shape == (3, 48, 48)
        # decoding is exact (test_decode_matches) and resampling within 1 (test_resize); then
        # (x - 128) * (1 / 32) is exact in float32, so 1 / 32 exactly (measured max 1 / 32)
        assert np.abs(o - t).max() <= 1 / 32


def test_dali_enum_arguments_give_dalis_results(dyn):
    """DALI-style code passes ``nvidia.dali.types`` enums; ndd takes them as its own."""
    import nvidia.dali.types as types
    img = np.random.default_rng(3).integers(0, 256, (20, 30, 3), dtype=np.uint8)
    pairs = [
        lambda L: L.cast(L.batch([img]), dtype=types.FLOAT),
        lambda L: L.resize(L.batch([img], layout="HWC"), size=[7, 9],
                           interp_type=types.INTERP_CUBIC),
        lambda L: L.crop_mirror_normalize(L.batch([img], layout="HWC"), dtype=types.FLOAT16,
                                          mean=[10.0, 20.0, 30.0]),
    ]
    for make in pairs:
        want, got = _np_dali(make(dyn)), _np_ndd(make(ndd))
        for w, g in zip(want, got):
            assert w.dtype == g.dtype and w.shape == g.shape
            # exact: cast, cubic resize of this image and float16 cmn agree bit for bit with
            # DALI (measured max difference 0)
            np.testing.assert_array_equal(g, w)
    assert ndd.tensor([1, 2], dtype=types.UINT16).dtype == ndd.uint16


def test_sequences_match_dali(dyn):
    """resize / crop / flip of FHWC sequences, against DALI's CPU operators."""
    rng = np.random.default_rng(4)
    seqs = [rng.integers(0, 256, (2, 30 + 4 * i, 26, 3), dtype=np.uint8) for i in range(2)]
    # resize within 1 (uint8 linear, see test_resize; measured max 1), crop and flip move
    # pixels only: exact
    calls = [(lambda L, b: L.resize(b, size=[11, 17]), 1),
             (lambda L, b: L.crop(b, crop=(9, 7), crop_pos_x=0.3), 0),
             (lambda L, b: L.flip(b, horizontal=1, vertical=1), 0)]
    for call, within in calls:
        want = _np_dali(call(dyn, dyn.batch(seqs, layout="FHWC")))
        got = _np_ndd(call(ndd, ndd.batch(seqs, layout="FHWC")))
        for w, g in zip(want, got):
            assert w.shape == g.shape and w.dtype == g.dtype
            assert np.abs(w.astype(int) - g.astype(int)).max() <= within
