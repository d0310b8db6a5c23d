"""A background thread that computes a sequence of items ahead of their consumer.

Used by the readers to read the files of the next batches while the user works on the current
one. The queue is bounded (``depth`` items), the thread stops when the consumer closes the
prefetcher or drops it (garbage collection), and an exception raised while producing an item
is re-raised in the consumer, at the position of that item.
"""

from __future__ import annotations

import queue
import threading
import weakref

__all__ = ["Prefetcher"]

_POLL_S = 0.05

#: After a put that filled the queue, how long the thread waits before producing the next item
#: unless the consumer takes one first (seconds).  The consumer just took an item and resumes
#: its own Python work (in deferred mode: building the next graph and sending it to the worker
#: processes, ~1.5 ms that the workers wait for); producing at once would take the GIL from it
#: in that window (+0.2-0.8 ms a batch measured, issue 20).  A few ms later the consumer waits
#: on its batch and the read costs it nothing.  A consumer that takes the next item sooner wakes
#: the thread at once, so a fast consumer is never starved.
YIELD_S = 0.003
_OK, _ERROR, _END = 0, 1, 2


def _put(q, stop, message):
    """Put ``message`` unless ``stop`` is set first; returns False when stopped."""
    while not stop.is_set():
        try:
            q.put(message, timeout=_POLL_S)
            return True
        except queue.Full:
            continue
    return False


def _produce_all(produce, items, q, stop):
    # Runs on the worker thread. Holds no reference to the Prefetcher, so dropping the
    # Prefetcher triggers its finalizer, which stops this loop.
    for item in items:
        if stop.is_set():
            return
        try:
            result = produce(item)
        except BaseException as e:  # re-raised by the consumer
            _put(q, stop, (_ERROR, e))
            return
        if not _put(q, stop, (_OK, result)):
            return
        _yield_to_consumer(q)
    _put(q, stop, (_END, None))


def _yield_to_consumer(q) -> None:
    """While the queue is full, wait up to :data:`YIELD_S` (a ``get`` ends the wait)."""
    with q.not_full:
        if len(q.queue) >= q.maxsize:
            q.not_full.wait(YIELD_S)


def _shutdown(q, stop, thread):
    stop.set()
    while True:
        try:
            q.get_nowait()
        except queue.Empty:
            break
    if thread is not threading.current_thread():
        thread.join(timeout=10.0)


class Prefetcher:
    """Compute ``produce(item)`` for each item on one background thread, in order.

    Parameters
    ----------
    produce : callable
        ``item -> result``; runs on the worker thread (must not touch consumer state).
    items : iterable
        The work items, consumed on the worker thread.
    depth : int
        Queue capacity: at most ``depth`` results wait for the consumer.
    name : str
        Thread name (for debugging).

    Notes
    -----
    ``get`` is meant to be called by one consumer thread.
    """

    def __init__(self, produce, items, depth, name="ndd-prefetch"):
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"prefetch depth must be a positive integer; got {depth!r}")
        self._queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._done = False
        self._thread = threading.Thread(
            target=_produce_all, args=(produce, items, self._queue, self._stop),
            name=name, daemon=True)
        self._thread.start()
        self._finalizer = weakref.finalize(self, _shutdown, self._queue, self._stop,
                                           self._thread)

    def get(self):
        """Return the next result (blocking).

        Raises
        ------
        StopIteration
            When all items were returned, or after ``close``.
        BaseException
            Whatever ``produce`` raised for this item (the worker stops after it).
        """
        if self._done:
            raise StopIteration
        while True:
            try:
                kind, payload = self._queue.get(timeout=_POLL_S)
                break
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    self._done = True
                    raise StopIteration from None
        if kind == _OK:
            return payload
        self._done = True
        self._finalizer()
        if kind == _ERROR:
            raise payload
        raise StopIteration

    def close(self):
        """Stop the worker thread and drop prefetched results (idempotent)."""
        self._done = True
        self._finalizer()

    @property
    def alive(self):
        """Whether the worker thread is still running."""
        return self._thread.is_alive()
