"""ExternalSource.captured(batch_size=N): the root of a captured loop, its feeders (other
ExternalSources called in the body, prefetched with it), DALI 2.4's role rules and errors, and
what ndd gives back when the body leaves the loop early."""
import gc
import itertools
import time
import warnings
import weakref

import numpy as np
import pytest

import ndd


def _batches(n, bs, start=0):
    """``n`` batches of ``bs`` samples; sample ``s`` of batch ``b`` is full of
    ``start + b * bs + s`` (float32, shape (3,))."""
    return [ndd.batch([np.full((3,), start + b * bs + s, np.float32) for s in range(bs)])
            for b in range(n)]


def _firsts(b):
    """The first element of every sample, as a list of floats."""
    return [float(np.asarray(t)[0]) for t in b.tensors]


def _const(value, bs):
    v = np.asarray(value, np.float32)
    return ndd.ExternalSource(lambda: ndd.batch([v] * bs))


def test_captured_root_replays_and_matches_numpy():
    bs = 4
    src = ndd.ExternalSource(_batches(5, bs), cycle="raise")
    got = []
    for epoch in range(2):
        for b in src.captured(batch_size=bs):
            got.append(_firsts(ndd.cast(b * 3 - 1, dtype=ndd.int32)))
    want = [[(b * bs + s) * 3 - 1 for s in range(bs)] for b in range(5)] * 2
    assert got == want
    # the second epoch is replayed: 5 steps of 3 calls (mul, sub, cast)
    assert ndd.compile.report().replayed == 15


def test_cycle_no_second_epoch_is_empty_and_empty_source_leaves_it_unbound():
    src = ndd.ExternalSource(_batches(3, 2), cycle="no")
    assert len([_firsts(b * 1) for b in src.captured(batch_size=2)]) == 3
    assert list(src.captured(batch_size=2)) == []
    empty = ndd.ExternalSource([])
    assert list(empty.captured(batch_size=2)) == []
    with pytest.raises(StopIteration):       # unbound: may be called (and is still empty)
        empty()


def test_tensor_items_broadcast_and_layout_dtype_per_output():
    src = ndd.ExternalSource(lambda: (np.arange(6, dtype=np.float32).reshape(2, 3),
                                      np.array([7.6, 8.4])),
                             num_outputs=2, layout=["HW", "X"], dtype=[ndd.float32, ndd.int32])
    steps = 0
    for a, b in src.captured(batch_size=3):
        assert (a.batch_size, b.batch_size) == (3, 3)
        assert (a.layout, b.layout) == ("HW", "X")
        assert (a.dtype, b.dtype) == (ndd.float32, ndd.int32)
        y = a + 1
        for t in y.tensors:
            np.testing.assert_array_equal(np.asarray(t), np.arange(1, 7).reshape(2, 3))
        assert [np.asarray(t).tolist() for t in (b * 2).tensors] == [[16, 16]] * 3
        steps += 1
        if steps == 3:
            break


def test_feeders_are_prefetched_with_the_root():
    bs = 2
    root = ndd.ExternalSource(_batches(4, bs))
    feeder = ndd.ExternalSource(_batches(6, bs, start=100))
    const = ndd.ExternalSource(lambda: np.array([5.0, 6.0], np.float32))   # broadcast
    got = []
    for b in root.captured(batch_size=bs):
        f = feeder()
        c = const()
        assert c.batch_size == bs
        got.append((_firsts(b + f), [np.asarray(t).tolist() for t in (c * 2).tensors]))
    assert [g[0] for g in got] == [[(100 + 2 * k * bs + s + s) + 0.0 for s in range(bs)]
                                   for k in range(4)]
    assert all(g[1] == [[10.0, 12.0]] * bs for g in got)
    assert ndd.compile.report().replayed == 2 * 3     # both calls, steps 1..3
    # the feeder was polled once per step: its next item is the fifth batch
    with pytest.raises(RuntimeError, match="capture-mode loop"):
        feeder()        # still bound to the loop (DALI's role lock)


def test_break_gives_back_what_was_read_ahead():
    src = ndd.ExternalSource(_batches(8, 2))
    feeder = ndd.ExternalSource(_batches(8, 2, start=50))
    for k, b in enumerate(src.captured(batch_size=2)):
        (b + feeder()).evaluate()
        if k == 2:
            break
    # both are unbound (DALI's teardown) and continue where the body stopped
    assert _firsts(src()) == [6.0, 7.0]
    assert _firsts(feeder()) == [56.0, 57.0]


def test_break_during_tracing_unbinds_root_and_feeder():
    root = _const([1, 1], 2)
    feeder = _const([2, 2], 2)
    for b in root.captured(batch_size=2):
        (b + feeder()).evaluate()
        break
    assert _firsts(feeder()) == [2.0, 2.0]
    assert _firsts(root()) == [1.0, 1.0]


def test_break_then_captured_again():
    counter = itertools.count()
    src = ndd.ExternalSource(lambda: np.full((1,), next(counter), np.float32))
    seen = []
    for _ in range(2):
        for k, b in enumerate(src.captured(batch_size=2)):
            seen.append(_firsts(b * 1))
            if k == 2:
                break
    # nothing read ahead is lost: six consecutive items
    assert seen == [[float(i)] * 2 for i in range(6)]


def test_empty_graph_warns_and_runs_eagerly():
    src = ndd.ExternalSource(_batches(3, 2), cycle="raise")
    with pytest.warns(UserWarning, match="no operators were captured"):
        got = [_firsts(b) for b in src.captured(batch_size=2)]
    assert got == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    assert _firsts(src()) == [0.0, 1.0]       # unbound again: eager calls work


def _read_twice():
    root, co = _const([1], 2), _const([2], 2)
    for b in root.captured(batch_size=2):
        (b + co() + co()).evaluate()


def _not_consumed():
    root, co = ndd.ExternalSource(_batches(3, 2)), _const([2], 2)
    for k, b in enumerate(root.captured(batch_size=2)):
        (b * 2).evaluate()
        if k == 0:
            (co() * 2).evaluate()


def _late():
    root, late = ndd.ExternalSource(_batches(3, 2)), _const([2], 2)
    for k, b in enumerate(root.captured(batch_size=2)):
        (b * 2).evaluate()
        if k == 1:
            (late() * 2).evaluate()


def _underrun():
    root, short = _const([1], 2), ndd.ExternalSource(_batches(2, 2))
    for b in root.captured(batch_size=2):
        (b + short()).evaluate()


def _self_read():
    root = _const([1], 2)
    for b in root.captured(batch_size=2):
        (b + root()).evaluate()


def _other_context():
    co = _const([3], 2)
    for loop in range(2):
        for b in ndd.ExternalSource(_batches(2, 2)).captured(batch_size=2):
            (b + co()).evaluate()


def _eager_then_feeder():
    co = _const([3], 2)
    co()
    for b in ndd.ExternalSource(_batches(2, 2)).captured(batch_size=2):
        (b + co()).evaluate()


def _eager_then_root():
    src = ndd.ExternalSource(_batches(2, 2))
    src()
    src.captured(batch_size=2)


def _root_then_eager():
    src = ndd.ExternalSource(_batches(2, 2))
    src.captured(batch_size=2)
    src()


def _feeder_batch_size():
    root, co = _const([1], 2), _const([2], 2)
    for b in root.captured(batch_size=2):
        (b + co(batch_size=3)).evaluate()


@pytest.mark.parametrize("scenario,words", [
    (_read_twice, "only once per capture-mode step"),
    (_not_consumed, "not consumed this step"),
    (_late, "wasn't seen during tracing"),
    (_underrun, "exhausted before the iteration ended"),
    (_self_read, "already used through .captured()"),
    (_other_context, "different capture context"),
    (_eager_then_feeder, "already used eagerly"),
    (_eager_then_root, "already used eagerly"),
    (_root_then_eager, "already used in a capture-mode loop"),
    (_feeder_batch_size, "Cannot change batch size to 3"),
])
def test_role_and_feeder_errors(scenario, words):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match=words.replace(".", r"\.").replace("(", r"\(")
                           .replace(")", r"\)")):
            scenario()


def test_batch_size_errors():
    src = ndd.ExternalSource(_batches(2, 5))
    with pytest.raises(ValueError, match="Expected batch size 4, got 5"):
        for b in src.captured(batch_size=4):
            (b * 2).evaluate()
    sizes = iter([4, 4, 5])
    late = ndd.ExternalSource(lambda: ndd.batch([np.zeros(3, np.float32)] * next(sizes)))
    with pytest.raises(ValueError, match="Expected batch size 4, got 5"):
        for b in late.captured(batch_size=4):
            (b * 2).evaluate()
    ok = ndd.ExternalSource(_batches(2, 2), cycle="quiet")
    for k, b in enumerate(ok.captured(batch_size=2)):
        (b * 2).evaluate()
        if k == 2:
            break
    for b in ok.captured(batch_size=2):
        (b * 2).evaluate()
        break
    with pytest.raises(ValueError, match="requires a non-None batch_size"):
        ok.captured(batch_size=None)


def test_batch_size_cannot_change_between_complete_epochs():
    src = ndd.ExternalSource(_batches(2, 2), cycle="raise")
    for b in src.captured(batch_size=2):
        (b * 2).evaluate()
    with pytest.raises(ValueError, match="Cannot change batch_size from 2 to 3"):
        src.captured(batch_size=3)


@pytest.mark.oracle
def test_feeder_values_match_dali():
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn

    def run(m):
        root = m.ExternalSource([m.batch([np.full((2,), b * 2 + s, np.float32) for s in range(2)])
                                 for b in range(3)])
        co = m.ExternalSource(lambda: np.array([0.5, 1.5], np.float32))
        return [np.asarray(m.as_tensor(m.cast(b + co(), dtype=m.float32)))
                for b in root.captured(batch_size=2)]
    want, got = run(dalidyn), run(ndd)
    assert len(want) == len(got) == 3
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def test_break_gives_back_a_cycle_raise_end_the_prefetcher_reached():
    src = ndd.ExternalSource(_batches(3, 2), cycle="raise")
    for k, b in enumerate(src.captured(batch_size=2)):
        (b * 2).evaluate()
        if k == 1:
            time.sleep(0.3)         # the prefetcher reads the third batch and the end
            break
    assert _firsts(src()) == [4.0, 5.0]     # the batch read ahead
    with pytest.raises(StopIteration):      # then the end it had reached
        src()
    assert _firsts(src()) == [0.0, 1.0]     # and the source starts over


def test_items_handed_to_the_body_are_not_kept():
    refs = []

    def make():
        a = np.full((2,), len(refs), np.float32)
        refs.append(weakref.ref(a))
        return a
    src = ndd.ExternalSource(make)
    for k, b in enumerate(src.captured(batch_size=2)):
        assert _firsts(b * 1) == [float(k)] * 2
        if k == 30:
            gc.collect()
            assert sum(r() is not None for r in refs[:25]) == 0
            break
