"""ndd.pytorch.nodes: torchdata graphs reading with ndd readers, mapping ndd functions,
handing torch tensors over; state_dict checkpointing mid-epoch and across epochs."""
import io

import numpy as np
import pytest

import ndd
from runtime.device import gpu_available

tn = pytest.importorskip("torchdata.nodes")
torch = pytest.importorskip("torch")
nodes = pytest.importorskip("ndd.pytorch.nodes")


@pytest.fixture
def files(tmp_path, photo_jpegs):
    """10 JPEG files (the photos, re-used) with labels 100..109."""
    paths = []
    for k in range(10):
        p = tmp_path / f"f{k:02d}.jpg"
        p.write_bytes(photo_jpegs[k % 3])
        paths.append(str(p))
    return paths, list(range(100, 110))


def _graph(paths, labels, **kw):
    reader = nodes.Reader(ndd.readers.File, batch_size=4, files=paths, labels=labels, **kw)
    decoded = nodes.DictMapper(
        reader, lambda enc: ndd.resize(ndd.decoders.image(enc), size=(24, 32)), key="data")
    scaled = nodes.DictMapper(decoded, lambda lab: lab * 10 + 1, key="label")
    return reader, tn.Loader(nodes.ToTorch(scaled))


def _expected_image(jpeg):
    """The same decode + resize run by ndd outside any graph."""
    return np.asarray(ndd.resize(ndd.decoders.image(ndd.as_tensor(np.frombuffer(jpeg, np.uint8))),
                                 size=(24, 32)))


def test_graph_values(files, photo_jpegs):
    paths, labels = files
    reader, loader = _graph(paths, labels)
    batches = list(loader)
    assert [b[1].shape[0] for b in batches] == [4, 4, 2]
    for data, label in batches:
        assert isinstance(data, torch.Tensor) and data.dtype == torch.uint8
        assert data.shape[1:] == (24, 32, 3) and label.dtype == torch.int32
    got = torch.cat([b[1] for b in batches]).ravel().tolist()
    assert got == [10 * v + 1 for v in labels]
    imgs = torch.cat([b[0] for b in batches]).numpy()
    for k in range(10):
        np.testing.assert_array_equal(imgs[k], _expected_image(photo_jpegs[k % 3]))
    # the next iteration of the loader is the reader's next epoch
    assert torch.cat([b[1] for b in loader]).ravel().tolist() == got
    assert reader.get_metadata()["epoch_size"] == 10


def _labels(batches):
    return [b[1].ravel().tolist() for b in batches]


@pytest.mark.parametrize("shuffle", [False, True])
def test_state_dict_mid_epoch(files, shuffle):
    paths, labels = files
    kw = dict(random_shuffle=True, seed=11) if shuffle else {}
    _, loader = _graph(paths, labels, **kw)
    it = iter(loader)
    head = [next(it), next(it)]
    state = loader.state_dict()
    rest = list(it)
    nxt = list(loader)                       # the epoch after
    assert len(rest) == 1 and sorted(sum(_labels(head + rest), [])) == \
        [10 * v + 1 for v in labels]
    # the state survives torch.save; a new graph (a fresh reader) restores it
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    state2 = torch.load(buf, weights_only=True)
    _, loader2 = _graph(paths, labels, **kw)
    loader2.load_state_dict(state2)
    restored = list(loader2)
    assert _labels(restored) == _labels(rest)
    for a, b in zip(restored, rest):
        assert torch.equal(a[0], b[0])
    assert _labels(list(loader2)) == _labels(nxt)


def test_state_dict_at_epoch_end_and_samples(files):
    paths, labels = files
    _, loader = _graph(paths, labels, random_shuffle=True, seed=3)
    first = list(loader)
    state = loader.state_dict()              # after a whole epoch
    second = list(loader)
    _, loader2 = _graph(paths, labels, random_shuffle=True, seed=3)
    loader2.load_state_dict(state)
    assert _labels(list(loader2)) == _labels(second)
    assert sorted(sum(_labels(first), [])) == sorted(sum(_labels(second), []))
    # sample mode (batch_size=None): Tensors, one per item
    reader = nodes.Reader(ndd.readers.File, batch_size=None, files=paths, labels=labels)
    loader = tn.Loader(nodes.ToTorch(reader))
    it = iter(loader)
    assert [int(next(it)[1]) for _ in range(3)] == labels[:3]
    state = loader.state_dict()
    loader2 = tn.Loader(nodes.ToTorch(
        nodes.Reader(ndd.readers.File, batch_size=None, files=paths, labels=labels)))
    loader2.load_state_dict(state)
    assert [int(x[1]) for x in loader2] == labels[3:]


def test_output_names_and_errors(files, tmp_path, photo_jpegs):
    from ndd.datasets.lmdb_sets import write_caffe2_lmdb
    paths, labels = files
    r = nodes.Reader(ndd.readers.File, batch_size=5, files=paths, labels=labels,
                     output_names=("jpeg", "cls"))
    item = next(r)
    assert set(item) == {"jpeg", "cls"} and len(item["cls"]) == 5
    # a reader with 4 outputs needs names (checked when built: the reader lists its outputs)
    db = tmp_path / "c2"
    write_caffe2_lmdb(db, [[photo_jpegs[0], np.int32(k), [1.0, 2.0], np.array([1, 2, 3, 4],
                                                                               np.int32)]
                           for k in range(3)])
    kw = dict(path=str(db), additional_inputs=1, bbox=True)
    with pytest.raises(ValueError, match="Cannot infer output names"):
        nodes.Reader(ndd.readers.Caffe2, batch_size=3, **kw)
    with pytest.raises(ValueError, match="Number of output names does not match"):
        nodes.Reader(ndd.readers.Caffe2, batch_size=3, output_names=("a", "b"), **kw)
    r = nodes.Reader(ndd.readers.Caffe2, batch_size=3, output_names="abcd", **kw)
    out = next(tn.Loader(nodes.ToTorch(r)).__iter__())
    assert [tuple(t.shape) for t in out[1:]] == [(3, 1), (3, 2), (3, 4)]
    assert out[1].ravel().tolist() == [0, 1, 2]
    with pytest.raises(KeyError, match="'image' is not among"):
        next(nodes.DictMapper(nodes.Reader(ndd.readers.File, batch_size=2, files=paths),
                              lambda x: x, key="image"))
    with pytest.raises(ValueError, match="state must be a dict"):
        nodes.Reader(ndd.readers.File, batch_size=2, files=paths).reset({"x": 1})
    with pytest.raises(RuntimeError, match="called before reset"):
        nodes.Reader(ndd.readers.File, batch_size=2, files=paths).next()
    if not gpu_available():
        with pytest.raises(RuntimeError, match="needs a CUDA device"):
            nodes.ToTorch(r, output_stream=object())
