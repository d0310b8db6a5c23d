"""The one thread pool that runs per-sample work (``ndd.set_num_threads``).

Torch's own intra-op threads are set to 1 on first use so that they do not oversubscribe the
cores the pool already uses.
"""
from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

# A map whose samples are estimated to take less than this in all runs in the calling thread:
# handing tiny work (an expand_dims of 8 views, an audio op on short clips) to the pool's
# threads and waiting for them costs more than the work. The estimate is per (op, function):
# the seconds per sample of the last runs, lowered at once by a faster run and raised at most
# twofold by a slower one (a run slowed by a busy machine or by GIL waits on the pool's
# threads, where each sample's own time is measured). Results do not depend on where the
# samples run.
INLINE_MAX_S = 50e-6
_costs: dict = {}
hint = threading.local()    # ``hint.op``: the op whose kernel is running (runtime/executor.py)


def _note(key, per_sample: float) -> None:
    before = _costs.get(key)
    _costs[key] = per_sample if before is None else min(per_sample, 2.0 * before)


def default_num_threads() -> int:
    env = os.environ.get("DALI_NUM_THREADS") or os.environ.get("NDD_NUM_THREADS")
    if env:
        try:
            n = int(env)
            if n > 0:
                return n
        except ValueError:
            pass
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def map_runs(pool, n: int, fn: Callable[[int], object]) -> None:
    """``fn(i)`` for ``i in range(n)`` as one task of ``pool`` per thread (its
    ``num_threads``; 1 without), each a run of consecutive ``i``: for light per-sample work,
    where a hand-off per sample costs as much as a small image's whole loop. The results are
    dropped (``fn`` writes its outputs); the first error raises as :meth:`ThreadPool.map`."""
    parts = max(1, min(n, getattr(pool, "num_threads", 1)))
    bounds = [n * j // parts for j in range(parts + 1)]

    def run(j):
        for i in range(bounds[j], bounds[j + 1]):
            fn(i)
    pool.map(run, parts)


class ThreadPool:
    """Runs ``fn(i)`` for ``i in range(n)`` on ``num_threads`` workers, samples handed out one
    at a time.  After a failure no new sample is started; the error of the lowest failing
    ``i`` among those run is raised."""

    def __init__(self, num_threads: int):
        self.num_threads = num_threads
        self._executor = ThreadPoolExecutor(num_threads, thread_name_prefix="ndd-pool") \
            if num_threads > 1 else None

    def map(self, fn: Callable[[int], object], n: int) -> list:
        if n == 0:
            return []
        executor = self._executor
        if executor is None or n == 1:
            return [fn(i) for i in range(n)]
        key = (getattr(hint, "op", None), getattr(fn, "__code__", None))
        est = _costs.get(key)
        clock = time.perf_counter
        if est is not None and est * n < INLINE_MAX_S:
            t0 = clock()    # in this thread (see INLINE_MAX_S): the first error is the lowest
            results = [fn(i) for i in range(n)]
            _note(key, (clock() - t0) / n)
            return results
        # One task per worker, each taking the next sample from a shared iterator (``next`` on
        # a range iterator is atomic under the GIL): balanced like one task per sample, for
        # uneven samples, without a future and a wake-up per sample (the per-sample futures
        # were ~5 % of the GIL-held time of eager mode).
        results: list = [None] * n
        todo = iter(range(n))
        failed: list = []
        spent = [0.0]

        def drain():
            for i in todo:
                if failed:
                    return
                try:
                    t0 = clock()
                    results[i] = fn(i)
                    spent[0] += clock() - t0    # (a lost update only lowers one estimate)
                except BaseException as exc:  # noqa: BLE001 - re-raised below, lowest first
                    failed.append((i, exc))
                    return
        futures = []
        for _ in range(min(self.num_threads, n)):
            try:
                futures.append(executor.submit(drain))
            except RuntimeError:    # shut down meanwhile (set_num_threads): drain here
                drain()
        for f in futures:
            f.result()
        if failed:
            raise min(failed, key=lambda e: e[0])[1]
        _note(key, spent[0] / n)
        return results

    def submit(self, fn: Callable[[], object]):
        """Start ``fn()`` on a pool thread; returns an object whose ``result()`` waits for it
        (re-raising its error).  Without threads (one thread, or shut down) ``fn`` runs here."""
        executor = self._executor
        if executor is not None:
            try:
                return executor.submit(fn)
            except RuntimeError:    # shut down meanwhile (set_num_threads)
                pass
        try:
            return _Done(fn())
        except BaseException as exc:  # noqa: BLE001 - re-raised by result()
            return _Done(None, exc)

    def shutdown(self):
        """Stop taking work: tasks already queued still run, and a pool object still held by
        work in flight (e.g. a compiled batch when ``set_num_threads`` changes) runs what it
        is given in the calling thread from now on."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False)


class _Done:
    """A finished result (or error) with the ``Future.result`` interface."""

    def __init__(self, value, error: BaseException | None = None):
        self.value = value
        self.error = error

    def result(self):
        if self.error is not None:
            raise self.error
        return self.value


_lock = threading.Lock()
_pool: ThreadPool | None = None
_requested: int | None = None
_torch_configured = False


def configure_torch() -> None:
    global _torch_configured
    if not _torch_configured:
        import torch
        torch.set_num_threads(1)
        _torch_configured = True


def set_num_threads(n: int | None) -> None:
    """Set the number of worker threads for CPU operators; None goes back to the default
    (``DALI_NUM_THREADS``, else the CPUs this process may use), as DALI's.

    Raises
    ------
    ValueError
        If ``n`` is neither None nor a positive integer.
    """
    global _pool, _requested
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"set_num_threads: num_threads must be a positive integer, got {n!r}")
    with _lock:
        _requested = n
        n = get_num_threads()
        if _pool is not None and _pool.num_threads != n:
            _pool.shutdown()
            _pool = None


def get_num_threads() -> int:
    return _requested if _requested is not None else default_num_threads()


def get_pool() -> ThreadPool:
    global _pool
    pool = _pool
    if pool is None:
        with _lock:
            if _pool is None:
                configure_torch()
                _pool = ThreadPool(get_num_threads())
            pool = _pool
    return pool


def _after_fork_in_child() -> None:
    # The pool's threads do not exist in a forked child: start a new pool there on demand
    # (a forked DataLoader worker would otherwise queue work that no thread runs).
    global _pool, _lock
    _pool = None
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
