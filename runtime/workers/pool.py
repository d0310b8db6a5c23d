"""The worker pool: processes that run work items without sharing our GIL (the parent side).

Why: a fused ``decode -> random_resized_crop -> crop_mirror_normalize`` sample costs ~1.6 ms
of GIL-free native work (nvImageCodec, torch) and ~0.5-1 ms of per-sample Python (argument
folding, window draws, header parsing).  Run from two threads, the Python halves serialize on
the GIL (held ~60 % of the time, measured with ``py-spy --gil``), so two cores give ~1.5x one.
Work whose inputs and outputs are cheap to ship (a fused decode chain: encoded files in, a
shared-memory batch out, :mod:`runtime.buffers`) runs here instead; the pool itself knows no
kernel: a work item is a module-level function named ``"module:qualname"`` and its arguments.

Design:

* Workers are plain ``python -c`` subprocesses (see ``_BOOT``, :mod:`.serve`), each talking
  over its own ``socketpair`` (``multiprocessing.connection.Connection`` framing; nobody else
  can connect).  ``multiprocessing``'s spawn is not used because it re-imports the user's
  ``__main__`` (a script without an ``if __name__ == "__main__"`` guard would run twice).
* Workers start in the background on first use; until they are connected, callers get
  ``None`` from :func:`get_workers` and use the thread pool, so nobody waits for the start.
  Before a worker reports ready it runs the setup work registered with :func:`prepare_with`
  (e.g. importing and compiling the kernels).
* A single :meth:`WorkerPool.call` waits for an idle worker.  :meth:`WorkerPool.broadcast`
  (one batch's claim loop on every worker) may queue its request behind the call a worker is
  running (at most :data:`QUEUE_DEPTH` requests per worker): the worker reads batch ``k + 1``'s
  request the moment it sent batch ``k``'s reply, instead of idling until the parent thread
  that read the reply got the GIL and the next batch's thread sent the next request (1-3 ms a
  batch, issue 20).  Replies come back in request order; each caller reads its own in turn.
* A worker inherits nothing and runs single-threaded (torch intra-op threads = 1).  It ignores
  SIGINT (the parent handles Ctrl-C) and exits when the parent closes its connection or dies.
* The caller's process-wide settings (the image size limit,
  :func:`runtime.codecs.limits.process_settings`) travel with every call.

Enabled by default when the thread pool has more than one thread; ``NDD_PROCESS_LANES=0`` (or
:func:`set_enabled(False)`) keeps everything on threads.
"""
from __future__ import annotations

import atexit
import os
import pickle
import socket
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field
from multiprocessing.connection import Connection

from runtime.buffers import input_pool, shared_pool
from runtime.codecs.limits import process_settings

from .lane import QUEUE_DEPTH, WorkerLane
from .errors import RemoteError, WorkerCrashed, WorkerDied, crash_signal, rebuild_error

__all__ = ["WorkerPool", "get_workers", "wait_ready", "set_enabled", "enabled", "shutdown",
           "prepare_with", "state", "PoolState", "MAX_DEATHS", "QUEUE_DEPTH", "RemoteError",
           "WorkerDied", "WorkerCrashed"]


def _env_enabled() -> bool:
    return os.environ.get("NDD_PROCESS_LANES", "1").strip().lower() not in ("0", "false", "no",
                                                                           "off", "")


_START_TIMEOUT_S = 120

# How a worker starts: ``python -c`` with the current directory taken off ``sys.path`` first
# (``python -m`` would put it in front, so a user's ``runtime.py`` there would be imported in
# the worker instead of ours), then our package root in front.  Arguments: the socket's file
# descriptor, then the setup work items.
_BOOT = ("import os, sys; cwd = os.getcwd(); "
         "sys.path[:] = [{root!r}] + [p for p in sys.path if p not in ('', '.', cwd)]; "
         "from runtime.workers.serve import serve; serve(int(sys.argv[1]), sys.argv[2:])")
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: Worker deaths (e.g. one killed for memory) after which the pool is started again; past
#: this many it stays off. Crashes are not counted (threads would crash on the same input).
MAX_DEATHS = 3


@dataclass
class PoolState:
    """The process-wide worker pool and what decides whether it runs.

    Attributes
    ----------
    enabled : bool or None
        :func:`set_enabled`'s flag; None: as ``NDD_PROCESS_LANES`` says.
    pool : WorkerPool or None
        The shared pool (:func:`get_workers`), once started.
    failed : bool
        Workers cannot start here, or died :data:`MAX_DEATHS` times: threads only from now on.
    deaths : int
        Workers that died in this process (crashes not counted).
    crashes : int
        Workers ended by a crash signal (:data:`CRASH_SIGNALS`) in this process.
    setup : list of str
        Work items every new worker runs before it reports ready (:func:`prepare_with`).
    """

    enabled: bool | None = None
    pool: "WorkerPool | None" = None
    failed: bool = False
    deaths: int = 0
    crashes: int = 0
    setup: list = field(default_factory=list)


#: The process's pool state (a forked child starts from a fresh one).
state = PoolState()
_lock = threading.Lock()


def set_enabled(flag: bool | None) -> None:
    """Use worker processes or not from now on (``None``: as ``NDD_PROCESS_LANES`` says).

    Running workers are kept (see :func:`shutdown`)."""
    with _lock:
        state.enabled = None if flag is None else bool(flag)


def enabled() -> bool:
    """Whether callers should use the worker pool (:func:`set_enabled`, else the variable)."""
    flag = state.enabled
    return _env_enabled() if flag is None else flag


def prepare_with(target: str) -> None:
    """Have every worker started from now on run ``target()`` (``"module:qualname"``) before
    it reports ready, e.g. to import and compile what its calls will need."""
    with _lock:
        if target not in state.setup:
            state.setup.append(target)


class WorkerPool:
    """``n`` worker processes; :meth:`call` runs ``fn(*args)`` (a module-level function named
    ``"module:qualname"``) on an idle one and returns its result.

    Parameters
    ----------
    n : int
        Number of worker processes (>= 1).
    setup : sequence of str, optional
        Work items each worker runs before it reports ready (default: those registered with
        :func:`prepare_with`).
    """

    def __init__(self, n: int, setup=None):
        self.n = int(n)
        self.setup = list(state.setup if setup is None else setup)
        self._free = threading.Condition()     # a worker's ``inflight`` went down / closed
        self._workers: list[WorkerLane] = []      # connected and ready
        self._spawned: list = []                # every worker process started (Popen)
        self._lock = threading.Lock()           # _closed vs the starter adding workers
        self._closed = False
        self.calls = 0
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self._starter = threading.Thread(target=self._start, name="ndd-workers-start",
                                         daemon=True)
        self._starter.start()

    @property
    def closed(self) -> bool:
        """True once the pool was shut down (or a worker died): it takes no more calls."""
        return self._closed

    def processes(self) -> list:
        """The ``subprocess.Popen`` of every connected worker."""
        return [w.proc for w in self._workers]

    def spawned(self) -> list:
        """The ``subprocess.Popen`` of every worker started, connected or not yet."""
        return list(self._spawned)

    def wait_started(self, timeout: float | None = None) -> None:
        """Wait until the background start finished (ready, failed or closed)."""
        self._starter.join(timeout)

    @property
    def starting(self) -> bool:
        """True while the workers are still being started in the background."""
        return self._starter.is_alive()

    def _start(self):
        try:
            env = dict(os.environ)
            env["NDD_PROCESS_LANES"] = "0"      # a worker never starts workers of its own
            env["PYTHONPATH"] = _ROOT + (os.pathsep + env["PYTHONPATH"]
                                         if env.get("PYTHONPATH") else "")
            pending = []
            for _ in range(self.n):
                mine, theirs = socket.socketpair()
                with self._lock:
                    if self._closed:
                        theirs.close()
                        mine.close()
                        return
                    proc = subprocess.Popen([sys.executable, "-c", _BOOT.format(root=_ROOT),
                                             str(theirs.fileno()), *self.setup], env=env,
                                            stdin=subprocess.DEVNULL,
                                            pass_fds=(theirs.fileno(),))
                    self._spawned.append(proc)
                theirs.close()
                pending.append((proc, Connection(mine.detach())))
            deadline = time.monotonic() + _START_TIMEOUT_S
            for proc, conn in pending:
                while not conn.poll(0.05):      # short waits: close() may come meanwhile
                    if self._closed:
                        return                  # close() stops what was spawned
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"a worker process did not start within "
                                           f"{_START_TIMEOUT_S} s (exit code {proc.poll()})")
                hello = conn.recv()
                if hello != "ready":
                    raise RuntimeError(f"a worker process failed to start: {hello}")
                with self._lock:
                    if self._closed:
                        conn.close()
                        return
                    w = WorkerLane(len(self._workers), proc, conn)
                with self._free:
                    self._workers.append(w)
                    self._free.notify_all()
            self.ready.set()
        except BaseException as exc:  # noqa: BLE001 - callers fall back to threads
            if self._closed:            # closed while starting (e.g. at exit): no failure
                return
            self.error = exc
            with self._lock:
                _stop(self._spawned)
            if not isinstance(exc, (EOFError, OSError)):
                state.failed = True     # cannot start here (timeout, import error)
                return
            # a worker died while starting (e.g. killed): a death, as during a call
            self._closed = True
            _count_death("while starting", exc, redone=False)

    def call(self, target: str, *args, shared=None):
        """Run ``target(*args)`` in a worker; re-raise its exception here (same type).

        ``shared=[(pool, name), ...]``: the call maps shared segment ``name`` of each
        :class:`runtime.buffers.SharedBufferPool` ``pool``, which is told so afterwards.
        """
        return self._call_pickled(target, _pickled(args), shared)

    def broadcast(self, target: str, *args, shared=None, helper=None, queue=None) -> list:
        """Run the same call ``target(*args)`` on every worker; returns their results.

        The arguments are pickled once and sent from this thread.  The workers idle now start
        at once.  With ``helper`` given (a batch whose late runs just take what is left), a
        worker busy with another caller's work gets the request queued behind that work
        (:data:`QUEUE_DEPTH`), so it runs it the moment it is free; ``helper`` itself is not
        called (it was the hand-off thread of older versions).  Without ``helper`` only the
        workers idle now run it (at least one: this waits for one when all are busy);
        ``queue=True`` / ``False`` says it without a helper: every worker runs it (queued where
        busy), or only the idle ones.  Every
        worker's reply is read before anything is raised (the worker stays usable); the first
        error is raised then, with the same types as :meth:`call`.
        """
        payload = _pickled(args)
        depth = QUEUE_DEPTH if (helper is not None if queue is None else queue) else 1
        taken = self._take_all(depth)
        results, errors, sent = [], [], []
        try:
            for w in taken:
                try:
                    sent.append((w, self._send(w, target, payload)))
                except BaseException as exc:  # noqa: BLE001 - raised after the replies
                    errors.append(exc)
            for w, ticket in sent:
                try:
                    ok, res = self._receive(w, target, shared, ticket)
                    if ok:
                        results.append(res)
                    else:
                        errors.append(rebuild_error(*res))
                except BaseException as exc:  # noqa: BLE001
                    errors.append(exc)
        finally:
            for w in taken:
                self._give_back(w)
        if errors:
            raise errors[0]
        return results

    def _call_pickled(self, target, payload: bytes, shared):
        """:meth:`call` with the arguments already pickled."""
        w = self._take_all(1, one=True)[0]
        try:
            ticket = self._send(w, target, payload)
            ok, res = self._receive(w, target, shared, ticket)
        finally:
            self._give_back(w)
        if ok:
            return res
        raise rebuild_error(*res)

    def _take_all(self, depth: int, one: bool = False) -> list:
        """Take the workers holding fewer than ``depth`` requests (``one``: the first idle
        one), waiting until there is at least one; each taken worker's ``inflight`` goes up."""
        with self._free:
            while True:
                if self._closed:
                    raise WorkerDied("the worker processes were shut down (e.g. a new thread "
                                     "count)")
                taken = [w for w in self._workers if w.inflight < depth]
                if taken:
                    taken = taken[:1] if one else taken
                    for w in taken:
                        w.inflight += 1
                    self.calls += len(taken)
                    return taken
                self._free.wait()

    def _give_back(self, w) -> None:
        with self._free:
            w.inflight -= 1
            self._free.notify_all()

    def _send(self, w, target, payload) -> int:
        """Send the request; returns its ticket (the reply to read is the ticket-th)."""
        try:
            # the caller's process-wide settings (the image size limit) travel with every
            # call, so a worker decodes under the limit in force when the batch was sent
            return w.send(target, payload, process_settings())
        except (EOFError, OSError) as exc:
            raise self._died(target, exc, w) from exc

    def _receive(self, w, target, shared, ticket: int):
        """``(ok, result or error fields)`` of request ``ticket`` sent to ``w`` (replies come
        in request order: wait for the earlier ones to be read by their callers)."""
        try:
            ok, payload = w.receive(ticket)
        except (EOFError, OSError) as exc:
            raise self._died(target, exc, w) from exc
        if shared is not None:
            for pool, name in shared:
                pool.mark_attached(name, w.index, self.n)
        return ok, payload

    def _died(self, target, exc, w=None) -> WorkerDied:
        if self._closed:        # shut down while this call ran (its wait timed out)
            return WorkerDied(f"the worker processes were shut down while running {target}")
        self._closed = True
        crash = crash_signal(w.proc) if w is not None else None
        _count_death(f"while running {target}", exc, redone=True, crash=crash)
        # stop the other workers and reap the dead one (after the calls in flight)
        threading.Thread(target=self.close, name="ndd-workers-close", daemon=True).start()
        if crash is not None:
            return WorkerCrashed(f"a worker process crashed ({crash}) while running {target}",
                                 crash)
        return WorkerDied(f"a worker process died while running {target}: {exc}")

    def close(self, wait_s: float = 10.0):
        """Stop the workers.  Calls already running finish first (up to ``wait_s``), so a
        batch in flight when the thread count changes completes on the old workers; callers
        still waiting for a worker get :class:`WorkerDied` (and redo their work on threads).
        Workers still starting are killed."""
        with self._lock:
            self._closed = True
        deadline = time.monotonic() + wait_s
        with self._free:
            self._free.notify_all()     # callers waiting for a worker: WorkerDied
            while any(w.inflight for w in self._workers):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._free.wait(left)
        for w in self._workers:
            try:
                w.conn.send(None)
                w.conn.close()
            except OSError:
                pass
        for w in self._workers:
            try:
                w.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                w.proc.kill()
        self._workers.clear()
        with self._lock:
            spawned, self._spawned = self._spawned, []
        _stop(spawned)                  # still starting (or never connected): not needed


def _stop(procs) -> None:
    """Kill the worker processes still running and reap them (no zombie left)."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def _count_death(when: str, exc, redone: bool, crash: str | None = None) -> None:
    """A worker died ``when`` (or crashed: ``crash`` names the signal): counted (new workers
    start at the next batch, up to :data:`MAX_DEATHS` deaths, then threads only), warned."""
    with _lock:
        state.crashes += crash is not None
        state.deaths += crash is None
        last = state.deaths >= MAX_DEATHS
        state.failed = state.failed or last
    then = (f"fused decode chains run on threads in this process from now on "
            f"({MAX_DEATHS} workers died)" if last else "new workers start in the background")
    redo = "the batch is redone on threads, and " if redone else ""
    if crash is not None:
        exc = crash
        redo = ("that batch raises an error naming its files (not redone in this process, "
                "where its input would crash it), and ")
    warnings.warn(f"ndd: a worker process {'crashed' if crash else 'died'} {when} ({exc!r}); "
                  f"{redo}{then}", RuntimeWarning, stacklevel=4)


def _pickled(args: tuple) -> bytes:
    """The call's arguments, pickled (a worker unpickles ``bytes`` arguments itself)."""
    return pickle.dumps(args, protocol=pickle.HIGHEST_PROTOCOL)


# ------------------------------------------------------------------ the process-wide pool
def get_workers(n: int) -> WorkerPool | None:
    """The shared pool once its workers are connected, else None (use threads meanwhile).

    The first call starts ``n`` workers in the background, and so does the first call after a
    worker died (up to :data:`MAX_DEATHS` times).  Returns None when worker processes are
    disabled, ``n`` < 2, or the workers failed to start.
    """
    if n < 2 or state.failed or not enabled():
        return None
    pool = state.pool
    if pool is not None and (pool.n != n or pool.closed):
        if pool.closed:     # a worker died: the pool closes itself in the background
            with _lock:
                if state.pool is pool:
                    state.pool = None
        else:               # ndd.set_num_threads changed the width
            shutdown()
        pool = None
        # kept segments were unlinked once the old workers mapped them: new workers could
        # not open them, so start afresh
        shared_pool.clear()
        input_pool.clear()
    if pool is None:
        with _lock:
            pool = state.pool
            if pool is None and not state.failed:
                pool = state.pool = WorkerPool(n)
    if pool is None or not pool.ready.is_set() or pool.closed:
        return None
    return pool


def wait_ready(n: int, timeout: float = _START_TIMEOUT_S) -> bool:
    """Start the workers (if enabled) and wait until they are up; True when they are usable.

    For benchmarks, so that timed epochs do not include the workers' start."""
    deadline = time.monotonic() + timeout
    while get_workers(n) is None:
        if n < 2 or state.failed or not enabled() or time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def shutdown() -> None:
    """Stop the workers (they restart on the next :func:`get_workers`)."""
    with _lock:
        pool, state.pool = state.pool, None
    if pool is not None:
        pool.close()


atexit.register(shutdown)


def _after_fork_in_child() -> None:
    # The parent's workers and sockets are not ours: a forked child (e.g. a DataLoader worker)
    # starts its own workers if it needs them.
    global _lock
    _lock = threading.Lock()
    state.pool = None
    state.failed = False
    state.deaths = 0
    state.crashes = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
