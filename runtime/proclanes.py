"""Process lanes: worker processes that run chunks of a fused node without sharing our GIL.

Why: a fused ``decode -> random_resized_crop -> crop_mirror_normalize`` sample costs ~1.6 ms
of GIL-free native work (nvImageCodec, torch) and ~0.5-1 ms of per-sample Python (argument
folding, window draws, header parsing).  Run from two threads, the Python halves serialize on
the GIL (held ~60 % of the time, measured with ``py-spy --gil``), so two cores give ~1.5x one.
A fused node is the one place where shipping work to another process is cheap: its inputs are
the encoded files (~50 KB a sample) and its output is written straight into a shared-memory
batch (:mod:`runtime.buffers`), so nothing large is pickled.  Unfused ops (and eager mode)
keep running on threads: their decoded intermediates are too big to ship.

Design:

* Workers are plain ``python -c`` subprocesses (see ``_BOOT``), each talking over its own
  ``socketpair`` (``multiprocessing.connection.Connection`` framing; nobody else can connect).
  ``multiprocessing``'s spawn is not used because it re-imports the user's ``__main__`` (a
  script without an ``if __name__ == "__main__"`` guard would run twice).
* Workers start in the background on first use; until they are connected, callers get
  ``None`` from :func:`get_lanes` and use the thread pool, so nobody waits for the start.
* One request at a time per worker; idle workers sit in a queue, so concurrent callers (two
  compiled batches in flight) each get their own.
* A worker inherits nothing: it imports the kernels afresh and runs them single-threaded
  (torch intra-op threads = 1).  It ignores SIGINT (the parent handles Ctrl-C) and exits when
  the parent closes its connection or dies.

Enabled by default when the pool has more than one thread; ``NDD_PROCESS_LANES=0`` (or
:func:`set_enabled(False)`) keeps everything on threads.
"""
from __future__ import annotations

import atexit
import os
import pickle
import queue
import subprocess
import sys
import threading
import time
import traceback
import warnings

__all__ = ["ProcessLanes", "get_lanes", "wait_ready", "set_enabled", "enabled", "shutdown",
           "RemoteError", "LaneDied"]


class RemoteError(RuntimeError):
    """A worker failed in a way that cannot be re-raised as the original exception type."""


class LaneDied(RuntimeError):
    """A worker process went away mid-call; callers redo the work on threads."""


def _env_enabled() -> bool:
    return os.environ.get("NDD_PROCESS_LANES", "1").strip().lower() not in ("0", "false", "no",
                                                                           "off", "")


_START_TIMEOUT_S = 120

# How a worker starts: ``python -c`` with the current directory taken off ``sys.path`` first
# (``python -m`` would put it in front, so a user's ``runtime.py`` there would be imported in
# the worker instead of ours), then our package root in front.
_BOOT = ("import os, sys; cwd = os.getcwd(); "
         "sys.path[:] = [{root!r}] + [p for p in sys.path if p not in ('', '.', cwd)]; "
         "from runtime.proclanes import _serve; _serve(int(sys.argv[1]))")
_state = {"enabled": None, "lanes": None, "failed": False, "deaths": 0}
# Worker deaths (e.g. one killed for memory) after which the lanes are started again; past
# this many in one process they stay off (something kills them every time).
_MAX_DEATHS = 3
_lock = threading.Lock()


def set_enabled(flag: bool | None) -> None:
    """Use process lanes or not from now on (``None``: as ``NDD_PROCESS_LANES`` says).

    Running workers are kept (see :func:`shutdown`)."""
    with _lock:
        _state["enabled"] = None if flag is None else bool(flag)


def enabled() -> bool:
    flag = _state["enabled"]
    return _env_enabled() if flag is None else flag


class _Worker:
    def __init__(self, index, proc, conn):
        from runtime.buffers import drop_cursor
        self.index = index
        self.proc = proc
        self.conn = conn
        self.drop_cursor = drop_cursor()     # shared segments it was told to unmap


class ProcessLanes:
    """``n`` worker processes; :meth:`call` runs ``fn(*args)`` (a module-level function named
    ``"module:qualname"``) on an idle one and returns its result.

    Parameters
    ----------
    n : int
        Number of worker processes (>= 1).
    """

    def __init__(self, n: int):
        self.n = int(n)
        self._idle: queue.Queue = queue.Queue()
        self._workers: list[_Worker] = []      # connected and ready
        self._spawned: list = []                # every worker process started (Popen)
        self._lock = threading.Lock()           # _closed vs the starter adding workers
        self._closed = False
        self.calls = 0
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self._starter = threading.Thread(target=self._start, name="ndd-lanes-start",
                                         daemon=True)
        self._starter.start()

    def _start(self):
        import socket
        from multiprocessing.connection import Connection
        try:
            env = dict(os.environ)
            env["NDD_PROCESS_LANES"] = "0"      # a worker never starts lanes of its own
            root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"]
                                        if env.get("PYTHONPATH") else "")
            pending = []
            for _ in range(self.n):
                mine, theirs = socket.socketpair()
                with self._lock:
                    if self._closed:
                        theirs.close()
                        mine.close()
                        return
                    proc = subprocess.Popen([sys.executable, "-c", _BOOT.format(root=root),
                                             str(theirs.fileno())], env=env,
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
                        raise RuntimeError(f"a process lane did not start within "
                                           f"{_START_TIMEOUT_S} s (exit code {proc.poll()})")
                hello = conn.recv()
                if hello != "ready":
                    raise RuntimeError(f"a process lane failed to start: {hello}")
                with self._lock:
                    if self._closed:
                        conn.close()
                        return
                    w = _Worker(len(self._workers), proc, conn)
                    self._workers.append(w)
                self._idle.put(w)
            self.ready.set()
        except BaseException as exc:  # noqa: BLE001 - callers fall back to threads
            if self._closed:            # closed while starting (e.g. at exit): no failure
                return
            self.error = exc
            with self._lock:
                _stop(self._spawned)
            if not isinstance(exc, (EOFError, OSError)):
                _state["failed"] = True     # cannot start here (timeout, import error)
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

    def broadcast(self, target: str, *args, shared=None, helper=None) -> list:
        """Run the same call ``target(*args)`` on every lane; returns their results.

        The arguments are pickled once.  The lanes idle now get the call at once from this
        thread (no hand-off to other threads: both start within microseconds); a lane busy
        with another caller's work gets it when it frees up, through ``helper(fn)`` (runs
        ``fn`` on another thread, returns an object with ``result()``), when given.  Every
        lane's reply is read before anything is raised (the lane stays usable); the first
        error is raised then, with the same types as :meth:`call`.
        """
        payload = _pickled(args)
        taken = [self._take(block=True)]
        while len(taken) < self.n:
            w = self._take(block=False)
            if w is None:
                break
            taken.append(w)
        late = []
        if helper is not None:
            late = [helper(lambda: self._call_pickled(target, payload, shared))
                    for _ in range(self.n - len(taken))]
        results, errors, sent = [], [], []
        try:
            for w in taken:
                try:
                    self._send(w, target, payload)
                    sent.append(w)
                except BaseException as exc:  # noqa: BLE001 - raised after the replies
                    errors.append(exc)
            for w in sent:
                try:
                    ok, res = self._receive(w, target, shared)
                    if ok:
                        results.append(res)
                    else:
                        errors.append(_rebuild(*res))
                except BaseException as exc:  # noqa: BLE001
                    errors.append(exc)
        finally:
            for w in taken:
                self._idle.put(w)
        for f in late:
            try:
                results.append(f.result())
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)
        if errors:
            raise errors[0]
        return results

    def _call_pickled(self, target, payload: bytes, shared):
        """:meth:`call` with the arguments already pickled."""
        w = self._take(block=True)
        try:
            self._send(w, target, payload)
            ok, res = self._receive(w, target, shared)
        finally:
            self._idle.put(w)
        if ok:
            return res
        raise _rebuild(*res)

    def _take(self, block: bool):
        """An idle worker (``block=False``: or None when none is idle right now)."""
        if self._closed:
            raise LaneDied("the process lanes were shut down (e.g. a new thread count)")
        try:
            w = self._idle.get(block=block)
        except queue.Empty:
            return None
        if w is None or self._closed:       # close() woke us: no worker for this call
            self._idle.put(w)
            if not block:
                return None
            raise LaneDied("the process lanes were shut down (e.g. a new thread count)")
        self.calls += 1
        return w

    def _send(self, w, target, payload):
        from runtime.buffers import dropped_since
        from runtime.codecs.limits import process_settings
        try:
            sync, cursor = dropped_since(w.drop_cursor)
            # the caller's process-wide settings (the image size limit) travel with every
            # call, so a worker decodes under the limit in force when the batch was sent
            w.conn.send((target, payload, sync, process_settings()))
            w.drop_cursor = cursor
        except (EOFError, OSError) as exc:
            raise self._died(target, exc) from exc

    def _receive(self, w, target, shared):
        """``(ok, result or error fields)`` of the call sent to ``w``."""
        try:
            ok, payload = w.conn.recv()
        except (EOFError, OSError) as exc:
            raise self._died(target, exc) from exc
        if shared is not None:
            for pool, name in shared:
                pool.mark_attached(name, w.index, self.n)
        return ok, payload

    def _died(self, target, exc) -> LaneDied:
        if self._closed:        # shut down while this call ran (its wait timed out)
            return LaneDied(f"the process lanes were shut down while running {target}")
        self._closed = True
        _count_death(f"while running {target}", exc, redone=True)
        # stop the other workers and reap the dead one (after the calls in flight)
        threading.Thread(target=self.close, name="ndd-lanes-close", daemon=True).start()
        return LaneDied(f"a process lane died while running {target}: {exc}")

    def close(self, wait_s: float = 10.0):
        """Stop the workers.  Calls already running finish first (up to ``wait_s``), so a
        batch in flight when the thread count changes completes on the old lanes; callers
        still waiting for a worker get :class:`LaneDied` (and redo their work on threads).
        Workers still starting are killed."""
        with self._lock:
            self._closed = True
        held, deadline = 0, time.monotonic() + wait_s
        while held < len(self._workers):
            try:
                w = self._idle.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            held += w is not None
        for _ in range(len(self._workers) + 8):
            self._idle.put(None)        # wakes callers blocked in _idle.get()
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


def _count_death(when: str, exc, redone: bool) -> None:
    """A worker died ``when``: counted (new lanes start at the next batch, up to
    ``_MAX_DEATHS`` in a process, then threads only) and said once in a RuntimeWarning."""
    with _lock:
        _state["deaths"] += 1
        last = _state["deaths"] >= _MAX_DEATHS
        _state["failed"] = _state["failed"] or last
    then = (f"fused decode chains run on threads in this process from now on "
            f"({_MAX_DEATHS} lanes died)" if last else "new lanes start in the background")
    redo = "the batch is redone on threads, and " if redone else ""
    warnings.warn(f"ndd: a process lane (worker process) died {when} ({exc!r}); {redo}{then}",
                  RuntimeWarning, stacklevel=4)


def _pickled(args: tuple) -> bytes:
    """The call's arguments, pickled (a worker unpickles ``bytes`` arguments itself)."""
    return pickle.dumps(args, protocol=pickle.HIGHEST_PROTOCOL)


def _rebuild(type_name: str, module: str, message: str, tb: str) -> BaseException:
    """The worker's exception as the same builtin type when possible (message kept)."""
    import builtins
    import importlib
    cls = getattr(builtins, type_name, None) if module == "builtins" else None
    if cls is None and module and type_name:
        try:        # e.g. runtime.codecs.errors.DecodeError, not imported here yet
            cls = getattr(importlib.import_module(module), type_name, None)
        except Exception:  # noqa: BLE001 - fall back to RemoteError
            cls = None
    exc = None
    if isinstance(cls, type) and issubclass(cls, BaseException):
        try:
            exc = cls(message)
        except Exception:  # noqa: BLE001
            exc = None
    if exc is None:
        exc = RemoteError(f"{type_name}: {message}")
    exc.__notes__ = [f"raised in a process lane:\n{tb}"]
    return exc


def get_lanes(n: int) -> ProcessLanes | None:
    """The shared lanes once their workers are connected, else None (use threads meanwhile).

    The first call starts ``n`` workers in the background, and so does the first call after a
    worker died (up to ``_MAX_DEATHS`` times).  Returns None when lanes are disabled, ``n`` <
    2, or the workers failed to start.
    """
    if n < 2 or _state["failed"] or not enabled():
        return None
    lanes = _state["lanes"]
    if lanes is not None and (lanes.n != n or lanes._closed):
        if lanes._closed:   # a worker died: the lanes close themselves in the background
            with _lock:
                if _state["lanes"] is lanes:
                    _state["lanes"] = None
        else:               # ndd.set_num_threads changed the width
            shutdown()
        lanes = None
        # kept segments were unlinked once the old workers mapped them: new workers could
        # not open them, so start afresh
        from runtime.buffers import input_pool, shared_pool
        shared_pool.clear()
        input_pool.clear()
    if lanes is None:
        with _lock:
            lanes = _state["lanes"]
            if lanes is None and not _state["failed"]:
                lanes = _state["lanes"] = ProcessLanes(n)
    if lanes is None or not lanes.ready.is_set() or lanes._closed:
        return None
    return lanes


def wait_ready(n: int, timeout: float = _START_TIMEOUT_S) -> bool:
    """Start the lanes (if enabled) and wait until they are up; True when they are usable.

    For benchmarks, so that timed epochs do not include the workers' start."""
    import time
    deadline = time.monotonic() + timeout
    while get_lanes(n) is None:
        if n < 2 or _state["failed"] or not enabled() or time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def shutdown() -> None:
    """Stop the workers (they restart on the next :func:`get_lanes`)."""
    with _lock:
        lanes, _state["lanes"] = _state["lanes"], None
    if lanes is not None:
        lanes.close()


atexit.register(shutdown)


def _after_fork_in_child() -> None:
    # The parent's workers and sockets are not ours: a forked child (e.g. a DataLoader worker)
    # starts its own lanes if it needs them.
    global _lock
    _lock = threading.Lock()
    _state["lanes"] = None
    _state["failed"] = False
    _state["deaths"] = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# ------------------------------------------------------------------ worker side
def _resolve(target: str):
    import importlib
    module, _, name = target.partition(":")
    obj = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


# A worker decodes images of every size; glibc keeps the freed blocks in its heaps, so the
# worker's memory crept up batch after batch (~1-2 MB an epoch of the sample photos).  Every
# so many calls the free pages go back to the kernel (``malloc_trim``, ~1 ms).
_TRIM_EVERY = 16


def _malloc_trim():
    """glibc's ``malloc_trim`` (None elsewhere)."""
    try:
        import ctypes
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def _serve(fd: int) -> None:
    import signal
    from multiprocessing.connection import Connection
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn = Connection(fd)
    try:
        from runtime.threadpool import configure_torch
        configure_torch()
        import runtime.kernels.cpu.fused  # noqa: F401 - warm imports before "ready"
        from runtime.codecs.limits import apply_process_settings
        from runtime.kernels.cpu.jit import warm_up
        warm_up()                       # compiled kernels loaded before "ready"
        hello = "ready"
    except BaseException as exc:  # noqa: BLE001
        hello = f"import failed: {exc!r}"
    try:
        conn.send(hello)
    except (EOFError, OSError):         # the parent is gone already (a short script)
        return
    if hello != "ready":
        return
    trim, calls = _malloc_trim(), 0
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        target, args, sync, settings = msg
        try:
            apply_process_settings(settings)
            if sync is not None:
                from runtime.buffers import sync_mappings
                sync_mappings(sync)
            if args.__class__ is bytes:     # pickled once for all lanes (broadcast)
                args = pickle.loads(args)
            result = (True, _resolve(target)(*args))
        except BaseException as exc:  # noqa: BLE001 - sent back to the caller
            result = (False, (type(exc).__name__, type(exc).__module__, str(exc),
                              traceback.format_exc()))
        try:
            conn.send(result)
        except (EOFError, OSError):
            return
        calls += 1
        if trim is not None and calls % _TRIM_EVERY == 0:
            trim(0)


