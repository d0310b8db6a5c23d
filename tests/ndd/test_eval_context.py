"""EvalMode as DALI's enum, EvalContext (threads, checkpoint, device, pool, stream), ThreadPool."""
import enum
import os
import threading

import numpy as np
import pytest

import ndd
from ndd._stream import cuda_device_count
from runtime.async_worker import get_worker


# -- EvalMode -----------------------------------------------------------------------------------
def test_eval_mode_is_a_plain_enum_with_an_alias():
    assert issubclass(ndd.EvalMode, enum.Enum) and not issubclass(ndd.EvalMode, int)
    assert [(m.name, m.value) for m in ndd.EvalMode] == [
        ("deferred", 1), ("eager", 2), ("sync_cpu", 3), ("sync_full", 4)]
    assert ndd.EvalMode.default is ndd.EvalMode.eager
    assert ndd.EvalMode(2) is ndd.EvalMode.eager
    assert ndd.EvalMode["default"] is ndd.EvalMode.eager
    assert repr(ndd.EvalMode.sync_cpu) == "<EvalMode.sync_cpu: 3>"
    assert str(ndd.EvalMode.deferred) == "EvalMode.deferred"
    assert ndd.EvalMode.deferred != 1          # not an int


def test_entering_default_is_eager():
    with ndd.EvalMode.deferred:
        with ndd.EvalMode.default:
            assert ndd.EvalMode.current() == ndd.EvalMode.default == ndd.EvalMode.eager
        assert ndd.EvalMode.current() is ndd.EvalMode.deferred


@pytest.mark.oracle
def test_eval_mode_matches_dali():
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    theirs = [(m.name, m.value, repr(m).replace(type(m).__name__, "X"), str(m).split(".")[-1])
              for m in dalidyn.EvalMode]
    ours = [(m.name, m.value, repr(m).replace(type(m).__name__, "X"), str(m).split(".")[-1])
            for m in ndd.EvalMode]
    assert ours == theirs
    assert dalidyn.EvalMode.default is dalidyn.EvalMode.eager
    assert dalidyn.EvalMode.current() is dalidyn.EvalMode.eager


def _in_threads(n, fn):
    """Run ``fn(k)`` in ``n`` threads at once; the results (or errors) by k."""
    start = threading.Barrier(n)
    out = {}

    def run(k):
        start.wait(10)
        try:
            out[k] = fn(k)
        except BaseException as exc:  # noqa: BLE001 - examined by the caller
            out[k] = exc
    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return out


def test_each_thread_its_own_mode_and_results():
    modes = list(ndd.EvalMode)

    def work(k):
        mode = modes[k % len(modes)]
        with mode:
            assert ndd.EvalMode.current() is mode
            data = np.full(5, k + 1.5, np.float32)
            out = ndd.math.sqrt(ndd.tensor(data)) * 2
            return mode, np.asarray(out), 2 * np.sqrt(data.astype(np.float64))
    res = _in_threads(8, work)
    for k, (mode, got, want) in res.items():
        assert mode is modes[k % len(modes)]
        np.testing.assert_allclose(got, want, rtol=1e-6)


# -- EvalContext: threads ---------------------------------------------------------------------
def test_a_context_cannot_be_active_in_two_threads():
    ctx = ndd.EvalContext()
    inside, release = threading.Event(), threading.Event()
    errors = []

    def holder():
        with ctx:
            inside.set()
            release.wait(10)

    t = threading.Thread(target=holder)
    t.start()
    assert inside.wait(10)
    try:
        with pytest.raises(RuntimeError, match="cannot be active in two threads"):
            with ctx:
                errors.append("entered")
        assert ndd.EvalContext.current() is not ctx      # the failed entry left nothing
    finally:
        release.set()
        t.join(10)
    assert errors == []
    with ctx:                                            # free again once the thread left
        assert ndd.EvalContext.current() is ctx


def test_many_threads_one_context_exactly_one_enters():
    ctx = ndd.EvalContext()
    entered = threading.Barrier(8, timeout=0.3)

    def work(_):
        with ctx:
            try:
                entered.wait()      # never 8: whoever got in waits for the timeout
            except threading.BrokenBarrierError:
                pass
            return "in"
    res = _in_threads(8, work)
    kinds = sorted(type(r).__name__ if isinstance(r, BaseException) else r
                   for r in res.values())
    assert kinds.count("RuntimeError") >= 1 and kinds.count("in") >= 1
    assert set(kinds) <= {"RuntimeError", "in"}


def test_same_thread_may_nest_one_context():
    ctx = ndd.EvalContext()
    with ctx:
        with ctx:
            assert ndd.EvalContext.current() is ctx
        assert ndd.EvalContext.current() is ctx
    assert ndd.EvalContext.current() is ndd.EvalContext.default()


def test_default_context_is_per_thread():
    here = ndd.EvalContext.default()
    assert ndd.EvalContext.current() is here and ndd.EvalContext.default() is here
    res = _in_threads(2, lambda _: ndd.EvalContext.current())
    assert len({id(r) for r in res.values()} | {id(here)}) == 3


def test_leaving_a_context_waits_for_its_eager_work():
    t = ndd.tensor(np.arange(6, dtype=np.float32))
    with ndd.EvalContext():
        outs = [t * k for k in range(4)]
    for k, o in enumerate(outs):
        node = o._value.producer
        assert o._value.data is not None or (node is not None and node.done)
        np.testing.assert_array_equal(np.asarray(o), np.arange(6, dtype=np.float32) * k)


# -- EvalContext: checkpoint ------------------------------------------------------------------
def test_checkpoint_is_per_context_and_made_once():
    ctx = ndd.EvalContext()
    first = ctx.checkpoint
    assert isinstance(first, ndd.checkpoint.Checkpoint) and ctx.checkpoint is first
    assert ndd.checkpoint.current() is ndd.EvalContext.current().checkpoint
    with ctx:
        assert ndd.checkpoint.current() is first
    other = ndd.EvalContext()
    assert other.checkpoint is not first
    assert ndd.checkpoint.current() is not first
    res = _in_threads(2, lambda _: ndd.checkpoint.current())
    assert res[0] is not res[1] and ndd.checkpoint.current() not in (res[0], res[1])


def test_context_checkpoint_round_trip():
    ctx = ndd.EvalContext()
    rng = ndd.random.RNG(seed=11)
    with ctx:
        ndd.checkpoint.current().register(rng, "rng")
    rng()
    ctx.checkpoint.collect()
    text = ctx.checkpoint.serialize()
    want = [rng() for _ in range(3)]
    fresh = ndd.checkpoint.Checkpoint()
    fresh.deserialize(text)
    again = ndd.random.RNG(seed=1)
    fresh.register(again, "rng")
    assert [again() for _ in range(3)] == want


# -- EvalContext: device, threads, stream -----------------------------------------------------
@pytest.mark.skipif(cuda_device_count() > 0, reason="the CPU-only defaults")
def test_cpu_only_defaults():
    ctx = ndd.EvalContext.current()
    assert ctx.device_id is None
    assert ctx.cuda_stream is None
    assert ndd.EvalContext().device_id is None
    assert ndd.ThreadPool(3).device_id is None


def test_explicit_device_id_is_kept():
    assert ndd.EvalContext(device_id=0).device_id == 0
    assert ndd.ThreadPool(2, device_id=None).device_id is None


def test_thread_pool_and_num_threads():
    old = ndd.get_num_threads()
    try:
        ndd.set_num_threads(3)
        ctx = ndd.EvalContext()
        assert ctx.num_threads == 3 and ctx.thread_pool.num_threads == 3
        ndd.set_num_threads(2)
        assert ctx.num_threads == 2                 # follows the global setting
        pool = ndd.ThreadPool(5, device_id=ctx.device_id)
        assert pool.num_threads == 5 and repr(pool).startswith("ndd.ThreadPool(")
        with ndd.EvalContext(thread_pool=pool, device_id=ctx.device_id) as c:
            assert c.thread_pool is pool and c.num_threads == 5
            assert ndd.get_num_threads() == 5       # the pool's size while active
        assert ndd.get_num_threads() == 2
        assert ndd.ThreadPool().num_threads == 2
        with pytest.raises(ValueError, match="cannot be specified together"):
            ndd.EvalContext(num_threads=2, thread_pool=pool)
        with pytest.raises(ValueError, match="Device ID clash"):
            ndd.EvalContext(thread_pool=ndd.ThreadPool(2, device_id=7), device_id=3)
        with pytest.raises(TypeError, match="ndd.ThreadPool"):
            ndd.EvalContext(thread_pool=4)
        for bad in (0, -2, 1.5, True):
            with pytest.raises(ValueError, match="num_threads"):
                ndd.ThreadPool(bad)
    finally:
        ndd.set_num_threads(old)


def test_nested_contexts_restore_thread_counts():
    old = ndd.get_num_threads()
    try:
        ndd.set_num_threads(2)
        with ndd.EvalContext(num_threads=4):
            with ndd.EvalContext(num_threads=1):
                assert ndd.get_num_threads() == 1
            with ndd.EvalContext():                 # no pool of its own: leaves the count
                assert ndd.get_num_threads() == 4
            assert ndd.get_num_threads() == 4
        assert ndd.get_num_threads() == 2
    finally:
        ndd.set_num_threads(old)


def test_given_stream_is_the_contexts():
    s = ndd.Stream(stream=12345, device_id=0)
    ctx = ndd.EvalContext(cuda_stream=s)
    assert ctx.cuda_stream is s
    raw = ndd.EvalContext(cuda_stream=777, device_id=0).cuda_stream
    assert isinstance(raw, ndd.Stream) and raw.handle == 777


@pytest.mark.oracle
@pytest.mark.skipif(cuda_device_count() > 0, reason="the CPU-only defaults")
def test_context_facts_match_dali_on_cpu():
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    for lib in (dalidyn, ndd):
        ctx = lib.EvalContext.current()
        assert ctx.device_id is None and ctx.cuda_stream is None
        assert lib.EvalContext.default() is ctx
        assert ctx.checkpoint is ctx.checkpoint is lib.checkpoint.current()
        assert lib.ThreadPool(4).device_id is None
        other = lib.EvalContext()
        held = threading.Event()
        done = threading.Event()

        def hold(c=other):
            with c:
                held.set()
                done.wait(10)
        t = threading.Thread(target=hold)
        t.start()
        held.wait(10)
        try:
            with pytest.raises(RuntimeError, match="two threads"):
                with other:
                    pass
        finally:
            done.set()
            t.join(10)


def test_set_num_threads_none_restores_the_default(monkeypatch):
    monkeypatch.delenv("DALI_NUM_THREADS", raising=False)
    monkeypatch.delenv("NDD_NUM_THREADS", raising=False)
    old = ndd.get_num_threads()
    try:
        ndd.set_num_threads(7)
        ctx = ndd.EvalContext()
        assert ctx.num_threads == 7
        ndd.set_num_threads(None)
        assert ndd.get_num_threads() == len(os.sched_getaffinity(0)) == ctx.num_threads
        monkeypatch.setenv("DALI_NUM_THREADS", "3")
        assert ndd.get_num_threads() == 3
    finally:
        ndd.set_num_threads(old)


def test_streams_of_default_and_other_contexts():
    s1, s2 = ndd.Stream(stream=1001, device_id=0), ndd.Stream(stream=1002, device_id=0)
    try:
        early = ndd.EvalContext()
        ndd.set_default_stream(s1)
        assert ndd.EvalContext.default().cuda_stream == s1
        assert early.cuda_stream == s1          # none at construction: the default stream
        later = ndd.EvalContext()
        ndd.set_current_stream(s2)
        assert ndd.EvalContext.default().cuda_stream == s2
        own = ndd.EvalContext()
        assert own.cuda_stream == s2 and later.cuda_stream == s1
        ndd.set_current_stream(None)
        assert ndd.EvalContext.default().cuda_stream == s1
        assert own.cuda_stream == s2 and later.cuda_stream == s1
        other_thread = _in_threads(1, lambda _: ndd.EvalContext.default().cuda_stream)[0]
        assert other_thread == s1               # the default stream is every thread's
    finally:
        ndd.set_default_stream(None)
        ndd.set_current_stream(None)
    assert ndd.EvalContext.default().cuda_stream is None or cuda_device_count() > 0


def test_leaving_a_context_on_the_eager_thread_does_not_wait_for_itself():
    ctx = ndd.EvalContext()

    def on_worker():
        with ctx:
            pass
        return "left"
    fut = get_worker().submit(on_worker)
    assert fut.result(timeout=10) == "left"
