"""ndd vs NVIDIA DALI 2.4 dynamic mode for the single-purpose color ops (``brightness``,
``contrast``, ``hue``, ``saturation``) and ``color_twist``; plus eager == deferred for each.

``brightness`` / ``contrast`` must match exactly (values, dtype, shape, layout). ``hue``,
``saturation`` and ``color_twist`` share ``hsv``'s 3 x 3 matrix, which agrees with DALI's to
float32 rounding only (docs/semantics.md): uint8 results match exactly on these images, float32
ones within a few float32 ulps of the values' scale.
"""
import zlib

import numpy as np
import pytest

import ndd

_RNG = np.random.default_rng(2024)
_U8 = _RNG.integers(0, 256, size=(24, 31, 3), dtype=np.uint8)
_I16 = (_U8.astype(np.int16) - 128) * 200
_F01 = _RNG.random((24, 31, 3)).astype(np.float32)


@pytest.fixture(scope="module")
def dyn():
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    return dalidyn


def _arrays(x):
    if isinstance(x, ndd.Batch):
        return [np.asarray(t) for t in x.tensors]
    return [np.asarray(x)]


def _ref_arrays(x):
    if hasattr(x, "tensors") and hasattr(x, "batch_size"):
        return [np.asarray(x.tensors[i].cpu()) for i in range(x.batch_size)]
    return [np.asarray(x.cpu())]


def _call(mod, name, data, kw, dtype=None):
    k = dict(kw)
    if dtype:
        k["dtype"] = getattr(mod, dtype)
    for key, v in list(k.items()):
        if isinstance(v, list):                     # per-sample argument
            k[key] = mod.batch([np.float32(s) for s in v])
    if isinstance(data, list):
        return getattr(mod, name)(mod.batch(data, layout="HWC"), **k)
    return getattr(mod, name)(mod.tensor(data, layout="HWC"), **k)


def _compare(dyn, name, data, kw, dtype=None, atol=0.0):
    ours, ref = _call(ndd, name, data, kw, dtype), _call(dyn, name, data, kw, dtype)
    a, b = _arrays(ours), _ref_arrays(ref)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        if atol:
            np.testing.assert_allclose(x, y, rtol=0, atol=atol)
        else:
            np.testing.assert_array_equal(x, y)
    assert (ours.layout or None) == (ref.layout or None)


_SRC = {"u8": _U8, "i16": _I16, "f32": _F01}


# ---------------------------------------------------------------- brightness, contrast
@pytest.mark.oracle
@pytest.mark.parametrize("src", ["u8", "i16", "f32"])
@pytest.mark.parametrize("dtype", [None, "float32", "uint8", "int16"])
@pytest.mark.parametrize("kw", [dict(brightness=1.3), dict(brightness=0.7, brightness_shift=0.05),
                                dict(brightness_shift=-0.1)])
def test_brightness_matches_dali_exactly(dyn, src, dtype, kw):
    _compare(dyn, "brightness", _SRC[src], kw, dtype)


@pytest.mark.oracle
@pytest.mark.parametrize("src", ["u8", "i16", "f32"])
@pytest.mark.parametrize("dtype", [None, "float32", "uint8"])
@pytest.mark.parametrize("kw", [dict(contrast=0.6), dict(contrast=1.4, contrast_center=50.0),
                                dict(contrast=0.0), dict(contrast_center=0.2)])
def test_contrast_matches_dali_exactly(dyn, src, dtype, kw):
    _compare(dyn, "contrast", _SRC[src], kw, dtype)


@pytest.mark.oracle
def test_brightness_contrast_per_sample_arguments_match_dali(dyn):
    data = [_U8, np.ascontiguousarray(_U8[:7, :5])]
    _compare(dyn, "brightness", data, dict(brightness=[1.5, 0.5], brightness_shift=[0.0, 0.1]))
    _compare(dyn, "contrast", data, dict(contrast=[0.2, 1.7], contrast_center=[10.0, 200.0]))


# ---------------------------------------------------------------- hue, saturation, color_twist
@pytest.mark.oracle
@pytest.mark.parametrize("hue", [30.0, -75.0, 200.0, 0.0])
def test_hue_matches_dali(dyn, hue):
    _compare(dyn, "hue", _U8, dict(hue=hue))
    _compare(dyn, "hue", _F01, dict(hue=hue), atol=1e-6)
    _compare(dyn, "hue", _U8, dict(hue=hue), "float32", atol=1e-4)


@pytest.mark.oracle
@pytest.mark.parametrize("sat", [0.0, 0.5, 1.0, 1.6])
def test_saturation_matches_dali(dyn, sat):
    _compare(dyn, "saturation", _U8, dict(saturation=sat))
    _compare(dyn, "saturation", _F01, dict(saturation=sat), atol=1e-6)
    _compare(dyn, "saturation", _U8, dict(saturation=sat), "float32", atol=1e-4)


@pytest.mark.oracle
def test_image_type_is_accepted_and_unused_as_in_dali(dyn):
    from nvidia.dali import types
    for it in ("BGR", "YCbCr"):
        ref = dyn.hue(dyn.tensor(_U8, layout="HWC"), hue=40.0,
                      image_type=getattr(types.DALIImageType, it))
        ours = ndd.hue(ndd.tensor(_U8, layout="HWC"), hue=40.0, image_type=it)
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(ref.cpu()))
        np.testing.assert_array_equal(np.asarray(ours),
                                      np.asarray(ndd.hue(ndd.tensor(_U8, layout="HWC"), hue=40.0)))


_TWIST = [dict(hue=30.0, saturation=0.7, brightness=1.2, contrast=0.8),
          dict(contrast=0.5), dict(brightness=0.6), dict(hue=-100.0, saturation=1.4,
                                                         brightness=0.9, contrast=1.3),
          dict(contrast=0.0), dict(saturation=0.0, brightness=1.1)]


@pytest.mark.oracle
@pytest.mark.parametrize("kw", _TWIST)
def test_color_twist_matches_dali(dyn, kw):
    _compare(dyn, "color_twist", _U8, kw)
    _compare(dyn, "color_twist", _F01, kw, atol=1e-6)
    _compare(dyn, "color_twist", _U8, kw, "float32", atol=1e-4)


@pytest.mark.oracle
def test_color_twist_int16_and_per_sample_match_dali(dyn):
    # int16: DALI centers contrast at 128 for every integer type; within one unit (the matrix
    # rounding, at values up to 25600)
    for kw in (dict(contrast=0.5, brightness=1.1), dict(contrast=0.0), dict(hue=20.0)):
        _compare(dyn, "color_twist", _I16, kw, atol=1)
    _compare(dyn, "color_twist", _F01, dict(contrast=0.5), "uint8")
    _compare(dyn, "color_twist", _F01, dict(contrast=0.0), "int16")
    data = [_U8, np.ascontiguousarray(_U8[:7, :5])]
    _compare(dyn, "color_twist", data, dict(hue=[10.0, -50.0], saturation=[0.5, 1.2],
                                            brightness=[1.0, 0.8], contrast=[0.7, 1.0]))
    _compare(dyn, "hue", data, dict(hue=[10.0, -50.0]))
    _compare(dyn, "saturation", data, dict(saturation=[0.5, 1.2]))


# ---------------------------------------------------------------- eager == deferred
@pytest.mark.parametrize("name,kw", [
    ("brightness", dict(brightness=1.3, brightness_shift=0.02)),
    ("contrast", dict(contrast=0.4, contrast_center=90.0)),
    ("hue", dict(hue=33.0)), ("saturation", dict(saturation=0.4)),
    ("color_twist", dict(hue=-20.0, saturation=1.2, brightness=0.9, contrast=1.1))])
def test_eager_equals_deferred(name, kw):
    data = [_U8, np.ascontiguousarray(_U8[:5, :6])]
    res = []
    for mode in (ndd.EvalMode.eager, ndd.EvalMode.deferred, ndd.EvalMode.sync_cpu):
        with mode:
            res.append(_arrays(getattr(ndd, name)(ndd.batch(data, layout="HWC"), **kw)))
    for other in res[1:]:
        for a, b in zip(res[0], other):
            assert a.dtype == b.dtype == np.uint8
            np.testing.assert_array_equal(a, b)
    assert not all(np.array_equal(a, b) for a, b in zip(res[0], data))     # it did something


# ---------------------------------------------------------------- color_space_conversion
_SPACES = {"RGB": 3, "BGR": 3, "GRAY": 1, "YCbCr": 3}
_PAIRS = [(a, b) for a in _SPACES for b in _SPACES if a != b]


@pytest.mark.oracle
@pytest.mark.parametrize("src,dst", _PAIRS)
def test_color_space_conversion_matches_dali_exactly(dyn, src, dst):
    from nvidia.dali import types
    rng = np.random.default_rng(zlib.crc32(repr((src, dst)).encode()))
    x = rng.integers(0, 256, size=(300, 400, _SPACES[src]), dtype=np.uint8)
    x[0, :256] = np.arange(256)[:, None]                # every grey level
    ours = ndd.color_space_conversion(ndd.tensor(x, layout="HWC"), image_type=src,
                                      output_type=dst)
    ref = dyn.color_space_conversion(dyn.tensor(x, layout="HWC"),
                                     image_type=getattr(types.DALIImageType, src),
                                     output_type=getattr(types.DALIImageType, dst))
    a, b = np.asarray(ours), np.asarray(ref.cpu())
    assert a.dtype == b.dtype == np.uint8 and a.shape == b.shape
    np.testing.assert_array_equal(a, b)
    assert ours.layout == ref.layout == "HWC"


@pytest.mark.oracle
def test_color_space_conversion_sequences_and_batches_match_dali(dyn):
    from nvidia.dali import types
    seq = np.ascontiguousarray(np.stack([_U8, _U8[::-1]]))
    ours = ndd.color_space_conversion(ndd.tensor(seq, layout="FHWC"), image_type="RGB",
                                      output_type="YCbCr")
    ref = dyn.color_space_conversion(dyn.tensor(seq, layout="FHWC"),
                                     image_type=types.DALIImageType.RGB,
                                     output_type=types.DALIImageType.YCbCr)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(ref.cpu()))
    assert ours.layout == ref.layout == "FHWC"
    data = [_U8, np.ascontiguousarray(_U8[:5, :7])]
    o = ndd.color_space_conversion(ndd.batch(data, layout="HWC"),
                                   image_type=ndd.types.DALIImageType.BGR, output_type="GRAY")
    r = dyn.color_space_conversion(dyn.batch(data, layout="HWC"),
                                   image_type=types.DALIImageType.BGR,
                                   output_type=types.DALIImageType.GRAY)
    for x, y in zip(_arrays(o), _ref_arrays(r)):
        np.testing.assert_array_equal(x, y)


def test_color_space_conversion_errors():
    x = ndd.tensor(_U8, layout="HWC")
    with pytest.raises(ValueError, match="conversion not supported"):
        ndd.color_space_conversion(x, image_type="RGB", output_type="RGB")
    with pytest.raises(ValueError, match="only uint8"):
        ndd.color_space_conversion(ndd.tensor(_F01, layout="HWC"), image_type="RGB",
                                   output_type="GRAY")
    with pytest.raises(ValueError, match="Expected 1. Got 3"):
        np.asarray(ndd.color_space_conversion(x, image_type="GRAY", output_type="RGB"))
    with pytest.raises(TypeError):
        ndd.color_space_conversion(x, image_type="RGB")       # output_type is required


def test_color_space_conversion_eager_equals_deferred():
    data = [_U8, np.ascontiguousarray(_U8[:5, :6])]
    res = []
    for mode in (ndd.EvalMode.eager, ndd.EvalMode.deferred, ndd.EvalMode.sync_cpu):
        with mode:
            res.append(_arrays(ndd.color_space_conversion(ndd.batch(data, layout="HWC"),
                                                          image_type="RGB",
                                                          output_type="YCbCr")))
    for other in res[1:]:
        for a, b in zip(res[0], other):
            np.testing.assert_array_equal(a, b)
