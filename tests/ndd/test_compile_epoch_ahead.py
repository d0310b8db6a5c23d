"""A compiled loop's reader reads the next epoch's first batches ahead when the loop read its
epoch to the end (``FileReaderCore._look_ahead``): same batches, order, states and errors as
without it."""
from __future__ import annotations

import io
import os
import pathlib
import threading

import numpy as np
import pytest
from PIL import Image

import ndd
from runtime.readers.file_reader import FileReaderCore


@pytest.fixture(scope="module")
def jpeg_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("ahead")
    rng = np.random.default_rng(3)
    for c in ("a", "b"):
        (root / c).mkdir()
        for k in range(5):
            img = rng.integers(0, 256, (int(rng.integers(8, 20)), int(rng.integers(8, 20)), 3),
                               dtype=np.uint8)
            buf = io.BytesIO()
            Image.fromarray(img).save(buf, "PNG")
            (root / c / f"{k}.png").write_bytes(buf.getvalue())
    return str(root)


def _threads(name):
    return [t for t in threading.enumerate() if t.name == f"ndd-File reader '{name}'"]


def _epochs(root, compile, epochs, name):
    reader = ndd.readers.File(file_root=root, random_shuffle=True, seed=7, name=name)
    out, states = [], []
    for _ in range(epochs):
        kw = {"compile": True} if compile else {}
        with ndd.EvalMode.deferred:
            for jpegs, labels in reader.next_epoch(batch_size=3, **kw):
                imgs = ndd.decoders.image(jpegs)
                out.append(([np.asarray(i).copy() for i in imgs.evaluate()],
                            [int(np.asarray(v)[0]) for v in labels.evaluate()]))
        states.append(reader.get_state())
    return reader, out, states


def test_compiled_epochs_read_ahead_give_the_eager_batches_and_states(jpeg_root):
    _, want, want_states = _epochs(jpeg_root, False, 4, "eager")
    assert not _threads("eager")        # eager iteration never reads ahead
    reader, got, states = _epochs(jpeg_root, True, 4, "compiled")
    assert states == want_states
    assert len(got) == len(want)
    for (gi, gl), (wi, wl) in zip(got, want):
        assert gl == wl
        assert all(np.array_equal(a, b) for a, b in zip(gi, wi))
    # the 5th epoch's first batches are being read; closing the reader stops that
    assert _threads("compiled")
    reader._core.close()
    assert not _threads("compiled")


def _consume_compiled(core, batch_size):
    """An epoch read to its end as a compiled loop reads it (delivered counted)."""
    it = core.next_epoch(batch_size=batch_size)
    it.delivered = lambda: len(it)
    return [b for b in it]


def test_read_ahead_dropped_when_the_next_epoch_differs(jpeg_root, tmp_path):
    files = sorted(str(p) for p in pathlib.Path(jpeg_root).rglob("*.png"))
    core = FileReaderCore(files=files, random_shuffle=True, seed=2, name="differs")
    ref = FileReaderCore(files=files, random_shuffle=True, seed=2)
    first = _consume_compiled(core, 4)
    assert [b[1] for b in first] == [b[1] for b in ref.next_epoch(batch_size=4)]
    assert core._ahead.prefetcher is not None    # begun
    # the same batch size but with indices: read again, not the prefetched items
    got = list(core.next_epoch(batch_size=4, return_indices=True))
    want = list(ref.next_epoch(batch_size=4, return_indices=True))
    assert [list(map(int, b[2])) for b in got] == [list(map(int, b[2])) for b in want]
    assert all(len(b) == 3 for b in got)


def test_read_error_of_the_next_epoch_raised_at_its_batch(tmp_path):
    files = []
    for k in range(6):
        p = tmp_path / f"{k}.bin"
        p.write_bytes(bytes([k]) * 4)
        files.append(str(p))
    core = FileReaderCore(files=files, name="err", prefetch_queue_depth=1)
    _consume_compiled(core, 2)
    # in the next epoch's third batch: read ahead are at most depth + 1 = 2 batches
    os.remove(files[5])
    it = core.next_epoch(batch_size=2)
    assert [bytes(x) for x in next(it)[0]] == [bytes([0]) * 4, bytes([1]) * 4]
    assert [bytes(x) for x in next(it)[0]] == [bytes([2]) * 4, bytes([3]) * 4]
    with pytest.raises(Exception, match="5.bin"):
        next(it)


def _runner_threads():
    return {t for t in threading.enumerate() if t.name.startswith("ndd-compile-run")}


def test_compiled_epochs_reuse_their_runner_threads(jpeg_root):
    import gc
    before = _runner_threads()
    reader, _, _ = _epochs(jpeg_root, True, 2, "runners")
    first = _runner_threads() - before
    assert first and len(first) <= 2
    with ndd.EvalMode.deferred:
        for jpegs, labels in reader.next_epoch(batch_size=3, compile=True):
            ndd.decoders.image(jpegs).evaluate()
    assert _runner_threads() - before == first     # the same threads, none added
    reader._core.close()
    del reader
    gc.collect()
    for t in first:
        t.join(timeout=5)
    assert not any(t.is_alive() for t in first)     # they end with the reader's template
