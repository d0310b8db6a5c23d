"""ExternalSources called in a reader's compile-mode loop (DALI 2.4's feeders): polled with the
reader, replayed, one call per step, DALI's errors; values against numpy."""
import itertools
import warnings

import numpy as np
import pytest

import ndd


def _labels_per_batch(root, bs):
    """The reader's labels, batch by batch, from a plain (eager) epoch: the data under test."""
    reader = ndd.readers.File(file_root=root)
    return [np.asarray(ndd.as_tensor(lab)).reshape(-1).astype(np.float64)
            for _, lab in reader.next_epoch(batch_size=bs)]


def _counting(bs):
    """A callable source whose k-th call gives a batch of ``bs`` samples full of ``10 * k``."""
    k = itertools.count()
    return ndd.ExternalSource(lambda: ndd.batch([np.full((1,), 10.0 * next(k), np.float32)] * bs))


def test_feeders_in_a_reader_loop_are_replayed(image_folder):
    bs = 2
    labels = _labels_per_batch(image_folder, bs)        # 5 files: batches of 2, 2, 1
    assert [len(x) for x in labels] == [2, 2, 1]
    reader = ndd.readers.File(file_root=image_folder)
    counter = _counting(bs)
    offset = ndd.ExternalSource(lambda: np.array([0.5], np.float32))   # broadcast per step
    got, kinds = [], []
    for epoch in range(2):
        for k, (_, lab) in enumerate(reader.next_epoch(batch_size=bs, capture=True)):
            c, o = counter(), offset()
            kinds.append((type(c).__name__, type(o).__name__, o.batch_size))
            y = ndd.cast(lab, dtype=ndd.float32) + o
            got.append(np.asarray(ndd.as_tensor(y)).reshape(-1).tolist())
            got.append(np.asarray(ndd.as_tensor(c * 2)).reshape(-1).tolist()
                       if c.batch_size == bs else None)
        assert ndd.compile.report().replayed > 0
    want = []
    for step in range(6):
        want.append((labels[step % 3] + 0.5).tolist())
        want.append([20.0 * step] * bs)
    assert got == want
    assert all(k[0] == k[1] == "CapturedBatch" for k in kinds)
    # the broadcast follows each step's batch size (the last batch has one sample)
    assert [k[2] for k in kinds] == [2, 2, 1, 2, 2, 1]


def test_feeder_in_an_external_source_compiled_epoch(image_folder):
    data = [np.full((2, 3), k, np.float32) for k in range(4)]
    src = ndd.ExternalSource(data)                     # ndd's next_epoch: items are batches
    side = _counting(2)
    got = [np.asarray(ndd.as_tensor(b + side())).reshape(-1).tolist()
           for b in src.next_epoch(batch_size=2, compile=True)]
    assert got == [[k + 10.0 * k] * 6 for k in range(4)]
    assert ndd.compile.report().replayed == 3


def _loop(root, body, epochs=1):
    reader = ndd.readers.File(file_root=root)
    for _ in range(epochs):
        for k, (_, lab) in enumerate(reader.next_epoch(batch_size=2, capture=True)):
            body(k, lab)


@pytest.mark.parametrize("make_body,words", [
    (lambda f: lambda k, lab: (lab + f() + f()).evaluate(), "only once per capture-mode step"),
    (lambda f: lambda k, lab: (lab + (f() if k == 0 else 0)).evaluate(),
     "not consumed this step"),
    (lambda f: lambda k, lab: (lab + (f() if k == 1 else 0)).evaluate(),
     "wasn't seen during tracing"),
    (lambda f: lambda k, lab: (lab + f(batch_size=3)).evaluate(), "Cannot change batch size"),
])
def test_feeder_errors_in_a_reader_loop(image_folder, make_body, words):
    feeder = ndd.ExternalSource(lambda: np.int32(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match=words):
            _loop(image_folder, make_body(feeder))


def test_feeder_exhausted_before_the_reader(image_folder):
    short = ndd.ExternalSource([np.int32(1), np.int32(2)])
    with pytest.raises(RuntimeError, match="exhausted before the iteration ended"):
        _loop(image_folder, lambda k, lab: (lab + short()).evaluate(), epochs=2)


def _counting_tensor():
    """A callable source whose k-th call gives one sample full of ``10 * k`` (broadcast)."""
    k = itertools.count()
    return ndd.ExternalSource(lambda: np.full((1,), 10.0 * next(k), np.float32))


def test_feeder_bound_to_one_loop_and_unbound_after_a_traced_break(image_folder):
    feeder = _counting_tensor()
    _loop(image_folder, lambda k, lab: (lab + feeder()).evaluate())
    with pytest.raises(RuntimeError, match="capture-mode loop"):
        feeder()                            # bound to that reader's loop
    with pytest.raises(RuntimeError, match="different capture context"):
        _loop(image_folder, lambda k, lab: (lab + feeder()).evaluate())
    other = _counting_tensor()
    reader = ndd.readers.File(file_root=image_folder)
    for _, lab in reader.next_epoch(batch_size=2, capture=True):
        (lab + other()).evaluate()
        break                               # left during the traced step
    b = other()                             # unbound: an eager call, the next item
    assert np.asarray(b).tolist() == [10.0]


def test_eager_source_cannot_become_a_feeder(image_folder):
    feeder = ndd.ExternalSource(lambda: np.int32(1))
    feeder()
    with pytest.raises(RuntimeError, match="already used eagerly"):
        _loop(image_folder, lambda k, lab: (lab + feeder()).evaluate())


def test_feeder_of_a_loop_that_captured_nothing_runs_eagerly(image_folder):
    feeder = _counting_tensor()
    reader = ndd.readers.File(file_root=image_folder)
    seen = []
    with pytest.warns(UserWarning, match="no operators were captured"):
        for _, lab in reader.next_epoch(batch_size=2, capture=True):
            seen.append(np.asarray(feeder()).tolist())   # no ndd call to capture
    # the traced step's call is broadcast to the reader's batch; the eager ones are Tensors
    assert seen == [[[0.0], [0.0]], [10.0], [20.0]]
    assert np.asarray(feeder()).tolist() == [30.0]      # unbound, used eagerly now
