"""Tensor and utility ops added for the op catalogue (issue 16, item 1) at the ndd API level:
the ``experimental.*`` aliases, ``batch_permutation``, ``io.file.read``, ``decoders.numpy``,
``decoders.inflate``, ``tensor_resize``, ``resize_crop_mirror`` -- against independent numpy
references and, under ``oracle``, against NVIDIA DALI 2.4's dynamic mode (CPU operators).
"""
import numpy as np
import pytest

import ndd


@pytest.fixture(scope="module")
def dyn():
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    return dalidyn


def _np(x):
    """ndd or DALI Batch / Tensor -> list of numpy arrays (or one array)."""
    if hasattr(x, "tensors") and hasattr(x, "batch_size"):
        return [np.asarray(x.tensors[i].cpu() if hasattr(x.tensors[i], "cpu") else x.tensors[i])
                for i in range(x.batch_size)]
    return np.asarray(x.cpu() if hasattr(x, "cpu") else x)


# ------------------------------------------------------------------ experimental.* aliases
def test_experimental_aliases_are_the_same_ops(photo_jpegs):
    enc = ndd.batch([np.frombuffer(j, np.uint8) for j in photo_jpegs[:3]])
    pairs = [
        (ndd.experimental.decoders.image(enc), ndd.decoders.image(enc)),
        (ndd.experimental.decoders.image(enc, output_type=ndd.types.GRAY),
         ndd.decoders.image(enc, output_type=ndd.types.GRAY)),
        (ndd.experimental.decoders.image_crop(enc, crop=(20, 30)),
         ndd.decoders.image_crop(enc, crop=(20, 30))),
        (ndd.experimental.decoders.image_slice(enc, rel_start=(0.1, 0.2), rel_end=(0.5, 0.9)),
         ndd.decoders.image_slice(enc, rel_start=(0.1, 0.2), rel_end=(0.5, 0.9))),
        (ndd.experimental.peek_image_shape(enc), ndd.peek_image_shape(enc)),
    ]
    img = ndd.decoders.image(enc)
    pairs.append((ndd.experimental.resize(img, size=(31, 47)), ndd.resize(img, size=(31, 47))))
    rng1, rng2 = ndd.random.RNG(seed=5), ndd.random.RNG(seed=5)
    pairs.append((ndd.experimental.decoders.image_random_crop(enc, rng=rng1),
                  ndd.decoders.image_random_crop(enc, rng=rng2)))
    for a, b in pairs:
        for x, y in zip(_np(a), _np(b)):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)


def test_experimental_namespace_lists_its_functions():
    assert {"resize", "peek_image_shape", "decoders"} <= set(ndd.experimental.__all__)
    assert ndd.experimental.decoders.__all__[:4] == ["image", "image_crop",
                                                      "image_random_crop", "image_slice"]
    assert ndd.experimental.resize.__module__ == "ndd.experimental"
    assert ndd.experimental.decoders.image.__module__ == "ndd.experimental.decoders"


@pytest.mark.oracle
def test_experimental_aliases_match_dali(dyn, photo_jpegs):
    encs = [np.frombuffer(j, np.uint8) for j in photo_jpegs[:3]]
    ours = ndd.experimental.decoders.image(ndd.batch(encs))
    theirs = dyn.experimental.decoders.image(dyn.batch(encs), device="cpu")
    for o, t in zip(_np(ours), _np(theirs)):
        np.testing.assert_array_equal(o, t)
    o = _np(ndd.experimental.decoders.image_crop(ndd.batch(encs), crop=(33, 21),
                                                 crop_pos_x=0.2))
    t = _np(dyn.experimental.decoders.image_crop(dyn.batch(encs), crop=(33, 21),
                                                 crop_pos_x=0.2, device="cpu"))
    for a, b in zip(o, t):
        np.testing.assert_array_equal(a, b)
    o = _np(ndd.experimental.peek_image_shape(ndd.batch(encs)))
    t = _np(dyn.experimental.peek_image_shape(dyn.batch(encs)))
    for a, b in zip(o, t):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    pix = _np(theirs)
    o = _np(ndd.experimental.resize(ndd.batch(pix, layout="HWC"), size=(45, 61)))
    # DALI's experimental.resize has only a GPU backend: its CPU ``resize`` is the reference
    t = _np(dyn.resize(dyn.batch(pix, layout="HWC"), size=(45, 61)))
    for a, b in zip(o, t):
        assert a.shape == b.shape
        assert np.abs(a.astype(int) - b.astype(int)).max() <= 1


# ------------------------------------------------------------------ batch_permutation
def _ints(b):
    return [int(np.asarray(t)) for t in b.tensors]


def test_batch_permutation_api():
    out = ndd.batch_permutation(batch_size=6, rng=ndd.random.RNG(seed=3))
    assert isinstance(out, ndd.Batch) and out.dtype == ndd.int32
    assert sorted(_ints(out)) == list(range(6))
    again = ndd.batch_permutation(batch_size=6, rng=ndd.random.RNG(seed=3))
    assert _ints(out) == _ints(again)           # reproducible with rng=
    with ndd.EvalMode.deferred:
        deferred = ndd.batch_permutation(batch_size=6, rng=ndd.random.RNG(seed=3))
    assert _ints(deferred) == _ints(out)
    ndd.random.set_seed(11)
    a = _ints(ndd.batch_permutation(batch_size=9, no_fixed_points=True))
    ndd.random.set_seed(11)
    b = _ints(ndd.batch_permutation(batch_size=9, no_fixed_points=True))
    assert a == b and all(v != i for i, v in enumerate(a))
    data = ndd.batch([np.full((2,), i, np.uint8) for i in range(6)])
    moved = ndd.permute_batch(data, indices=out)
    assert [int(np.asarray(t)[0]) for t in moved.tensors] == _ints(out)


def test_batch_permutation_errors():
    with pytest.raises(ValueError, match="`batch_size` must be specified"):
        ndd.batch_permutation()
    with pytest.raises(TypeError, match="seed"):
        ndd.batch_permutation(batch_size=3, seed=1)


@pytest.mark.oracle
def test_batch_permutation_like_dali(dyn):
    for kw in ({}, {"no_fixed_points": True}, {"allow_repetitions": True},
               {"allow_repetitions": True, "no_fixed_points": True}):
        o = ndd.batch_permutation(batch_size=7, **kw)
        t = dyn.batch_permutation(batch_size=7, **kw)
        ov, tv = _np(o), _np(t)
        assert [a.dtype for a in ov] == [b.dtype for b in tv]
        assert [a.shape for a in ov] == [b.shape for b in tv]
        for vals in (ov, tv):
            ints = [int(v) for v in vals]
            assert all(0 <= v < 7 for v in ints)
            if not kw.get("allow_repetitions"):
                assert sorted(ints) == list(range(7))
            if kw.get("no_fixed_points"):
                assert all(v != i for i, v in enumerate(ints))
    assert [int(v) for v in _np(ndd.batch_permutation(batch_size=1, no_fixed_points=True))] \
        == [int(v) for v in _np(dyn.batch_permutation(batch_size=1, no_fixed_points=True))]
    for mod in (ndd, dyn):
        with pytest.raises(ValueError, match="`batch_size` must be specified"):
            mod.batch_permutation()


# ------------------------------------------------------------------ io.file.read
def _path(p) -> np.ndarray:
    return np.frombuffer(str(p).encode("utf-8"), np.uint8)


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    paths = []
    for k, n in enumerate([1, 17, 4096, 70001]):
        p = tmp_path / f"f{k}.bin"
        p.write_bytes(rng.integers(0, 256, n, dtype=np.uint8).tobytes())
        paths.append(p)
    return paths


def test_file_read_api(files):
    out = ndd.io.file.read(ndd.batch([_path(p) for p in files]))
    assert out.dtype == ndd.uint8 and out.ndim == 1
    for o, p in zip(_np(out), files):
        assert o.tobytes() == p.read_bytes()
    one = ndd.io.file.read(ndd.tensor(_path(files[1])))
    assert isinstance(one, ndd.Tensor) and np.asarray(one).tobytes() == files[1].read_bytes()
    with ndd.EvalMode.deferred:
        d = ndd.io.file.read(ndd.batch([_path(p) for p in files]))
    assert [x.tobytes() for x in _np(d)] == [x.tobytes() for x in _np(out)]


def test_file_read_errors(files, tmp_path):
    with pytest.raises(RuntimeError, match=r"sample 1: cannot read file .*missing"):
        _np(ndd.io.file.read(ndd.batch([_path(files[0]), _path(tmp_path / "missing")])))
    with pytest.raises(TypeError, match="uint8"):
        ndd.io.file.read(ndd.batch([np.zeros(3, np.int32)]))
    with pytest.raises(ValueError, match="1-D"):
        ndd.io.file.read(ndd.batch([np.zeros((2, 3), np.uint8)]))


@pytest.mark.oracle
def test_file_read_matches_dali(dyn, files):
    encs = [_path(p) for p in files]
    o = _np(ndd.io.file.read(ndd.batch(encs)))
    t = _np(dyn.io.file.read(dyn.batch(encs)))
    for a, b in zip(o, t):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    with pytest.raises(RuntimeError):
        _np(dyn.io.file.read(dyn.batch([_path(files[0].parent / "missing")])))


# ------------------------------------------------------------------ decoders.numpy
def _npy(a) -> np.ndarray:
    import io
    b = io.BytesIO()
    np.save(b, a)
    return np.frombuffer(b.getvalue(), np.uint8)


def _dali_cpu_or_skip(fn):
    """Run a DALI call; skip where DALI cannot run it here: ``decoders.inflate`` has only a
    GPU backend, and DALI's first ``decoders.numpy`` call in a process may fail probing CUDA
    (retried once)."""
    for attempt in range(2):
        try:
            return fn()
        except RuntimeError as exc:
            text = str(exc) + str(exc.__cause__)
            if "CUDA" not in text and "gpu" not in text.lower():
                raise
            if attempt == 1:
                pytest.skip(f"DALI cannot run this operator here: {text[:80]}")


NPY_CASES = [       # (DALI 2.4's CPU decoder needs CUDA for Fortran order: skipped there)
    [np.arange(12, dtype=np.int16).reshape(3, 4), np.arange(20, dtype=np.int16).reshape(4, 5)],
    [np.arange(12, dtype=np.int16).reshape(3, 4), np.asfortranarray(
        np.arange(20, dtype=np.int16).reshape(4, 5))],
    [np.arange(6, dtype="<f8").reshape(1, 2, 3) / 7, np.zeros((0, 1, 2), "<f8")],
    [np.array([True, False]), np.array([False])],
    [np.arange(9, dtype=np.uint64), np.arange(2, dtype=np.uint64)],
]


@pytest.mark.parametrize("arrs", NPY_CASES,
                         ids=lambda c: c[0].dtype.str + ("F" if c[-1].flags.f_contiguous
                                                         and c[-1].ndim > 1 else ""))
def test_numpy_decode_api(arrs):
    out = ndd.decoders.numpy(ndd.batch([_npy(a) for a in arrs]))
    assert out.dtype == ndd.dtype(arrs[0].dtype.name)
    for o, a in zip(_np(out), arrs):
        np.testing.assert_array_equal(o, a)
    as_f = ndd.decoders.numpy(ndd.batch([_npy(a) for a in arrs]), dtype=ndd.float32)
    assert as_f.dtype == ndd.float32
    for o, a in zip(_np(as_f), arrs):
        np.testing.assert_array_equal(o, a.astype(np.float32))


def test_numpy_decode_casts_and_errors():
    vals = np.array([2.5, -0.5, 300.7, -3.2], np.float32)
    out = _np(ndd.decoders.numpy(ndd.batch([_npy(vals)]), dtype=ndd.uint8))[0]
    np.testing.assert_array_equal(out, [3, 0, 255, 0])      # round half away, saturate
    with pytest.raises(ValueError, match="same data type"):
        _np(ndd.decoders.numpy(ndd.batch([_npy(np.zeros(2, np.int32)),
                                          _npy(np.zeros(2, np.float32))])))
    with pytest.raises(ValueError, match="same number of dimensions"):
        _np(ndd.decoders.numpy(ndd.batch([_npy(np.zeros(2)), _npy(np.zeros((2, 2)))])))
    with pytest.raises(ValueError, match="sample 1: .*not a .npy file"):
        _np(ndd.decoders.numpy(ndd.batch([_npy(np.zeros(2)),
                                          np.frombuffer(b"junk bytes here", np.uint8)])))


def _dali_numpy(dyn, encs, **kw):
    """DALI 2.4's decoders.numpy on the CPU in a fresh evaluation context: its operator
    instances (cached per context) keep the dtype and ndim of their first batch and fail a
    later batch with others ("All samples in the dataset must have the same ...")."""
    with dyn.EvalContext():
        return _np(dyn.decoders.numpy(dyn.batch(encs), device="cpu", **kw))


@pytest.mark.oracle
@pytest.mark.parametrize("arrs", NPY_CASES,
                         ids=lambda c: c[0].dtype.str + ("F" if c[-1].flags.f_contiguous
                                                         and c[-1].ndim > 1 else ""))
def test_numpy_decode_matches_dali(dyn, arrs):
    encs = [_npy(a) for a in arrs]
    for dt in (arrs[0].dtype.name, "float32", "uint8"):
        t = _dali_cpu_or_skip(lambda: _dali_numpy(dyn, encs, dtype=getattr(dyn, dt)))
        o = _np(ndd.decoders.numpy(ndd.batch(encs), dtype=getattr(ndd, dt)))
        for a, b in zip(o, t):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a, b)


@pytest.mark.oracle
def test_numpy_decode_errors_like_dali(dyn):
    bad = [np.frombuffer(b"garbage data here", np.uint8), _npy(np.arange(100))[:200],
           _npy(np.zeros(3, np.complex64)), _npy(np.arange(3, dtype=">i4")),
           np.frombuffer(_npy(np.arange(3)).tobytes().replace(b"NUMPY\x01", b"NUMPY\x02", 1),
                         np.uint8)]
    for k, enc in enumerate(bad):
        with pytest.raises(RuntimeError):
            _dali_numpy(dyn, [enc])
        with pytest.raises(ValueError):
            _np(ndd.decoders.numpy(ndd.batch([enc])))
    with pytest.raises(RuntimeError) as info:
        _dali_numpy(dyn, [_npy(np.zeros(2)), _npy(np.zeros((2, 2)))])
    assert "same number of dimensions" in str(info.value) + str(info.value.__cause__)
    with pytest.raises(ValueError, match="same number of dimensions"):
        _np(ndd.decoders.numpy(ndd.batch([_npy(np.zeros(2)), _npy(np.zeros((2, 2)))])))


# ------------------------------------------------------------------ decoders.inflate
def _lz4(a: np.ndarray) -> np.ndarray:
    lz4_block = pytest.importorskip("lz4.block")
    return np.frombuffer(lz4_block.compress(a.tobytes(), store_size=False), np.uint8)


def test_inflate_api_single_and_chunked():
    rng = np.random.default_rng(3)
    imgs = [rng.integers(0, 4, size=(5 + i, 7, 3)).astype(np.uint8) for i in range(3)]
    out = ndd.decoders.inflate(ndd.batch([_lz4(a) for a in imgs]),
                               shape=ndd.batch([np.array(a.shape) for a in imgs]),
                               layout="HWC")
    assert out.dtype == ndd.uint8 and out.layout == "HWC"
    for o, a in zip(_np(out), imgs):
        np.testing.assert_array_equal(o, a)
    frames = rng.standard_normal((4, 6, 2)).astype(np.float32)
    parts = [_lz4(f) for f in frames]
    seq = ndd.decoders.inflate(ndd.batch([np.concatenate(parts)]), shape=[6, 2],
                               dtype=ndd.float32, layout="HW",
                               chunk_sizes=[len(p) for p in parts])
    assert seq.layout == "FHW" and seq.dtype == ndd.float32
    np.testing.assert_array_equal(_np(seq)[0], frames)
    seq2 = ndd.decoders.inflate(ndd.batch([np.concatenate(parts)]), shape=[6, 2],
                                dtype=ndd.float32, layout="HW", sequence_axis_name="S",
                                chunk_offsets=np.cumsum([0] + [len(p) for p in parts[:-1]]))
    assert seq2.layout == "SHW"
    np.testing.assert_array_equal(_np(seq2)[0], frames)


def test_inflate_errors():
    data = ndd.batch([_lz4(np.zeros(10, np.uint8))])
    with pytest.raises(TypeError, match="shape"):
        ndd.decoders.inflate(data)
    with pytest.raises(ValueError, match="Unknown inflate algorithm"):
        ndd.decoders.inflate(data, shape=[10], algorithm="zstd")
    with pytest.raises(ValueError, match="sample 0: the chunk inflates to 10 bytes"):
        _np(ndd.decoders.inflate(data, shape=[12]))
    with pytest.raises(ValueError, match="layout"):
        ndd.decoders.inflate(data, shape=[10], layout="HW")


@pytest.mark.oracle
def test_inflate_matches_dali(dyn):
    arr = np.arange(60, dtype=np.int16).reshape(3, 4, 5)
    enc = [_lz4(arr), _lz4(arr[::-1].copy())]
    t = _dali_cpu_or_skip(lambda: _np(dyn.decoders.inflate(dyn.batch(enc).gpu(), shape=[3, 4, 5],
                                                           dtype=dyn.int16).cpu()))
    o = _np(ndd.decoders.inflate(ndd.batch(enc), shape=[3, 4, 5], dtype=ndd.int16))
    for a, b in zip(o, t):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------ tensor_resize
def _tr_data():
    rng = np.random.default_rng(0)
    img = [rng.integers(0, 256, (37 + i, 53 - 2 * i, 3)).astype(np.uint8) for i in range(2)]
    vol = [rng.standard_normal((9 + i, 10, 11)).astype(np.float32) for i in range(2)]
    ramp = [np.arange(10, dtype=np.float32) ** 1.5]
    i16 = [rng.integers(-3000, 3000, (20, 30)).astype(np.int16)]
    u16 = [rng.integers(0, 60000, (17, 9)).astype(np.uint16)]
    return {"img": (img, "HWC"), "vol": (vol, "DHW"), "ramp": (ramp, ""), "i16": (i16, ""),
            "u16": (u16, "")}


TR_CASES = [
    ("img", dict(sizes=(20, 30), axes=(0, 1))), ("img", dict(scales=(0.5, 0.5),
                                                             axis_names="HW")),
    ("img", dict(sizes=(20, 30, 5))), ("img", dict(sizes=(20, 0), axes=(0, 1))),
    ("img", dict(sizes=(20, 30), axes=(0, 1), mode="not_larger")),
    ("img", dict(sizes=(70, 90), axes=(0, 1), dtype="float32")),
    ("img", dict(sizes=(20, 30), axes=(0, 1), antialias=False)),
    ("img", dict(sizes=(11, 12, 2))), ("img", dict(scales=(0.5, 0.5), axes=(-3, -2))),
    ("vol", dict(sizes=(5, 6, 7))), ("vol", dict(scales=(1.7, 0.6, 1.0))),
    ("vol", dict(sizes=(5,), axes=(1,))), ("vol", dict(sizes=(4, 8), axes=(1, 2),
                                                       interp_type="cubic")),
    ("vol", dict(sizes=(5, 6, 7), interp_type="lanczos3")),
    ("ramp", dict(sizes=(4,))), ("ramp", dict(sizes=(25,))),
    ("ramp", dict(scales=(0.33,), alignment=0.0)), ("ramp", dict(scales=(0.33,), alignment=1.0)),
    ("ramp", dict(sizes=(4,), interp_type="nn")), ("ramp", dict(sizes=(4.5,))),
    ("ramp", dict(sizes=(4.5,), subpixel_scale=False)),
    ("ramp", dict(sizes=(7,), roi_start=(0.8,), roi_end=(0.2,), roi_relative=True)),
    ("ramp", dict(sizes=(6,), interp_type="cubic")),
    ("i16", dict(sizes=(13, 41))), ("i16", dict(scales=(0.33, 0.33), size_rounding="ceil")),
    ("u16", dict(sizes=(30, 4), mode="stretch")),
]


def _dali_kwargs(dyn, kw):
    from nvidia.dali import types
    out = dict(kw)
    if "interp_type" in out:
        out["interp_type"] = getattr(types, "INTERP_" + out["interp_type"].upper())
    if "dtype" in out:
        out["dtype"] = getattr(dyn, out["dtype"])
    return out


def _close(o, t):
    """Resampled integers within 1, floats within 1e-4 relative (issue 16's tolerances)."""
    assert o.shape == t.shape and o.dtype == t.dtype
    if o.dtype.kind == "f":
        np.testing.assert_allclose(o, t, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(t).max())))
    else:
        assert np.abs(o.astype(np.int64) - t.astype(np.int64)).max() <= 1


def test_tensor_resize_api():
    data, layout = _tr_data()["img"]
    b = ndd.batch(data, layout=layout)
    out = ndd.tensor_resize(b, sizes=(20, 30), axes=(0, 1))
    assert out.layout == "HWC" and out.dtype == ndd.uint8
    assert [tuple(np.shape(x)) for x in _np(out)] == [(20, 30, 3)] * 2
    per = ndd.tensor_resize(b, sizes=ndd.batch([np.array([10, 11], np.float32),
                                                np.array([12, 13], np.float32)]), axes=(0, 1))
    assert [np.shape(x) for x in _np(per)] == [(10, 11, 3), (12, 13, 3)]
    with ndd.EvalMode.deferred:
        d = ndd.tensor_resize(b, scales=(0.5, 0.5), axes=(0, 1))
    e = ndd.tensor_resize(b, scales=(0.5, 0.5), axes=(0, 1))
    for x, y in zip(_np(d), _np(e)):
        np.testing.assert_array_equal(x, y)


def test_tensor_resize_errors():
    b = ndd.batch([np.zeros((5, 6), np.uint8)])
    with pytest.raises(ValueError, match="Need one of"):
        _np(ndd.tensor_resize(b))
    with pytest.raises(ValueError, match="Need one of"):
        ndd.tensor_resize(b, sizes=(2, 2), scales=(1, 1))
    with pytest.raises(ValueError, match="mutually exclusive"):
        ndd.tensor_resize(b, sizes=(2,), axes=(0,), axis_names="H")
    with pytest.raises(ValueError, match="original type or float"):
        ndd.tensor_resize(b, sizes=(2, 2), dtype=ndd.int16)
    with pytest.raises(TypeError, match="Unsupported type"):
        ndd.tensor_resize(ndd.batch([np.zeros((5, 6), np.int32)]), sizes=(2, 2))
    with pytest.raises(ValueError, match="expects either a single value or a list of 2"):
        _np(ndd.tensor_resize(b, sizes=(2, 2, 2)))
    with pytest.raises(ValueError, match="more than 3"):
        _np(ndd.tensor_resize(ndd.batch([np.zeros((5, 6, 7, 8), np.float32)]),
                              sizes=(3, 4, 5, 6)))


@pytest.mark.oracle
@pytest.mark.parametrize("name,kw", TR_CASES, ids=[f"{n}-{sorted(k)}" for n, k in TR_CASES])
def test_tensor_resize_matches_dali(dyn, name, kw):
    data, layout = _tr_data()[name]
    mk = (lambda m: m.batch(data, layout=layout)) if layout else (lambda m: m.batch(data))
    ours = dict(kw, dtype=getattr(ndd, kw["dtype"])) if "dtype" in kw else kw
    o = _np(ndd.tensor_resize(mk(ndd), **ours))
    t = _np(dyn.tensor_resize(mk(dyn), **_dali_kwargs(dyn, kw)))
    for a, b in zip(o, t):
        _close(a, b)


@pytest.mark.oracle
@pytest.mark.parametrize("kw", [{}, dict(sizes=(2, 2), scales=(1, 1)),
                                dict(sizes=(2, 2), dtype="int16"),
                                dict(scales=(0.5, 0.5), mode="not_smaller")])
def test_tensor_resize_errors_like_dali(dyn, kw):
    data = [np.zeros((5, 6), np.uint8)]
    with pytest.raises(RuntimeError):
        _np(dyn.tensor_resize(dyn.batch(data), **_dali_kwargs(dyn, kw)))
    ours = dict(kw, dtype=getattr(ndd, kw["dtype"])) if "dtype" in kw else kw
    with pytest.raises(ValueError):
        _np(ndd.tensor_resize(ndd.batch(data), **ours))
    for bad in (np.int32, np.int8, np.float64, np.float16):
        with pytest.raises(RuntimeError):
            _np(dyn.tensor_resize(dyn.batch([np.zeros((5, 6), bad)]), sizes=(2, 2)))
        with pytest.raises(TypeError):
            ndd.tensor_resize(ndd.batch([np.zeros((5, 6), bad)]), sizes=(2, 2))


# ------------------------------------------------------------------ resize_crop_mirror
RCM_CASES = [
    dict(resize_shorter=64, crop=(48, 40)), dict(resize_shorter=64, crop=(48, 40), mirror=1),
    dict(resize_shorter=64, crop=(48, 40), mirror=2),
    dict(size=(50, 70), crop=(31, 33), crop_pos_x=0.2, crop_pos_y=0.9),
    dict(size=(50, 70), mirror=1), dict(resize_x=37.5, resize_y=41, crop_h=20, crop_w=21),
    dict(size=(50, 70), crop=(60, 80)), dict(size=(50, 70), crop=(30, 40), mirror=3,
                                             dtype="float32"),
    dict(size=(50, 70), crop=(31, 33), crop_pos_x=0.3, rounding="truncate"),
    dict(resize_shorter=64, crop=(48, 40), interp_type="cubic"),
    dict(resize_longer=90, crop=(40, 41), interp_type="nn", mirror=1),
]


def _rcm_images():
    rng = np.random.default_rng(0)
    return [rng.integers(0, 256, (120 + 7 * i, 161 - 5 * i, 3)).astype(np.uint8)
            for i in range(3)]


def test_resize_crop_mirror_api():
    imgs = _rcm_images()
    b = ndd.batch(imgs, layout="HWC")
    out = ndd.resize_crop_mirror(b, resize_shorter=64, crop=(48, 40),
                                 mirror=ndd.batch([np.int32(0), np.int32(1), np.int32(2)]))
    ref = ndd.crop(ndd.resize(b, resize_shorter=64), crop=(48, 40))
    o, r = _np(out), _np(ref)
    for got, want in ((o[0], r[0]), (o[1], r[1][:, ::-1]), (o[2], r[2][::-1])):
        assert got.shape == want.shape
        assert np.abs(got.astype(int) - want.astype(int)).max() <= 1    # one resample of the crop
    assert out.layout == "HWC" and out.dtype == ndd.uint8
    with pytest.raises(ValueError, match="layout"):
        ndd.resize_crop_mirror(ndd.batch([np.zeros((4, 4, 3), np.uint8)], layout="WHC"),
                               size=(2, 2))


@pytest.mark.oracle
@pytest.mark.parametrize("kw", RCM_CASES, ids=lambda k: "-".join(sorted(k)))
def test_resize_crop_mirror_matches_dali(dyn, kw):
    imgs = _rcm_images()
    ours = dict(kw, dtype=getattr(ndd, kw["dtype"])) if "dtype" in kw else kw
    o = _np(ndd.resize_crop_mirror(ndd.batch(imgs, layout="HWC"), **ours))
    t = _np(dyn.resize_crop_mirror(dyn.batch(imgs, layout="HWC"), **_dali_kwargs(dyn, kw)))
    for a, b in zip(o, t):
        _close(a, b)


# ------------------------------------------------------------------ dump_image
def _dump_images():
    rng = np.random.default_rng(5)
    return [rng.integers(0, 256, (5, 7, 3)).astype(np.uint8),
            rng.integers(0, 256, (3, 2, 3)).astype(np.uint8)]


def test_dump_image_writes_and_passes_through(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    imgs = _dump_images()
    out = ndd.dump_image(ndd.batch(imgs, layout="HWC"), suffix="s")
    for o, a in zip(_np(out), imgs):
        np.testing.assert_array_equal(o, a)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0-s-0.ppm", "1-s-0.ppm"]
    text = (tmp_path / "1-s-0.ppm").read_text().split()
    assert text[:4] == ["P3", "2", "3", "255"]
    assert [int(v) for v in text[4:]] == imgs[1].ravel().tolist()
    with pytest.raises(ValueError, match="CHW not supported"):
        ndd.dump_image(ndd.batch(imgs, layout="HWC"), input_layout="CHW")
    with pytest.raises(ValueError, match="three dimensions"):
        ndd.dump_image(ndd.batch([np.zeros((2, 2), np.uint8)]))


@pytest.mark.oracle
def test_dump_image_files_match_dali(dyn, tmp_path, monkeypatch):
    imgs = _dump_images()
    gray = [np.arange(6, dtype=np.uint8).reshape(2, 3, 1)]
    for name, mod in (("dali", dyn), ("ndd", ndd)):
        (tmp_path / name).mkdir()
        monkeypatch.chdir(tmp_path / name)
        _np(mod.dump_image(mod.batch(imgs, layout="HWC"), suffix="x"))
        _np(mod.dump_image(mod.batch(gray, layout="HWC")))
    files = sorted(p.name for p in (tmp_path / "dali").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "ndd").iterdir())
    for f in files:
        assert (tmp_path / "ndd" / f).read_bytes() == (tmp_path / "dali" / f).read_bytes()


@pytest.mark.oracle
@pytest.mark.parametrize("dt", [np.int16, np.uint16, np.float32])
def test_resize_crop_mirror_dtypes_and_chw_match_dali(dyn, dt):
    rng = np.random.default_rng(0)
    imgs = [rng.integers(0, 200, (40 + 3 * i, 50, 3)).astype(dt) for i in range(2)]
    kw = dict(size=(30, 35), crop=(20, 21), mirror=1)
    o = _np(ndd.resize_crop_mirror(ndd.batch(imgs, layout="HWC"), **kw))
    t = _np(dyn.resize_crop_mirror(dyn.batch(imgs, layout="HWC"), **kw))
    for a, b in zip(o, t):
        _close(a, b)
    # CHW: DALI 2.4's mirror=1 flips both H and W there (docs/semantics.md), so no mirror
    chw = [np.ascontiguousarray(x.transpose(2, 0, 1)) for x in imgs]
    kw.pop("mirror")
    o = _np(ndd.resize_crop_mirror(ndd.batch(chw, layout="CHW"), **kw))
    t = _np(dyn.resize_crop_mirror(dyn.batch(chw, layout="CHW"), **kw))
    for a, b in zip(o, t):
        _close(a, b)
    flipped = _np(ndd.resize_crop_mirror(ndd.batch(chw, layout="CHW"), mirror=1, **kw))
    for f, a in zip(flipped, o):
        _close(f, np.ascontiguousarray(a[:, :, ::-1]))


@pytest.mark.oracle
def test_resize_crop_mirror_errors_like_dali(dyn):
    imgs = [np.zeros((10, 12, 3), np.uint8)]
    for mod, err in ((dyn, RuntimeError), (ndd, ValueError)):
        with pytest.raises(err):
            _np(mod.resize_crop_mirror(mod.batch(imgs, layout="HWC"), size=(5, 6),
                                       resize_shorter=4))
    for bad in (np.int32, np.int8):
        data = [np.zeros((10, 12, 3), bad)]
        with pytest.raises(RuntimeError):
            _np(dyn.resize_crop_mirror(dyn.batch(data, layout="HWC"), size=(5, 6)))
        with pytest.raises(TypeError, match="Unsupported type"):
            ndd.resize_crop_mirror(ndd.batch(data, layout="HWC"), size=(5, 6))
