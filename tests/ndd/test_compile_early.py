"""The next epoch's first batches run before its ``next_epoch`` (ndd/compile/early.py): the
same batches, states and errors as eager iteration, the early runs adopted only where they
stand, and dropped when the reader closes; ``Peekable`` (runtime/readers/epoch.py) delivers
what was peeked in its place."""
from __future__ import annotations

import io
import threading

import numpy as np
import pytest
from PIL import Image

import ndd
import ndd.compile.early as early
from compiler import pipeline
from runtime.readers.epoch import Peekable
from runtime.readers.prefetch import Prefetcher


@pytest.fixture(scope="module")
def png_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("early")
    rng = np.random.default_rng(11)
    for c in ("a", "b"):
        (root / c).mkdir()
        for k in range(7):
            img = rng.integers(0, 256, (int(rng.integers(6, 18)), int(rng.integers(6, 18)), 3),
                               dtype=np.uint8)
            buf = io.BytesIO()
            Image.fromarray(img).save(buf, "PNG")
            (root / c / f"{k}.png").write_bytes(buf.getvalue())
    return root


@pytest.fixture
def adoptions(monkeypatch):
    """[adopted, not adopted] over the test's compiled epochs."""
    counts = [0, 0]
    real = early.EarlyBatches.adopt

    def adopt(self, values):
        got = real(self, values)
        counts[0 if got is not None else 1] += 1
        return got
    monkeypatch.setattr(early.EarlyBatches, "adopt", adopt)
    return counts


def _body(jpegs):
    imgs = ndd.decoders.image(jpegs)
    return ndd.flip(imgs, horizontal=1)


def _epochs(root, compile, epochs, between=None, batch_size=4):
    reader = ndd.readers.File(file_root=str(root), random_shuffle=True, seed=5)
    out, states = [], []
    for e in range(epochs):
        kw = {"compile": True} if compile else {}
        with ndd.EvalMode.deferred:
            for jpegs, labels in reader.next_epoch(batch_size=batch_size, **kw):
                try:
                    imgs = [np.asarray(i).copy() for i in _body(jpegs).evaluate()]
                except Exception as exc:  # noqa: BLE001 - compared with eager's
                    imgs = (type(exc).__name__, str(exc))
                out.append((imgs, [int(np.asarray(v)[0]) for v in labels.evaluate()]))
        states.append(reader.get_state())
        if between is not None:
            between(e, reader)
    return reader, out, states


def _same(got, want):
    assert len(got) == len(want)
    for (gi, gl), (wi, wl) in zip(got, want):
        assert gl == wl
        if isinstance(wi, tuple):
            assert gi == wi
        else:
            assert len(gi) == len(wi)
            assert all(a.tobytes() == b.tobytes() and a.shape == b.shape
                       for a, b in zip(gi, wi))


def _wait_early(e, reader):
    """Between epochs: until the next epoch's first batches are taken early (else the next
    epoch may begin first and take them itself)."""
    reader.compile_early.join(timeout=30)


def test_early_runs_give_the_eager_batches_and_states(png_root, adoptions):
    _, want, want_states = _epochs(png_root, False, 4)
    _, got, states = _epochs(png_root, True, 4)     # straight on: some may be adopted
    _same(got, want)
    assert states == want_states
    adoptions[:] = [0, 0]
    reader, got, states = _epochs(png_root, True, 4, between=_wait_early)
    _same(got, want)
    assert states == want_states
    # epochs 2-4 adopted the runs begun on their first two batches
    assert adoptions[0] == 3 * 2
    # other work on the op threads while the early results wait: they stay as computed
    other = ndd.readers.File(file_root=str(png_root), random_shuffle=True, seed=9)

    def busy(e, reader):
        _wait_early(e, reader)
        for mode in (ndd.EvalMode.eager, ndd.EvalMode.deferred):
            with mode:
                for jpegs, _ in other.next_epoch(batch_size=3):
                    _body(jpegs).evaluate()
    adoptions[:] = [0, 0]
    _, got, _ = _epochs(png_root, True, 3, between=busy)
    _same(got, want[:len(got)])
    assert adoptions[0] == 2 * 2
    assert reader.compile_early is not None     # the 5th epoch's, begun
    reader.close()
    assert reader.compile_early is None


def test_an_op_error_of_an_early_batch_is_raised_in_its_place(png_root, tmp_path, adoptions):
    root = tmp_path / "bad"
    (root / "a").mkdir(parents=True)
    for k, p in enumerate(sorted((png_root / "a").glob("*.png"))):
        (root / "a" / p.name).write_bytes(p.read_bytes())
    (root / "a" / "zz.png").write_bytes(b"not a png at all")     # a decode error
    _, want, want_states = _epochs(root, False, 3, batch_size=2)
    assert sum(isinstance(i, tuple) for i, _ in want) == 3    # once an epoch
    _, got, states = _epochs(root, True, 3, between=_wait_early, batch_size=2)
    _same(got, want)
    assert states == want_states
    assert adoptions[0] == 2 * 2


def test_changed_compiler_options_drop_the_early_runs(png_root, adoptions):
    _, want, _ = _epochs(png_root, False, 3)
    before = pipeline.options()["max_lanes"]

    def change(e, reader):
        _wait_early(e, reader)
        if e == 0:
            pipeline.set_options(max_lanes=(before or 1) + 1)
    try:
        _, got, _ = _epochs(png_root, True, 3, between=change)
    finally:
        pipeline.set_options(max_lanes=before)
    _same(got, want)
    assert adoptions == [2, 1 + 1]      # epoch 2: none adopted; epoch 3: two


def test_random_bodies_begin_nothing_early(png_root):
    reader = ndd.readers.File(file_root=str(png_root), seed=5)
    for _ in range(2):
        with ndd.EvalMode.deferred:
            for jpegs, _ in reader.next_epoch(batch_size=4, compile=True):
                ndd.random.coin_flip(batch_size=jpegs.batch_size).evaluate()
                ndd.decoders.image(jpegs).evaluate()
    assert reader.compile_early is None


def test_a_broken_off_epoch_drops_the_early_runs(png_root):
    _, want, _ = _epochs(png_root, False, 2)
    reader = ndd.readers.File(file_root=str(png_root), random_shuffle=True, seed=5)
    got = []
    with ndd.EvalMode.deferred:
        it = reader.next_epoch(batch_size=4, compile=True)
        for k, (jpegs, labels) in enumerate(it):
            got.append(([np.asarray(i).copy() for i in _body(jpegs).evaluate()],
                        [int(np.asarray(v)[0]) for v in labels.evaluate()]))
            if k == 2:          # the prefetcher has read the epoch to its end by now
                break
        it.close()
    assert reader.compile_early is None
    with ndd.EvalMode.deferred:
        for jpegs, labels in reader.next_epoch(batch_size=4, compile=True):
            got.append(([np.asarray(i).copy() for i in _body(jpegs).evaluate()],
                        [int(np.asarray(v)[0]) for v in labels.evaluate()]))
    _same(got, want[:3] + want[4:])     # epoch 1's last batch skipped by close


def test_peekable_delivers_what_was_peeked_in_its_place():
    def produce(k):
        if k == 3:
            raise ValueError("item 3")
        return [k]
    p = Peekable(Prefetcher(produce, range(5), 1))
    assert p.peek() == [0] and p.peek() == [1]
    assert p.get() == [0]
    assert p.peek() is None                 # the consumer began: nothing more is peeked
    assert p.get() == [1] and p.get() == [2]
    with pytest.raises(ValueError, match="item 3"):
        p.get()
    q = Peekable(Prefetcher(produce, range(5), 1))
    assert [q.peek() for _ in range(4)] == [[0], [1], [2], None]    # stops at the error
    assert q.peek() is None
    assert [q.get() for _ in range(3)] == [[0], [1], [2]]
    with pytest.raises(ValueError, match="item 3"):
        q.get()
    r = Peekable(Prefetcher(produce, range(2), 1))
    assert r.peek() == [0] and r.peek() == [1] and r.peek() is None    # the end
    assert r.get() == [0] and r.get() == [1]
    with pytest.raises(StopIteration):
        r.get()
    s = Peekable(Prefetcher(produce, range(5), 1))
    s.peek()
    s.close()
    assert s.peek() is None
    with pytest.raises(StopIteration):
        s.get()


def test_peek_and_get_from_two_threads_deliver_each_item_once():
    for _ in range(20):
        p = Peekable(Prefetcher(lambda k: [k], range(50), 1))
        peeked = []
        t = threading.Thread(target=lambda: peeked.extend(iter(p.peek, None)))
        t.start()
        got = []
        while True:
            try:
                got.append(p.get())
            except StopIteration:
                break
        t.join()
        assert got == [[k] for k in range(50)]
        assert peeked == got[:len(peeked)]


def _read_error_run(root, compile):
    reader = ndd.readers.File(file_root=str(root), seed=3)
    first = sorted((root / "a").glob("*.png"))[0]
    seen, error = [], None
    kw = {"compile": True} if compile else {}
    for e in range(2):
        try:
            with ndd.EvalMode.deferred:
                for k, (jpegs, labels) in enumerate(reader.next_epoch(batch_size=4, **kw)):
                    _body(jpegs).evaluate()
                    seen.append((e, k, [int(np.asarray(v)[0]) for v in labels.evaluate()]))
                    if e == 0 and k == 0:
                        first.unlink()      # epoch 2's first batch cannot be read
        except Exception as exc:  # noqa: BLE001 - compared with eager's
            error = (e, type(exc).__name__, str(exc))
    return seen, error, reader.get_state()


def test_a_read_error_of_an_early_batch_is_raised_in_its_place(png_root, tmp_path, adoptions):
    runs = []
    for compile in (False, True):
        root = tmp_path / f"r{int(compile)}"
        (root / "a").mkdir(parents=True)
        for p in sorted((png_root / "a").glob("*.png")):
            (root / "a" / p.name).write_bytes(p.read_bytes())
        runs.append(_read_error_run(root, compile))
    (seen, error, state), (cseen, cerror, cstate) = runs
    assert error is not None and error[0] == 1 and "0.png" in error[2]
    assert cseen == seen and cstate == state
    assert cerror == (error[0], error[1], error[2].replace("/r0/", "/r1/"))
    assert adoptions == [0, 0]     # nothing to adopt: the error came first
