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


class _Shared:
    """What the worker thread and the consumer share, guarded by ``q.mutex``: the results in
    order (``q.queue``), the work items, and whether an item is being produced (by either
    thread: at most one at a time, so ``produce`` never runs concurrently with itself)."""

    __slots__ = ("q", "items", "busy", "ended")

    def __init__(self, items, depth):
        self.q = queue.Queue(maxsize=depth)
        self.items = iter(items)
        self.busy = False
        self.ended = False      # every item claimed (an _END is or will be queued)

    def claim(self):
        """The next item, or ``_NONE`` at the end (queues _END); caller holds ``q.mutex``."""
        item = next(self.items, _NONE)
        if item is _NONE:
            self.ended = True
            self.q.queue.append((_END, None))
            self.q.not_empty.notify()
        else:
            self.busy = True
        return item


_NONE = object()


def _produce_all(produce, shared, stop):
    # Runs on the worker thread. Holds no reference to the Prefetcher, so dropping the
    # Prefetcher triggers its finalizer, which stops this loop.
    q = shared.q
    while True:
        with q.mutex:
            while shared.busy and not stop.is_set():    # the consumer reads one itself
                q.not_full.wait(_POLL_S)
            if stop.is_set() or shared.ended:
                return
            item = shared.claim()
            if item is _NONE:
                return
        try:
            result = (_OK, produce(item))
        except BaseException as e:  # re-raised by the consumer
            result = (_ERROR, e)
        with q.mutex:
            while len(q.queue) >= q.maxsize and not stop.is_set():
                q.not_full.wait(_POLL_S)
            shared.busy = False
            if stop.is_set():
                return
            q.queue.append(result)
            q.not_empty.notify()
            if result[0] == _ERROR:
                shared.ended = True
                return
        _yield_to_consumer(q)


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
    """Compute ``produce(item)`` for each item ahead of the consumer on one background
    thread, in order.

    A consumer that asks for the next result when nobody has begun it (the thread has not
    got the GIL back yet, or waits its turn) produces it itself, on its own thread: it would
    wait for it anyway, and two thread hand-offs a result (GIL, wake-ups) cost more than the
    read of a small batch (issue 17: 2-3 us a sample). At most one item is produced at any
    time, by either thread, each item exactly once, and results come in the items' order.

    Parameters
    ----------
    produce : callable
        ``item -> result``; runs on the worker thread or the consumer's (must not touch
        consumer state; never called concurrently with itself).
    items : iterable
        The work items, taken one at a time under the prefetcher's lock.
    depth : int
        Queue capacity: at most ``depth`` results wait for the consumer (the thread may
        produce one more meanwhile, after the :data:`YIELD_S` pause).
    name : str
        Thread name (for debugging).

    Notes
    -----
    ``get`` is meant to be called by one consumer thread.
    """

    def __init__(self, produce, items, depth, name="ndd-prefetch"):
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"prefetch depth must be a positive integer; got {depth!r}")
        self._shared = _Shared(items, depth)
        self._queue = self._shared.q
        self._produce = produce
        self._stop = threading.Event()
        self._done = False
        self._thread = threading.Thread(
            target=_produce_all, args=(produce, self._shared, self._stop),
            name=name, daemon=True)
        self._thread.start()
        self._finalizer = weakref.finalize(self, _shutdown, self._queue, self._stop,
                                           self._thread)

    def get(self):
        """Return the next result (blocking; produced here when nobody has begun it).

        Raises
        ------
        StopIteration
            When all items were returned, or after ``close``.
        BaseException
            Whatever ``produce`` raised for this item (nothing is produced after it).
        """
        if self._done:
            raise StopIteration
        shared, q = self._shared, self._queue
        item = _NONE
        with q.mutex:
            while True:
                if q.queue:
                    kind, payload = q.queue.popleft()
                    q.not_full.notify()
                    break
                if not shared.busy and not shared.ended and not self._stop.is_set():
                    item = shared.claim()
                    if item is not _NONE:
                        break
                    continue                # the end was queued
                if not shared.busy and not self._thread.is_alive():
                    self._done = True
                    raise StopIteration
                q.not_empty.wait(_POLL_S)
        if item is not _NONE:
            return self._produce_here(item)
        if kind == _OK:
            return payload
        self._done = True
        self._finalizer()
        if kind == _ERROR:
            raise payload
        raise StopIteration

    def _produce_here(self, item):
        shared, q = self._shared, self._queue
        try:
            result = self._produce(item)
        except BaseException:
            with q.mutex:
                shared.busy = False
                shared.ended = True
            self._done = True
            self._finalizer()
            raise
        with q.mutex:
            shared.busy = False
            # the thread may read the next item now: while this consumer holds the GIL it
            # cannot, so a fast consumer, back before that, reads the next one itself too
            q.not_full.notify()
        return result

    def close(self):
        """Stop the worker thread and drop prefetched results (idempotent)."""
        self._done = True
        self._finalizer()

    @property
    def alive(self):
        """Whether the worker thread is still running."""
        return self._thread.is_alive()
