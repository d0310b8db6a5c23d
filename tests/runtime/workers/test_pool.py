"""The worker pool (runtime/workers/pool.py, switched by ``NDD_PROCESS_LANES``): calls, starts,
deaths and restarts; fused nodes run in the worker processes with the same results as on
threads."""
from __future__ import annotations

import glob
import os
import time

import numpy as np
import pytest

import ndd
from runtime.buffers import shared_pool
from runtime.workers import pool as worker_pool

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def _train(jpegs):
    imgs = ndd.decoders.image(jpegs)
    imgs = ndd.random_resized_crop(imgs, size=(40, 40))
    flip = ndd.random.coin_flip(batch_size=jpegs.batch_size, probability=0.5)
    return ndd.crop_mirror_normalize(imgs, mirror=flip, mean=MEAN, std=STD,
                                     output_layout="CHW")


def _val(jpegs):
    imgs = ndd.decoders.image(jpegs)
    imgs = ndd.resize(imgs, resize_shorter=48)
    return ndd.crop_mirror_normalize(imgs, crop=(40, 40), mean=MEAN, std=STD)


def _ragged(jpegs):
    """No crop: every sample keeps its own resized shape (no common batch array)."""
    imgs = ndd.decoders.image(jpegs)
    imgs = ndd.resize(imgs, resize_shorter=30)
    return ndd.crop_mirror_normalize(imgs, mean=MEAN, std=STD)


def _epoch(root, body, mode, on):
    worker_pool.set_enabled(on)
    ndd.random.set_seed(9)
    reader = ndd.readers.File(file_root=str(root), random_shuffle=True, seed=2)
    out = []
    ctx = ndd.EvalMode.deferred if mode == "deferred" else ndd.EvalMode.eager
    with ctx:
        for jpegs, _ in reader.next_epoch(batch_size=8, compile=mode == "compile"):
            out.append([np.array(s) for s in body(jpegs).evaluate().tensors[:]]
                       if body is _ragged else body(jpegs).torch().numpy().copy())
    return out


def test_call_runs_in_another_process_and_raises_the_same_type(workers):
    assert workers.call("os:getpid") != os.getpid()
    with pytest.raises(ValueError, match="math domain error"):
        workers.call("math:sqrt", -1.0)


def test_broadcast_runs_the_call_on_every_lane(workers):
    # the same call on both workers (two different pids), one error among the replies is
    # raised after both replies were read: the workers answer the next call correctly
    import threading

    from runtime.threadpool import ThreadPool
    pids = workers.broadcast("os:getpid")
    assert len(pids) == 2 and len(set(pids)) == 2 and os.getpid() not in pids
    with pytest.raises(ValueError, match="math domain error"):
        workers.broadcast("math:sqrt", -1.0)
    assert sorted(workers.broadcast("math:sqrt", 4.0)) == [2.0, 2.0]
    # one lane busy with another caller: the idle one runs the call at once, and a helper
    # thread runs it once more on the first lane to free up (for remote_claims: whatever
    # samples are left); without a helper only the idle lane runs it
    pool = ThreadPool(2)
    for helper, runs in ((pool.submit, 2), (None, 1)):
        busy = threading.Thread(target=workers.call, args=("time:sleep", 0.5))
        busy.start()
        time.sleep(0.1)
        t0 = time.monotonic()
        got = workers.broadcast("os:getpid", helper=helper)
        assert len(got) == runs and set(got) <= set(pids)
        if helper is None:
            assert time.monotonic() - t0 < 0.3        # did not wait for the busy lane
        busy.join()
    pool.shutdown()


def test_broadcasts_queue_behind_a_running_call_and_replies_stay_in_order(workers):
    """With a helper, a broadcast queues its request on a busy worker (QUEUE_DEPTH) instead of
    waiting: the worker starts it as soon as the running call returns, i.e. before the caller
    of that call could send anything new.  Many callers at once each get their own replies."""
    import threading

    from runtime.threadpool import ThreadPool
    assert worker_pool.QUEUE_DEPTH == 2
    pool = ThreadPool(2)
    stamps = []
    busy = threading.Thread(target=lambda: stamps.append(workers.call("time:sleep", 0.4)))
    busy.start()
    time.sleep(0.1)
    t0 = time.monotonic()
    got = workers.broadcast("time:monotonic", helper=pool.submit)
    busy.join()
    assert len(got) == 2 and stamps == [None]
    # one run started at once on the idle worker, the other right after the busy call
    # (CLOCK_MONOTONIC is shared by the processes): not after a hand-off round trip
    early, late = sorted(got)
    assert early - t0 < 0.2 and late - t0 >= 0.25

    errors = []

    def caller(k):
        try:
            for j in range(15):
                x = float(k * 100 + j)
                if j % 3:
                    assert workers.broadcast("math:sqrt", x * x, helper=pool.submit) == [x, x]
                else:
                    assert workers.call("math:sqrt", x * x) == x
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=caller, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    pool.shutdown()
    assert not errors, errors


@pytest.mark.parametrize("body", [_train, _val, _ragged], ids=["train", "val", "ragged"])
@pytest.mark.parametrize("mode", ["deferred", "compile"])
def test_lanes_equal_threads_and_eager(sample_dataset, workers, body, mode):
    eager = _epoch(sample_dataset, body, "eager", False)
    threads = _epoch(sample_dataset, body, mode, False)
    before = workers.calls
    remote = _epoch(sample_dataset, body, mode, True)
    assert workers.calls > before, "the fused node did not run on the worker processes"
    assert len(remote) == len(eager) == len(threads) > 3
    for e, t, r in zip(eager, threads, remote):
        for x, y, z in zip(e, t, r):
            np.testing.assert_array_equal(x, z)
            np.testing.assert_array_equal(y, z)


def test_held_batches_are_not_overwritten(sample_dataset, workers):
    worker_pool.set_enabled(True)
    reader = ndd.readers.File(file_root=str(sample_dataset))
    kept = []
    hits = shared_pool.hits
    with ndd.EvalMode.deferred:
        for k, (jpegs, _) in enumerate(reader.next_epoch(batch_size=4)):
            t = _train(jpegs).torch()
            if k % 2 == 0:
                kept.append((t, t.clone()))
    for live, copy in kept:
        assert (live == copy).all()
    assert shared_pool.hits > hits, "shared batch buffers were never recycled"


def test_a_corrupt_file_names_the_op_and_the_file(tmp_path, sample_dataset, workers):
    worker_pool.set_enabled(True)
    src = sorted(glob.glob(str(sample_dataset / "*" / "*.jpg")))[:7]
    (tmp_path / "a").mkdir()
    for k, f in enumerate(src):
        (tmp_path / "a" / f"{k}.jpg").write_bytes(open(f, "rb").read())
    (tmp_path / "a" / "7.jpg").write_bytes(b"\xff\xd8 not a jpeg at all")
    reader = ndd.readers.File(file_root=str(tmp_path))
    before = workers.calls
    with pytest.raises(Exception) as info:
        with ndd.EvalMode.deferred:
            for jpegs, _ in reader.next_epoch(batch_size=8):
                _train(jpegs).evaluate()
    assert workers.calls > before
    msg = str(info.value)
    assert "decoders.image" in msg and "7.jpg" in msg, msg
    # the same exception type as on threads (the codec's DecodeError, a ValueError)
    assert type(info.value).__name__ == "DecodeError" and isinstance(info.value, ValueError)


def test_two_corrupt_files_give_the_same_error_every_time(tmp_path, sample_dataset, workers):
    """Which bad sample a lane reaches first depends on the claims; the error must not."""
    src = sorted(glob.glob(str(sample_dataset / "*" / "*.jpg")))[:6]
    (tmp_path / "a").mkdir()
    for k, f in enumerate(src):
        data = open(f, "rb").read()
        if k == 2:
            data = data[:len(data) // 2]            # truncated: fails in the decode
        elif k == 4:
            data = data[:40]                        # no header: fails when planned
        (tmp_path / "a" / f"{k}.jpg").write_bytes(data)

    def message(on):
        worker_pool.set_enabled(on)
        reader = ndd.readers.File(file_root=str(tmp_path))
        with pytest.raises(Exception) as info:
            with ndd.EvalMode.deferred:
                for jpegs, _ in reader.next_epoch(batch_size=6):
                    _train(jpegs).evaluate()
        return type(info.value), str(info.value)
    expected = message(False)
    assert [message(True) for _ in range(4)] == [expected] * 4
    worker_pool.set_enabled(True)


def test_segments_are_unlinked(workers):
    from runtime.buffers import input_pool
    shared_pool.clear()
    input_pool.clear()
    assert glob.glob(f"/dev/shm/ndd-{os.getpid()}-*") == []


def test_workers_that_cannot_start_turn_lanes_off(monkeypatch):
    import sys
    monkeypatch.setattr(sys, "executable", "/bin/false")
    monkeypatch.setattr(worker_pool.state, "failed", False)
    monkeypatch.setattr(worker_pool.state, "deaths", 0)
    for attempt in range(worker_pool.MAX_DEATHS):    # each start's worker exits at once
        private = worker_pool.WorkerPool(1)
        with pytest.warns(RuntimeWarning, match="died while starting"):
            private.wait_started(timeout=60)
        assert not private.ready.is_set() and private.error is not None
        assert worker_pool.state.failed == (attempt == worker_pool.MAX_DEATHS - 1)


def test_a_worker_killed_while_starting_counts_as_a_death(monkeypatch):
    monkeypatch.setattr(worker_pool.state, "failed", False)
    monkeypatch.setattr(worker_pool.state, "deaths", 0)
    private = worker_pool.WorkerPool(2)
    deadline = time.monotonic() + 30
    while not private.spawned() and time.monotonic() < deadline:
        time.sleep(0.001)
    private.spawned()[0].kill()
    with pytest.warns(RuntimeWarning, match="died while starting.*new workers start"):
        private.wait_started(timeout=60)
    assert not private.ready.is_set() and private.closed
    assert worker_pool.state.deaths == 1 and not worker_pool.state.failed
    assert all(p.poll() is not None for p in private.spawned())


def test_lanes_closed_while_starting_leave_no_process(monkeypatch):
    """close() while the workers still boot (a thread-count change, the program's exit) kills
    them: none is left running, none joins the closed workers, and workers are not turned off."""
    monkeypatch.setattr(worker_pool.state, "failed", False)
    private = worker_pool.WorkerPool(2)
    deadline = time.monotonic() + 30
    while len(private.spawned()) < 2 and time.monotonic() < deadline:
        time.sleep(0.001)
    procs = private.spawned()
    assert len(procs) == 2 and not private.ready.is_set()   # booting takes ~1 s or more
    t0 = time.monotonic()
    private.close()
    assert time.monotonic() - t0 < 10
    assert all(p.poll() is not None for p in procs)
    private.wait_started(timeout=30)
    assert not private.starting and not private.processes()
    assert not private.ready.is_set() and not worker_pool.state.failed


def test_a_worker_that_dies_raises_lane_died(monkeypatch):
    monkeypatch.setattr(worker_pool.state, "failed", False)
    monkeypatch.setattr(worker_pool.state, "deaths", worker_pool.MAX_DEATHS - 1)
    private = worker_pool.WorkerPool(1)
    assert private.ready.wait(180), private.error
    procs = private.processes()
    with pytest.warns(RuntimeWarning, match="worker process died.* from now on"), \
            pytest.raises(worker_pool.WorkerDied):
        private.call("os:_exit", 3)
    assert worker_pool.state.failed          # the last death allowed: workers stay off
    deadline = time.monotonic() + 30    # the workers close themselves in the background
    while private.processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not private.processes() and all(p.returncode is not None for p in procs)
    private.close()


def test_a_worker_that_crashes_raises_worker_crashed_and_is_not_counted(monkeypatch):
    """A crash signal (here SIGABRT from os.abort) is told apart from other deaths: the call
    raises WorkerCrashed naming the signal (its caller must not redo the work in-process) and
    the death limit is not spent (the pool starts again whatever a dataset's files do)."""
    monkeypatch.setattr(worker_pool.state, "failed", False)
    monkeypatch.setattr(worker_pool.state, "deaths", worker_pool.MAX_DEATHS - 1)
    monkeypatch.setattr(worker_pool.state, "crashes", 0)
    private = worker_pool.WorkerPool(1)
    assert private.ready.wait(180), private.error
    with pytest.warns(RuntimeWarning, match=r"crashed .*SIGABRT.*new workers start"), \
            pytest.raises(worker_pool.WorkerCrashed, match="crashed \\(SIGABRT\\)") as info:
        private.call("os:abort")
    assert info.value.signal_name == "SIGABRT"
    assert worker_pool.state.crashes == 1
    assert worker_pool.state.deaths == worker_pool.MAX_DEATHS - 1
    assert not worker_pool.state.failed
    private.close()


def test_a_forked_child_does_not_use_the_parents_lanes_or_buffers(workers):
    import multiprocessing as mp
    arr, name = shared_pool.shared_empty((4, 5), np.float32)
    assert name is not None
    del arr                                   # free in the parent's pool
    ctx = mp.get_context("fork")
    q = ctx.Queue()

    def child():
        got, child_name = shared_pool.shared_empty((4, 5), np.float32)
        q.put((worker_pool.state.pool is None, child_name != name))
        del got
        shared_pool.clear()         # fork children leave by os._exit: no atexit
    p = ctx.Process(target=child)
    p.start()
    p.join(60)
    assert q.get(timeout=10) == (True, True)


def test_a_runtime_module_in_the_working_directory_is_not_imported(tmp_path, monkeypatch):
    (tmp_path / "runtime.py").write_text('raise SystemExit("the user\'s runtime.py ran")\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(worker_pool.state, "failed", False)
    private = worker_pool.WorkerPool(1)
    try:
        assert private.ready.wait(180), private.error
        assert private.call("os:getcwd") == str(tmp_path)
    finally:
        private.close()


def test_a_forked_child_runs_eager_ops():
    """After the pool and the eager worker are up, a forked child (e.g. a DataLoader worker)
    still gets results: its own pool and worker threads, not the parent's dead ones.  (numpy
    kernels only: torch itself refuses its intra-op pool in some forked children.)"""
    import multiprocessing as mp
    ndd.set_num_threads(2)

    def draw():
        ndd.random.set_seed(5)
        with ndd.EvalMode.eager:
            b = ndd.random.uniform(batch_size=8, range=(0.0, 1.0), shape=(3,))
            return [np.array(t).tobytes() for t in b.evaluate().tensors[:]]
    mine = draw()
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=lambda: q.put(draw()))
    p.start()
    try:
        got = q.get(timeout=20)
    finally:
        p.join(10)
        if p.is_alive():
            p.kill()
    assert got == mine


def _rrc_batch(files, size, seed):
    ndd.random.set_seed(seed)
    b = ndd.batch([np.fromfile(f, np.uint8) for f in files])
    x = ndd.random_resized_crop(ndd.decoders.image(b), size=(size, size))
    x = ndd.crop_mirror_normalize(x, mean=[1, 2, 3], std=[4, 5, 6])
    return [np.asarray(s).copy() for s in x.tensors]


def test_many_output_sizes_keep_working(sample_dataset, workers):
    """Progressive resizing: a new batch shape every few batches makes more shared segments
    than any fixed mapping cache; workers keep every live one (a segment's file is gone once
    all workers mapped it) and unmap what the pools dropped."""
    from runtime import buffers
    files = sorted(glob.glob(str(sample_dataset / "*" / "*.jpg")))[:6]
    worker_pool.set_enabled(True)
    before = workers.calls
    for k, size in enumerate(range(20, 44)):
        with ndd.EvalMode.deferred:
            got = _rrc_batch(files, size, k)
        worker_pool.set_enabled(False)
        with ndd.EvalMode.eager:
            ref = _rrc_batch(files, size, k)
        worker_pool.set_enabled(True)
        for x, y in zip(got, ref):
            np.testing.assert_array_equal(x, y)
    assert workers.calls >= before + 2 * 20
    assert buffers.drop_cursor() > 0          # the pools did drop segments meanwhile


def _rss_anon_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("RssAnon"):
                return int(line.split()[1]) / 1024
    return 0.0


def test_worker_memory_stays_bounded_over_20_compiled_epochs(sample_dataset, workers):
    """Workers keep no per-batch state: their mappings are the pools' live segments and the
    tap caches stay within their byte budgets, so memory levels off."""
    from runtime.kernels.cpu import resize_taps
    worker_pool.set_enabled(True)
    reader = ndd.readers.File(file_root=str(sample_dataset), random_shuffle=True, seed=1)
    pids = [p.pid for p in workers.processes()]
    rss = []
    for epoch in range(20):
        for jpegs, _ in reader.next_epoch(batch_size=8, compile=True):
            _train(jpegs).evaluate()
        if epoch in (4, 19):
            rss.append([_rss_anon_mb(p) for p in pids])
    probe = ("(__import__('runtime.buffers').buffers.mapped_count(), "
             "__import__('runtime.kernels.cpu.resize_taps').kernels.cpu.resize_taps"
             ".tent_plan_cache_bytes())")
    for _ in range(len(pids)):
        mapped, plan_bytes = workers.call("builtins:eval", probe)
        assert mapped <= 4 * 6 + 3 * 4          # at most every kept segment of both pools
        assert plan_bytes <= resize_taps.TENT_PLAN_BYTES
    for before, after in zip(*rss):
        assert after - before < 40, rss         # MB, epochs 5 -> 20


def test_a_new_lane_count_gets_fresh_segments(sample_dataset, workers):
    files = sorted(glob.glob(str(sample_dataset / "*" / "*.jpg")))[:7]
    worker_pool.set_enabled(True)
    with ndd.EvalMode.deferred:
        ref = _rrc_batch(files, 24, 1)
        ndd.set_num_threads(3)
        try:
            assert worker_pool.wait_ready(3)
            calls = worker_pool.state.pool.calls
            for _ in range(3):
                for x, y in zip(_rrc_batch(files, 24, 1), ref):
                    np.testing.assert_array_equal(x, y)
            assert worker_pool.state.pool.calls > calls
        finally:
            ndd.set_num_threads(2)
            assert worker_pool.wait_ready(2)


def test_thread_count_changes_inside_a_compiled_epoch(sample_dataset, workers):
    """Two batches are in flight in compile mode: the one running on the old workers / pool
    finishes there (close() waits for running calls; a shut-down pool runs work inline)."""
    worker_pool.set_enabled(True)
    ref = _epoch(sample_dataset, _val, "eager", False)
    worker_pool.set_enabled(True)
    ndd.random.set_seed(9)
    reader = ndd.readers.File(file_root=str(sample_dataset), random_shuffle=True, seed=2)
    got = []
    try:
        with ndd.EvalMode.deferred:
            for k, (jpegs, _) in enumerate(reader.next_epoch(batch_size=8, compile=True)):
                ndd.set_num_threads(3 if k % 2 else 2)
                got.append(_val(jpegs).torch().numpy().copy())
    finally:
        ndd.set_num_threads(2)
    assert len(got) == len(ref)
    for x, y in zip(got, ref):
        np.testing.assert_array_equal(x, y)
    assert not worker_pool.state.failed
