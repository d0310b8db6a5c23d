"""Evaluation modes (``ndd.EvalMode``), the evaluation context (``ndd.EvalContext``) and
``ndd.ThreadPool``.

``EvalMode`` members are context managers pushing onto a thread-local stack::

    with ndd.EvalMode.sync_cpu:
        ...

Modes, in increasing synchronicity: ``deferred`` < ``eager`` < ``sync_cpu`` < ``sync_full``;
``default`` is an alias of ``eager``. As in DALI 2.4, ``EvalMode`` is a plain ``enum.Enum``
numbered 1..4 (``repr(EvalMode.eager)`` is ``<EvalMode.eager: 2>``, ``list(EvalMode)`` has the
four modes, the alias is not listed).

An ``EvalContext`` is active in at most one thread at a time (entering one that another
thread has entered raises ``RuntimeError``, DALI's rule); each thread has its own default
context. Source: DALI 2.4 ``nvidia.dali.experimental.dynamic`` (``_eval_mode.py``,
``_eval_context.py``, ``_thread_pool.py``).
"""
from __future__ import annotations

import enum
import threading

from ndd._checkpoint import Checkpoint
from ndd._stream import Stream, get_current_stream, get_default_stream, stream as make_stream
from runtime.async_worker import get_worker
from runtime.device import gpu_available
from runtime.threadpool import get_num_threads, set_num_threads

_local = threading.local()


def _stack() -> list:
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


class EvalMode(enum.Enum):
    """When op calls are executed.

    * ``deferred`` (1): calls record nodes; the compiler optimizes and runs them on consumption.
    * ``eager`` (2, also ``default``): each call is dispatched at once to a background worker.
    * ``sync_cpu`` (3): each call finishes (CPU work) before returning; errors surface at the
      call.
    * ``sync_full`` (4): like ``sync_cpu`` and also waits for GPU work.

    Entering a member (``with EvalMode.deferred:``) makes it the thread's current mode until
    the block ends.
    """

    deferred = 1
    eager = 2
    sync_cpu = 3
    sync_full = 4
    default = 2     # an alias: EvalMode.default is EvalMode.eager

    def __enter__(self):
        _stack().append(self)
        return self

    def __exit__(self, *exc):
        _stack().pop()
        return False

    @staticmethod
    def current() -> "EvalMode":
        """The innermost active mode of this thread (``eager`` when none was entered)."""
        s = _stack()
        return s[-1] if s else EvalMode.eager


def _check_threads(num_threads, what):
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
        raise ValueError(f"{what}: num_threads must be a positive integer, got {num_threads!r}")
    return num_threads


def _current_device_id():
    """The GPU ordinal a context or pool is associated with by default: 0 when a CUDA device
    is usable, None on a CPU-only machine (DALI's ``Device.current().device_id``)."""
    return 0 if gpu_available() else None


_CURRENT_DEVICE = object()


class ThreadPool:
    """A number of worker threads for CPU operators (DALI's ``ndd.ThreadPool``).

    ndd runs per-sample work on one process-wide pool (``runtime/threadpool.py``); a
    ThreadPool object names its size, and an :class:`EvalContext` built with it sizes that
    pool to ``num_threads`` while the context is active.

    Parameters
    ----------
    num_threads : int, optional
        Number of threads (default: :func:`ndd.get_num_threads`).
    device_id : int or None, optional
        The GPU associated with the pool; by default the current device (None without a
        GPU); None associates none.

    Raises
    ------
    ValueError
        ``num_threads`` is not a positive integer.
    """

    def __init__(self, num_threads: int | None = None, *, device_id=_CURRENT_DEVICE):
        self._num_threads = get_num_threads() if num_threads is None else \
            _check_threads(num_threads, "ThreadPool")
        self._device_id = _current_device_id() if device_id is _CURRENT_DEVICE else device_id

    @property
    def num_threads(self) -> int:
        return self._num_threads

    @property
    def device_id(self) -> int | None:
        return self._device_id

    def __repr__(self):
        return f"ndd.ThreadPool(num_threads={self._num_threads}, device_id={self._device_id})"


class _DefaultThreadPool(ThreadPool):
    """The pool of a context without an explicit one: always ``get_num_threads()`` threads."""

    def __init__(self, device_id):
        self._device_id = device_id

    @property
    def num_threads(self) -> int:
        return get_num_threads()


class EvalContext:
    """Execution resources for ndd calls: device, thread pool, CUDA stream and checkpoint.

    A context manager: ``with ndd.EvalContext(num_threads=4): ...`` makes it the current
    context of this thread (contexts nest). One context may be entered again in the thread
    that holds it, but not from two threads at once.

    Parameters
    ----------
    num_threads : int, optional
        Worker threads for CPU operators while the context is active (by default the global
        setting, ``ndd.set_num_threads``). Exclusive with ``thread_pool``.
    device_id : int, optional
        GPU ordinal for ``device="gpu"``; by default the current device (None on a machine
        without a GPU, as DALI).
    cuda_stream : stream-like, optional
        The CUDA stream of the context's GPU work (anything ``ndd.stream(stream=...)`` takes);
        by default the thread's current stream at construction.
    thread_pool : ThreadPool, optional
        Exclusive with ``num_threads``; must belong to the same ``device_id``.

    Raises
    ------
    ValueError
        A bad ``num_threads``, both ``num_threads`` and ``thread_pool``, or a pool of another
        device.
    """

    def __init__(self, num_threads: int | None = None, device_id: int | None = None, *,
                 cuda_stream=None, thread_pool: ThreadPool | None = None):
        if num_threads is not None:
            _check_threads(num_threads, "EvalContext")
        self._device_id = _current_device_id() if device_id is None else device_id
        if thread_pool is not None:
            if num_threads is not None:
                raise ValueError("`thread_pool` and `num_threads` cannot be specified together.")
            if not isinstance(thread_pool, ThreadPool):
                raise TypeError(f"EvalContext: thread_pool must be an ndd.ThreadPool, got "
                                f"{type(thread_pool).__name__}")
            if thread_pool.device_id != self._device_id:
                raise ValueError(f"Device ID clash: device_id == {self._device_id} but "
                                 f"thread_pool.device_id == {thread_pool.device_id}")
        elif num_threads is not None:
            thread_pool = ThreadPool(num_threads, device_id=self._device_id)
        else:
            thread_pool = _DefaultThreadPool(self._device_id)
        self._thread_pool = thread_pool
        self._default = False           # a thread's default context (see default())
        if cuda_stream is not None:
            self._cuda_stream = make_stream(stream=cuda_stream, device_id=device_id)
        else:
            self._cuda_stream = get_current_stream()
        self._own_stream: Stream | None = None
        self._checkpoint: Checkpoint | None = None
        self._lock = threading.RLock()      # held by the thread that entered the context
        self._depth = 0
        self._saved_threads: list = []

    # ------------------------------------------------------------------ properties
    @property
    def device_id(self) -> int | None:
        """The GPU ordinal of the context (None on a machine without a GPU)."""
        return self._device_id

    @property
    def thread_pool(self) -> ThreadPool:
        """The context's :class:`ThreadPool` (the global one's size when none was given)."""
        return self._thread_pool

    @property
    def num_threads(self) -> int:
        """Worker threads of the context's pool."""
        return self.thread_pool.num_threads

    @property
    def cuda_stream(self) -> Stream | None:
        """The context's CUDA stream. A thread's default context follows
        ``ndd.set_current_stream`` and ``ndd.set_default_stream`` and, on a GPU, creates a
        stream of its own when neither is set; another context keeps the thread's current
        stream at its construction (or the default stream then, when there was none). Without
        a GPU it is None unless a stream was given."""
        if self._cuda_stream is not None:
            return self._cuda_stream
        s = get_current_stream() if self._default else get_default_stream(self._device_id)
        if s is not None:
            self._own_stream = None
            return s
        if self._default and self._device_id is not None:
            if self._own_stream is None:
                self._own_stream = make_stream(device_id=self._device_id)
            return self._own_stream
        return None

    @property
    def checkpoint(self) -> Checkpoint:
        """The ``ndd.checkpoint.Checkpoint`` bound to this context (made on first use; the same
        object every time). Call its ``clear()`` before reusing a context's checkpoint for
        another pipeline."""
        if self._checkpoint is None:
            self._checkpoint = Checkpoint()
        return self._checkpoint

    # ------------------------------------------------------------------ activation
    def __enter__(self):
        if not self._lock.acquire(blocking=False):
            raise RuntimeError("An EvalContext cannot be active in two threads simultaneously.")
        try:
            s = getattr(_local, "contexts", None)
            if s is None:
                s = _local.contexts = []
            s.append(self)
            self._depth += 1
            pool = self._thread_pool
            own = not isinstance(pool, _DefaultThreadPool)
            self._saved_threads.append(get_num_threads() if own else None)
            if own:
                set_num_threads(pool.num_threads)
        except BaseException:
            self._lock.release()
            raise
        return self

    def __exit__(self, *exc):
        try:
            self._depth -= 1
            if self._depth == 0:
                self.evaluate_all()
            _local.contexts.pop()
            saved = self._saved_threads.pop()
            if saved is not None:
                set_num_threads(saved)
        finally:
            self._lock.release()
        return False

    @staticmethod
    def current() -> "EvalContext":
        """The innermost context entered in this thread, else the thread's default one."""
        s = getattr(_local, "contexts", None)
        if s:
            return s[-1]
        return EvalContext.default()

    @staticmethod
    def default() -> "EvalContext":
        """This thread's default context (made on first use, one per thread)."""
        ctx = getattr(_local, "default_ctx", None)
        if ctx is None:
            ctx = EvalContext()
            ctx._default = True
            ctx._cuda_stream = None     # follows set_default_stream (see cuda_stream)
            _local.default_ctx = ctx
        return ctx

    def evaluate_all(self) -> None:
        """Wait for all eager work dispatched so far (errors surface where the values are
        consumed). A no-op on the eager worker's own thread (it would wait for itself)."""
        if threading.current_thread().name.startswith("ndd-eager"):
            return
        get_worker().drain()

    def __repr__(self):
        return (f"ndd.EvalContext(device_id={self._device_id}, "
                f"num_threads={self.num_threads})")
