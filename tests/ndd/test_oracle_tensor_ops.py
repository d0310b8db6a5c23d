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
