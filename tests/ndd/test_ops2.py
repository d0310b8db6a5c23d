"""API-level tests of ``ndd.squeeze``, ``ndd.cat``, ``ndd.pad`` and ``ndd.one_hot``: values
against independent numpy computations, layouts, errors, and every evaluation mode giving the
same values."""
import io

import numpy as np
import pytest
from PIL import Image

import ndd


def _arrays(x):
    if isinstance(x, ndd.Batch):
        return [np.asarray(t) for t in x.tensors[:]]
    return [np.asarray(x)]


def _assert_modes_equal(fn):
    res = []
    for mode in (ndd.EvalMode.eager, ndd.EvalMode.deferred, ndd.EvalMode.sync_cpu):
        with mode:
            res.append(_arrays(fn()))
    for other in res[1:]:
        assert len(other) == len(res[0])
        for a, b in zip(res[0], other):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
    return res[0]


def test_squeeze_and_cat_modes():
    x = ndd.tensor(np.arange(6, dtype=np.int16).reshape(1, 2, 1, 3), layout="FHWC")
    out = _assert_modes_equal(lambda: ndd.squeeze(x + x, axes=[0, 2]))[0]
    np.testing.assert_array_equal(out, 2 * np.arange(6).reshape(2, 3))
    assert ndd.squeeze(x, axis_names="FW").layout == "HC"
    with pytest.raises(ValueError, match="Missing argument"):
        ndd.squeeze(x)
    with pytest.raises(RuntimeError, match="volume of the new shape"):
        np.asarray(ndd.squeeze(x, axes=[1]))
    a = ndd.tensor(np.arange(6, dtype=np.int32).reshape(2, 3), layout="HW")
    b = ndd.tensor(np.arange(4, dtype=np.int32).reshape(2, 2))
    out = _assert_modes_equal(lambda: ndd.cat(a, b + 10, axis_name="W"))[0]
    np.testing.assert_array_equal(out, np.hstack([np.arange(6).reshape(2, 3),
                                                  np.arange(4).reshape(2, 2) + 10]))
    assert ndd.cat(b, a, axis=-1).layout == "HW"
    with pytest.raises(ValueError, match="same type"):
        ndd.cat(a, ndd.tensor(np.zeros((2, 2), np.float32)), axis=1)


def test_pad_batch_modes():
    s = [np.array([3, 4, 2, 5, 4], np.int32), np.array([2, 2], np.int32)]
    bt = ndd.batch(s)
    out = _assert_modes_equal(lambda: ndd.pad(bt * 1, fill_value=-1, align=4))
    assert [o.tolist() for o in out] == [[3, 4, 2, 5, 4, -1, -1, -1], [2, 2] + [-1] * 6]
    shapes = ndd.batch([np.array([4], np.int32), np.array([1], np.int32)])
    out = _assert_modes_equal(lambda: ndd.pad(bt, shape=shapes))
    assert [len(o) for o in out] == [5, 2]
    t = ndd.pad(ndd.tensor(np.ones((2, 3), np.float32), layout="HW"), shape=[3, 4])
    assert isinstance(t, ndd.Tensor) and t.shape == (3, 4) and t.layout == "HW"
    with pytest.raises(ValueError, match="mutually exclusive"):
        ndd.pad(bt, axes=[0], axis_names="H")


def test_one_hot_modes_and_legacy_scalars():
    labels = ndd.batch([np.array([1], np.int32), np.array([2], np.int32)])
    out = _assert_modes_equal(lambda: ndd.one_hot(labels, num_classes=3))
    assert [o.tolist() for o in out] == [[0, 1, 0], [0, 0, 1]]
    assert ndd.one_hot(labels, num_classes=3).ndim == 1
    out = _assert_modes_equal(lambda: ndd.one_hot(labels, num_classes=3, axis=0,
                                                  dtype=ndd.int64))
    assert out[0].shape == (3, 1) and out[0].dtype == np.int64
    t = ndd.one_hot(ndd.tensor(np.array([[0, 1]], np.int32), layout="AB"), num_classes=2,
                    axis=1, axis_name="C")
    assert t.layout == "ACB" and t.shape == (1, 2, 2)


def test_reinterpret_element_extract_modes():
    y = ndd.tensor(np.arange(8, dtype=np.uint8).reshape(2, 4), layout="HW")
    out = _assert_modes_equal(lambda: ndd.reinterpret(ndd.cast(y + 1, dtype=ndd.uint8),
                                                      dtype=ndd.uint16))[0]
    ref = (np.arange(8, dtype=np.uint8).reshape(2, 4) + 1).copy().view("<u2")
    np.testing.assert_array_equal(out, ref)
    assert ndd.reinterpret(y, dtype=ndd.uint16).layout == "HW"
    assert ndd.reinterpret(y, shape=[8]).layout is None
    with pytest.raises(ValueError, match="no-op"):
        ndd.reinterpret(y)
    seq = ndd.tensor(np.arange(24, dtype=np.int32).reshape(4, 2, 3), layout="FHW")
    first, last = _assert_modes_equal(lambda: ndd.stack(*ndd.element_extract(
        seq * 2, element_map=[0, 3])))[0]
    np.testing.assert_array_equal(first, 2 * np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(last, 2 * np.arange(18, 24).reshape(2, 3))
    outs = ndd.element_extract(seq, element_map=[1, 2])
    assert isinstance(outs, tuple) and [o.layout for o in outs] == ["HW", "HW"]
    with pytest.raises(RuntimeError, match="out of bounds"):
        np.asarray(ndd.element_extract(seq, element_map=4))


def test_get_property_layout_and_source_info(tmp_path):
    for cls in ("a", "b"):
        (tmp_path / cls).mkdir()
        (tmp_path / cls / f"{cls}1.jpg").write_bytes(b"xyz")
    reader = ndd.readers.File(file_root=str(tmp_path))
    for data, _ in reader.next_epoch(batch_size=2):
        info = _assert_modes_equal(lambda: ndd.get_property(data, key="source_info"))
        names = sorted(bytes(i).decode() for i in info)
        assert [n.endswith(e) for n, e in zip(names, ("a1.jpg", "b1.jpg"))] == [True, True]
        assert all(i.dtype == np.uint8 for i in info)
    lay = ndd.get_property(ndd.tensor(np.zeros((1, 1, 3)), layout="HWC"), key="layout")
    assert bytes(np.asarray(lay)) == b"HWC"
    assert np.asarray(ndd.get_property(ndd.tensor(np.zeros(2)), key="source_info")).size == 0
    with pytest.raises(ValueError, match="Unsupported property key"):
        ndd.get_property(lay, key="shape")


def test_reductions_modes_and_namespace():
    assert "sum" in ndd.reductions.__all__ and ndd.reductions.sum.__module__ == "ndd.reductions"
    rng = np.random.default_rng(3)
    data = [rng.normal(0, 10, (9, 8, 3)).astype(np.float32),
            rng.normal(0, 10, (4, 5, 3)).astype(np.float32)]
    b = ndd.batch(data, layout="HWC")
    R = ndd.reductions
    out = _assert_modes_equal(lambda: R.std_dev(b * 2, R.mean(b * 2, axis_names="HW"),
                                                axis_names="HW", ddof=1))
    for o, x in zip(out, data):
        np.testing.assert_allclose(o, (2 * x.astype(np.float64)).reshape(-1, 3).std(0, ddof=1),
                                   rtol=1e-6)
    out = _assert_modes_equal(lambda: R.sum(b, axes=[0, 1], keep_dims=True))
    assert out[0].shape == (1, 1, 3) and R.sum(b, axes=[0, 1]).layout == "C"
    out = _assert_modes_equal(lambda: R.max(ndd.batch([np.array([3, -7, 5], np.int16)])))
    assert out[0] == 5 and out[0].dtype == np.int16
    with pytest.raises(IndexError, match="out of range"):
        R.mean(b, axes=[3])


def test_normalize_modes():
    rng = np.random.default_rng(4)
    data = [rng.integers(0, 256, (6, 5, 3), dtype=np.uint8) for _ in range(2)]
    b = ndd.batch(data, layout="HWC")
    out = _assert_modes_equal(lambda: ndd.normalize(b, axis_names="HW", batch=True))
    allx = np.concatenate([d.reshape(-1, 3) for d in data]).astype(np.float64)
    for o, d in zip(out, data):
        assert o.dtype == np.float32
        np.testing.assert_allclose(o, (d - allx.mean(0)) / allx.std(0), rtol=1e-5, atol=1e-5)
    out = _assert_modes_equal(lambda: ndd.normalize(b, mean=ndd.batch(
        [np.full((1, 1, 3), 100, np.float32)] * 2), dtype=ndd.int16, scale=10))
    assert out[0].dtype == np.int16
    assert ndd.normalize(b).layout == "HWC"
    with pytest.raises(ValueError, match="unsupported output type"):
        ndd.normalize(b, dtype=ndd.float16)


def test_transforms_modes_and_warp_affine():
    T = ndd.transforms
    angles = ndd.batch([np.float32(10), np.float32(-35)])
    out = _assert_modes_equal(lambda: T.combine(T.translation(offset=[3, -1], batch_size=2),
                                                T.rotation(angle=angles, center=[8, 6])))
    for o, a in zip(out, (10.0, -35.0)):
        assert o.shape == (2, 3) and o.dtype == np.float32
        r = np.deg2rad(a)
        rot = np.array([[np.cos(r), -np.sin(r)], [np.sin(r), np.cos(r)]])
        p = np.array([1.0, 2.0])
        want = rot @ (p + [3, -1] - [8, 6]) + [8, 6]        # translate, then rotate about c
        np.testing.assert_allclose(o[:, :2] @ p + o[:, 2], want, atol=1e-5)
    m = T.scale(scale=[2, 2])
    assert isinstance(m, ndd.Tensor) and m.layout == "**"
    img = ndd.tensor(np.arange(48, dtype=np.uint8).reshape(4, 4, 3), layout="HWC")
    warped = ndd.warp_affine(img, matrix=T.translation(offset=[0, 0]), inverse_map=False)
    np.testing.assert_array_equal(np.asarray(warped), np.asarray(img))


def test_transforms_per_frame_arguments_fail_clearly():
    frames = ndd.per_frame(ndd.batch([np.zeros((2, 2), np.float32)]))
    with pytest.raises(RuntimeError, match="per-frame arguments are not supported"):
        np.asarray(ndd.transforms.translation(offset=frames).tensors[0])


def test_coord_transform_modes():
    pts = ndd.batch([np.arange(12, dtype=np.float32).reshape(4, 3),
                     np.ones((2, 3), np.float32)], layout="NX")
    mats = ndd.batch([np.eye(3, dtype=np.float32)[:2], np.full((2, 3), 0.5, np.float32)])
    out = _assert_modes_equal(lambda: ndd.coord_transform(pts * 2, M=mats, T=[1, -1]))
    np.testing.assert_array_equal(out[0], np.arange(12).reshape(4, 3)[:, :2] * 2 + [1, -1])
    np.testing.assert_array_equal(out[1], np.full((2, 2), 3.0) + [1, -1])
    assert ndd.coord_transform(pts, M=2.0).layout == "NX"


@pytest.fixture(scope="module")
def photo_root(tmp_path_factory):
    """2 classes x 3 JPEGs cut from a real photo (skimage), odd sizes."""
    from skimage import data
    img = data.astronaut()
    root = tmp_path_factory.mktemp("ops2_photos")
    for c in range(2):
        (root / f"c{c}").mkdir()
        for k in range(3):
            h, w = 40 + 7 * k, 50 + 5 * c
            buf = io.BytesIO()
            Image.fromarray(img[10 * k:10 * k + h, 20 * c:20 * c + w]).save(buf, "JPEG")
            (root / f"c{c}" / f"{k}.jpg").write_bytes(buf.getvalue())
    return str(root)


def _pipeline(jpegs, labels):
    imgs = ndd.resize(ndd.decoders.image(jpegs), size=(24, 32))
    norm = ndd.normalize(imgs, axis_names="HW", batch=True, scale=0.5)
    stats = ndd.reductions.std_dev(imgs, ndd.reductions.mean(imgs, axis_names="HW"),
                                   axis_names="HW")
    onehot = ndd.one_hot(ndd.cat(labels, labels), num_classes=3)
    warped = ndd.warp_affine(imgs, matrix=ndd.transforms.rotation(angle=15.0, center=[16, 12]),
                             inverse_map=False)
    padded = ndd.pad(ndd.reinterpret(imgs, shape=[-1, 3]), axes=[0], align=[100])
    return [np.asarray(t).copy() for x in (norm, stats, onehot, warped, padded)
            for t in x.tensors]


def test_ops_compiled_equal_eager(photo_root):
    def run(compile):
        reader = ndd.readers.File(file_root=photo_root)
        return [_pipeline(j, lab) for j, lab in reader.next_epoch(batch_size=4, compile=compile)]
    eager, compiled = run(False), run(True)
    assert not ndd.compile.report().fallbacks
    assert len(eager) == len(compiled) == 2
    for a, b in zip(eager, compiled):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)


def test_reorder_ops_modes():
    seq = ndd.batch([np.arange(12, dtype=np.int16).reshape(4, 3)] * 2, layout="FX")
    out = _assert_modes_equal(lambda: ndd.sequence_rearrange(seq + seq, new_order=[3, 1]))
    np.testing.assert_array_equal(out[0], 2 * np.arange(12).reshape(4, 3)[[3, 1]])
    b = ndd.batch([np.array([1, 2], np.int32), np.array([3, 70], np.int32)])
    out = _assert_modes_equal(lambda: ndd.permute_batch(b * 1, indices=[1, 1]))
    assert [o.tolist() for o in out] == [[3, 70], [3, 70]]
    out = _assert_modes_equal(lambda: ndd.lookup_table(b, keys=[1, 3], values=[10, 30],
                                                       default_value=-1))
    assert [o.tolist() for o in out] == [[10, -1], [30, -1]]
    with pytest.warns(DeprecationWarning):
        assert ndd.lookup_table(b, keys=[1], values=[2], output_dtype=ndd.int32).dtype == \
            ndd.int32
