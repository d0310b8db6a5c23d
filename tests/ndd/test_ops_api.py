"""Op front end: signatures, argument validation, per-sample Batch arguments, Tensor vs Batch
results, enum/string/dtype argument forms. Values are checked against numpy."""
import inspect

import numpy as np
import pytest

import ndd


@pytest.fixture
def img():
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, (10, 12, 3), dtype=np.uint8)


def test_signature_and_docstring():
    sig = inspect.signature(ndd.resize)
    assert "size" in sig.parameters and "interp_type" in sig.parameters
    assert sig.parameters["size"].kind is inspect.Parameter.KEYWORD_ONLY
    doc = ndd.crop.__doc__
    assert "Parameters" in doc and "crop_pos_x" in doc and "Raises" in doc


def test_unknown_argument_lists_valid_ones(img):
    with pytest.raises(TypeError) as ei:
        ndd.resize(ndd.tensor(img), sizee=3)
    msg = str(ei.value)
    assert "sizee" in msg and "resize_x" in msg and "interp_type" in msg


def test_missing_required_argument(img):
    with pytest.raises(TypeError, match="dtype"):
        ndd.cast(ndd.tensor(img))


def test_too_many_inputs(img):
    with pytest.raises(TypeError, match="input"):
        ndd.flip(ndd.tensor(img), ndd.tensor(img))


@pytest.mark.parametrize("kwargs,name,value", [
    ({"interp_type": "cubicc"}, "interp_type", "cubicc"),
    ({"mode": "bogus"}, "mode", "bogus"),
    ({"size": "abc"}, "size", "abc"),
])
def test_bad_value_names_argument_and_value(img, kwargs, name, value):
    with pytest.raises((TypeError, ValueError)) as ei:
        ndd.resize(ndd.tensor(img, layout="HWC"), **kwargs)
    assert name in str(ei.value) and value in str(ei.value)


def test_bad_crop_length_and_flip_value(img):
    with pytest.raises((TypeError, ValueError), match="crop"):
        ndd.crop(ndd.tensor(img), crop=[1, 2, 3])
    with pytest.raises((TypeError, ValueError), match="horizontal"):
        ndd.flip(ndd.tensor(img), horizontal="x")


def test_enum_string_dtype_forms_agree(img):
    t = ndd.tensor(img, layout="HWC")
    outs = [ndd.resize(t, size=[5, 7], interp_type=v)
            for v in (ndd.types.INTERP_NN, "nn", ndd.types.DALIInterpType.INTERP_NN)]
    for o in outs[1:]:
        np.testing.assert_array_equal(np.asarray(o), np.asarray(outs[0]))
    casts = [ndd.cast(t, dtype=d) for d in (ndd.float32, "float32", np.float32,
                                            ndd.types.FLOAT)]
    for c in casts:
        assert c.dtype is ndd.float32
        np.testing.assert_array_equal(np.asarray(c), img.astype(np.float32))


def test_tensor_in_tensor_out_batch_in_batch_out(img):
    t = ndd.flip(ndd.tensor(img, layout="HWC"), horizontal=1)
    assert isinstance(t, ndd.Tensor)
    np.testing.assert_array_equal(np.asarray(t), img[:, ::-1])
    # DALI's flip defaults to horizontal=1, so vertical-only needs horizontal=0
    b = ndd.flip(ndd.batch([img, img[:5]], layout="HWC"), vertical=1, horizontal=0)
    assert isinstance(b, ndd.Batch) and b.batch_size == 2
    np.testing.assert_array_equal(np.asarray(b.tensors[1]), img[:5][::-1])
    # numpy input is accepted like a Tensor
    n = ndd.flip(img, horizontal=1)
    np.testing.assert_array_equal(np.asarray(n), img[:, ::-1])


def test_per_sample_batch_argument(img):
    b = ndd.batch([img, img[:6, :8]], layout="HWC")
    flags = ndd.batch([np.int32(0), np.int32(1)])
    out = ndd.flip(b, horizontal=flags)
    np.testing.assert_array_equal(np.asarray(out.tensors[0]), img)
    np.testing.assert_array_equal(np.asarray(out.tensors[1]), img[:6, :8][:, ::-1])
    r = ndd.resize(b, resize_x=ndd.batch([np.float32(3), np.float32(5)]), resize_y=4)
    assert r.shape == [(4, 3, 3), (4, 5, 3)]


def test_list_argument_is_one_value_for_all_samples(img):
    b = ndd.batch([img, img[:6, :8]], layout="HWC")
    c = ndd.crop(b, crop=[4, 2], crop_pos_x=0.0, crop_pos_y=0.0)
    assert c.shape == [(4, 2, 3), (4, 2, 3)]
    np.testing.assert_array_equal(np.asarray(c.tensors[1]), img[:4, :2])


def test_batch_size_mismatch_error(img):
    b = ndd.batch([img] * 3, layout="HWC")
    with pytest.raises(ValueError, match="batch size") as ei:
        ndd.resize(b, resize_x=ndd.batch([np.float32(2)] * 2))
    assert "3" in str(ei.value) and "2" in str(ei.value)
    with pytest.raises(ValueError, match="batch size"):
        ndd.flip(b, horizontal=ndd.batch([np.int32(1)] * 2))
    with pytest.raises(ValueError, match="batch size"):
        ndd.random.uniform(b, batch_size=2)


def test_non_tensor_argument_rejects_batch(img):
    b = ndd.batch([img] * 2, layout="HWC")
    with pytest.raises(TypeError, match="antialias"):
        ndd.resize(b, size=[4, 4], antialias=ndd.batch([np.bool_(True)] * 2))


def test_bad_input_type(img):
    with pytest.raises(TypeError, match="input"):
        ndd.flip(object())


def test_value_error_at_run_names_op_and_argument(img):
    with ndd.EvalMode.sync_cpu:
        with pytest.raises(ValueError) as ei:
            ndd.crop_mirror_normalize(ndd.tensor(img, layout="HWC"), std=[0, 1, 1])
    assert "crop_mirror_normalize" in str(ei.value) and "std" in str(ei.value)


def test_geometry_values_hand_checked(img):
    t = ndd.tensor(img, layout="HWC")
    c = ndd.crop(t, crop=[4, 6], crop_pos_x=1.0, crop_pos_y=0.0)
    np.testing.assert_array_equal(np.asarray(c), img[:4, 6:12])
    tr = ndd.transpose(t, perm=[2, 0, 1])
    assert tr.layout == "CHW"
    np.testing.assert_array_equal(np.asarray(tr), img.transpose(2, 0, 1))
    rs = ndd.reshape(t, shape=[10, 36])
    np.testing.assert_array_equal(np.asarray(rs), img.reshape(10, 36))
    cp = ndd.copy(t)
    np.testing.assert_array_equal(np.asarray(cp), img)
    nn = ndd.resize(t, size=[20, 24], interp_type="nn")
    np.testing.assert_array_equal(np.asarray(nn), img.repeat(2, 0).repeat(2, 1))


def test_peek_image_shape(photo_jpegs, photos):
    enc = ndd.batch([np.frombuffer(j, np.uint8) for j in photo_jpegs])
    shp = ndd.peek_image_shape(enc)
    for i, p in enumerate(photos):
        np.testing.assert_array_equal(np.asarray(shp.tensors[i]), p.shape)
    # the shape of what decoders.image(output_type=...) returns
    for kind in ("GRAY", ndd.types.GRAY, "BGR"):
        shp = ndd.peek_image_shape(enc, image_type=kind)
        dec = ndd.decoders.image(enc, output_type=kind)
        for i in range(len(photos)):
            assert tuple(np.asarray(shp.tensors[i])) == dec.tensors[i].shape


def test_scalar_max_size_applies_to_both_axes():
    """DALI: a single max_size value limits every axis (resize_shorter=30 of 40x60 -> 30x45,
    clipped to 40 on the long side keeping the aspect ratio)."""
    import numpy as np
    img = np.zeros((40, 60, 3), np.uint8)
    one = ndd.resize(ndd.as_tensor(img, layout="HWC"), resize_shorter=30, max_size=40)
    two = ndd.resize(ndd.as_tensor(img, layout="HWC"), resize_shorter=30, max_size=(40, 40))
    assert one.shape == two.shape
    assert max(one.shape[:2]) == 40


@pytest.mark.parametrize("module", ["readers", "random", "decoders"])
def test_sub_namespaces_show_only_their_api(module):
    """Tab completion (``dir``) of ``ndd.readers`` / ``ndd.random`` / ``ndd.decoders`` lists
    what DALI's modules of the same name offer, not the names the implementation imports."""
    mod = getattr(ndd, module)
    assert sorted(n for n in dir(mod) if not n.startswith("_")) == sorted(mod.__all__)


def test_enums_of_dalis_own_module_are_recognised_without_dali():
    """Stand-ins with the type names of ``nvidia.dali.types`` enums (what DALI-style code
    passes) convert like ndd's members of the same name; DALI itself is never imported."""
    def dali_enum(type_name, name):
        cls = type(type_name, (), {"__module__": "nvidia.dali.backend_impl.types",
                                   "name": name})
        return cls()
    img = np.arange(6 * 8 * 3, dtype=np.uint8).reshape(6, 8, 3)
    t = ndd.as_tensor(img, layout="HWC")
    assert ndd.cast(t, dtype=dali_enum("DALIDataType", "FLOAT")).dtype == ndd.float32
    assert ndd.tensor([1], dtype=dali_enum("DALIDataType", "INT16")).dtype == ndd.int16
    cubic = ndd.resize(t, size=[3, 4], interp_type=dali_enum("DALIInterpType", "INTERP_CUBIC"))
    np.testing.assert_array_equal(np.asarray(cubic),
                                  np.asarray(ndd.resize(t, size=[3, 4], interp_type="cubic")))
    with pytest.raises(ValueError, match="INTERP_WARP.*not supported"):
        ndd.resize(t, size=[3, 4], interp_type=dali_enum("DALIInterpType", "INTERP_WARP"))


def test_scalar_size_and_ranges_mean_the_same_value_for_every_axis():
    """DALI: ``size=224`` resizes to 224x224; ``random_area=0.25`` / ``random_aspect_ratio=1``
    are fixed values (min = max)."""
    rng = np.random.default_rng(5)
    imgs = [rng.integers(0, 256, (40 + 7 * i, 50 - 3 * i, 3), dtype=np.uint8) for i in range(3)]
    b = ndd.batch(imgs, layout="HWC")
    one, two = ndd.resize(b, size=16), ndd.resize(b, size=(16, 16))
    for x, y in zip(one.tensors, two.tensors):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))

    def rrc(**kw):
        return [np.asarray(t) for t in ndd.random_resized_crop(
            b, rng=ndd.random.RNG(seed=9), **kw).tensors]
    for a, c in zip(rrc(size=12, random_area=0.25, random_aspect_ratio=1.0),
                    rrc(size=(12, 12), random_area=(0.25, 0.25), random_aspect_ratio=(1, 1))):
        np.testing.assert_array_equal(a, c)
    with ndd.EvalMode.deferred:
        fused = ndd.random_resized_crop(b, size=12, random_area=0.25, rng=ndd.random.RNG(seed=9))
        fused = [np.asarray(t) for t in fused.tensors]
    for a, c in zip(rrc(size=12, random_area=0.25), fused):
        np.testing.assert_array_equal(a, c)
    with pytest.raises(ValueError, match="random_area"):
        ndd.random_resized_crop(b, size=12, random_area=(0.1, 0.2, 0.3)).evaluate()


def test_transpose_without_perm_reverses_the_axes():
    """DALI: ``perm`` defaults to the axes reversed (layout letters too); an ``output_layout``
    with the wrong number of letters is an error."""
    img = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    b = ndd.batch([img, img + 1], layout="HWC")
    out = ndd.transpose(b)
    assert out.layout == "CWH"
    for t, x in zip(out.tensors, (img, img + 1)):
        np.testing.assert_array_equal(np.asarray(t), x.transpose(2, 1, 0))
    with ndd.EvalMode.deferred:
        deferred = ndd.transpose(b * 2)
        np.testing.assert_array_equal(np.asarray(deferred.tensors[1]),
                                      ((img + 1) * 2).transpose(2, 1, 0))
    with pytest.raises(ValueError, match="output_layout 'AB' has 2 letters"):
        ndd.transpose(b, perm=[2, 0, 1], output_layout="AB")


def test_image_slice_window_arguments(photo_jpegs):
    """DALI's ``shape`` argument (absolute, in ``axis_names`` order "WH"), the positional
    ``anchor`` / ``shape_input`` inputs, and the errors for a window given twice or not at
    all."""
    enc = ndd.batch([np.frombuffer(j, np.uint8) for j in photo_jpegs[:2]])
    full = [np.asarray(t) for t in ndd.decoders.image(enc).tensors]
    got = ndd.decoders.image_slice(enc, start=[10, 20], shape=[50, 60])
    for t, f in zip(got.tensors, full):
        np.testing.assert_array_equal(np.asarray(t), f[20:80, 10:60])
    by_inputs = ndd.decoders.image_slice(enc, np.array([10.0, 20.0], np.float32),
                                         np.array([50.0, 60.0], np.float32),
                                         normalized_anchor=False, normalized_shape=False)
    for t, f in zip(by_inputs.tensors, full):
        np.testing.assert_array_equal(np.asarray(t), f[20:80, 10:60])
    ints = ndd.decoders.image_slice(enc, np.array([10, 20], np.int32),
                                    np.array([50, 60], np.int32))   # integers: absolute
    for t, f in zip(ints.tensors, full):
        np.testing.assert_array_equal(np.asarray(t), f[20:80, 10:60])
    to_end = ndd.decoders.image_slice(enc, start=[10, 20])          # no extent: to the end
    for t, f in zip(to_end.tensors, full):
        np.testing.assert_array_equal(np.asarray(t), f[20:, 10:])
    with pytest.raises(ValueError, match="start is given twice.*start and rel_start"):
        ndd.decoders.image_slice(enc, start=[1, 1], rel_start=[0.1, 0.1],
                                 rel_shape=[0.5, 0.5]).evaluate()
    with pytest.raises(ValueError, match="extent is given twice.*shape and end"):
        ndd.decoders.image_slice(enc, start=[1, 1], shape=[5, 5], end=[9, 9]).evaluate()
    with pytest.raises(ValueError, match="no slice window"):
        ndd.decoders.image_slice(enc).evaluate()


def test_reshape_takes_the_shape_as_a_positional_input():
    """DALI's ``reshape(data, shape_input)``: a Tensor/array for all samples, a Batch per
    sample."""
    x = np.arange(24, dtype=np.int16).reshape(4, 6)
    b = ndd.batch([x, x + 1])
    out = ndd.reshape(b, ndd.tensor(np.array([6, 4], np.int32)))
    assert out.shape == [(6, 4), (6, 4)]
    np.testing.assert_array_equal(np.asarray(out.tensors[1]), (x + 1).reshape(6, 4))
    per = ndd.reshape(b, ndd.batch([np.array([2, 12]), np.array([24, 1])]))
    assert per.shape == [(2, 12), (24, 1)]
    assert list(inspect.signature(ndd.reshape).parameters)[:2] == ["input", "shape_input"]
    with pytest.raises(ValueError, match="given twice"):
        ndd.reshape(b, np.array([6, 4]), shape=[6, 4])


def test_sequences_of_frames_resize_crop_flip_every_frame():
    """DALI: resize, crop and flip take FHWC / FCHW sequences (4-D without a layout: FHWC)
    and treat every frame like an image; deferred execution gives the same."""
    rng = np.random.default_rng(0)
    seq = rng.integers(0, 256, (3, 20, 24, 3), dtype=np.uint8)
    b = ndd.batch([seq, seq[::-1].copy()], layout="FHWC")

    def frames(op, **kw):
        return np.stack([np.asarray(op(ndd.as_tensor(f, layout="HWC"), **kw)) for f in seq])
    r = ndd.resize(b, size=(10, 12))
    assert r.layout == "FHWC" and r.shape == [(3, 10, 12, 3)] * 2
    np.testing.assert_array_equal(np.asarray(r.tensors[0]), frames(ndd.resize, size=(10, 12)))
    c = ndd.crop(b, crop=(5, 6), crop_pos_x=0.0, crop_pos_y=1.0)
    np.testing.assert_array_equal(np.asarray(c.tensors[0]), seq[:, 15:20, 0:6])
    f = ndd.flip(ndd.batch([seq]), vertical=1)                  # 4-D, no layout: FHWC
    assert f.layout == "FHWC"
    np.testing.assert_array_equal(np.asarray(f.tensors[0]), seq[:, ::-1, ::-1])
    chw = np.ascontiguousarray(seq.transpose(0, 3, 1, 2))
    fc = ndd.flip(ndd.batch([chw], layout="FCHW"))
    np.testing.assert_array_equal(np.asarray(fc.tensors[0]), chw[..., ::-1])
    eager = ndd.flip(ndd.crop(ndd.resize(b, size=(10, 12)), crop=(8, 8)))
    with ndd.EvalMode.deferred:
        deferred = ndd.flip(ndd.crop(ndd.resize(b, size=(10, 12)), crop=(8, 8)))
        for x, y in zip(eager.tensors, deferred.tensors):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    with pytest.raises(ValueError, match="FHWC or FCHW"):
        ndd.flip(ndd.batch([seq], layout="HWCN"))
    with pytest.raises(ValueError, match="2 \\(HW\\) or 3"):
        ndd.crop_mirror_normalize(b)                            # not for sequences (DALI too)


def test_dalis_deprecated_and_tuning_arguments_are_accepted(photo_jpegs, tmp_path):
    """DALI-style code passes deprecated arguments (cmn ``output_dtype``, ``image_type``) and
    tuning knobs (decoder cache/affinity, reader memory hints): accepted, with DALI's
    DeprecationWarning where DALI gives one, and the same results."""
    enc = ndd.batch([np.frombuffer(j, np.uint8) for j in photo_jpegs[:2]])
    plain = ndd.decoders.image(enc)
    knobs = ndd.decoders.image(enc, affine=True, split_stages=False, cache_size=0,
                               hybrid_huffman_threshold=1000, memory_stats=False)
    for a, b in zip(plain.tensors, knobs.tensors):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with pytest.warns(DeprecationWarning, match="'output_dtype' is a deprecated alias"):
        half = ndd.crop_mirror_normalize(plain, crop=(16, 16), output_dtype=ndd.float16)
    assert half.dtype == ndd.float16
    with pytest.warns(DeprecationWarning, match="'image_type' is no longer used"):
        same = ndd.resize(plain, size=(8, 8), image_type="RGB")
    np.testing.assert_array_equal(np.asarray(same.tensors[0]),
                                  np.asarray(ndd.resize(plain, size=(8, 8)).tensors[0]))
    with pytest.raises(TypeError, match="not both"):
        ndd.crop_mirror_normalize(plain, dtype=ndd.float32, output_dtype=ndd.float16)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "0.jpg").write_bytes(photo_jpegs[0])
    reader = ndd.readers.File(4, "photos", file_root=str(tmp_path), device="cpu",
                              skip_cached_images=False, tensor_init_bytes=1 << 20)
    assert reader.name == "photos"
    (jpegs, _), = list(reader.next_epoch(batch_size=1))
    assert bytes(np.asarray(jpegs.tensors[0])) == photo_jpegs[0]
    with pytest.raises(ValueError, match="device='gpu'"):
        ndd.readers.File(file_root=str(tmp_path), device="gpu")


# A call of each op with DALI's deprecated arguments, and what each argument gives.
_DEPRECATED_CALLS = {
    ("crop_mirror_normalize", "output_dtype"): ({"crop": (4, 4)}, ndd.float16, "dtype"),
    ("crop_mirror_normalize", "image_type"): ({"crop": (4, 4)}, "RGB", None),
    ("resize", "image_type"): ({"size": (4, 4)}, "RGB", None),
    ("resize", "save_attrs"): ({"size": (4, 4)}, True, None),
    ("crop", "image_type"): ({"crop": (4, 4)}, "RGB", None),
    ("rotate", "output_dtype"): ({"angle": 30.0}, ndd.float32, "dtype"),
    ("warp_affine", "output_dtype"): ({"matrix": (1, 0, 0.5, 0, 1, 0)}, ndd.float32, "dtype"),
    ("slice", "output_dtype"): ({"rel_start": (0.5, 0.5)}, ndd.float32, "dtype"),
    ("slice", "image_type"): ({"rel_start": (0.5, 0.5)}, "RGB", None),
    ("lookup_table", "output_dtype"): ({"keys": (1, 7), "values": (2.5, -3.0)}, ndd.int32,
                                       "dtype"),
}


def test_every_declared_deprecated_argument_warns_and_acts(img):
    """Each schema's deprecated table (compiler/ops/): an alias gives the same result as the
    argument it stands for, an argument DALI no longer uses changes nothing; both warn."""
    from compiler.schema import REGISTRY
    declared = {(s.name, old) for s in REGISTRY.values() for old in s.deprecated}
    assert declared == set(_DEPRECATED_CALLS)
    b = ndd.batch([img, img[:8]])
    for (op, old), (base, value, new) in _DEPRECATED_CALLS.items():
        fn = getattr(ndd, op)
        expected = fn(b, **base, **({new: value} if new else {}))
        with pytest.warns(DeprecationWarning, match=f"{op}: argument '{old}'") as record:
            got = fn(b, **base, **{old: value})
        assert record[0].filename == __file__      # points at the user's line
        assert got.dtype == expected.dtype
        for x, y in zip(got.tensors, expected.tensors):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_imread_reads_and_decodes_paths(photo_jpegs, tmp_path):
    """DALI's ``imread``: a path gives a Tensor, a list of paths a Batch, paths stored as
    bytes in a Tensor/Batch work too; the pixels are ``decoders.image``'s."""
    paths = []
    for k, j in enumerate(photo_jpegs[:3]):
        (tmp_path / f"{k}.jpg").write_bytes(j)
        paths.append(str(tmp_path / f"{k}.jpg"))
    want = [np.asarray(t) for t in ndd.decoders.image(
        ndd.batch([np.frombuffer(j, np.uint8) for j in photo_jpegs[:3]])).tensors]
    one = ndd.imread(paths[0])
    assert isinstance(one, ndd.Tensor) and one.layout == "HWC"
    np.testing.assert_array_equal(np.asarray(one), want[0])
    many = ndd.imread(paths)
    assert isinstance(many, ndd.Batch) and many.batch_size == 3
    for t, w in zip(many.tensors, want):
        np.testing.assert_array_equal(np.asarray(t), w)
    encoded = ndd.batch([np.frombuffer(p.encode(), np.uint8) for p in paths])
    gray = ndd.imread(encoded, output_type="GRAY")
    assert gray.shape == [w.shape[:2] + (1,) for w in want]
    with pytest.raises(RuntimeError, match="cannot read .*missing.jpg"):
        ndd.imread(str(tmp_path / "missing.jpg"))
    with pytest.raises(TypeError, match="filepaths must be"):
        ndd.imread(42)
