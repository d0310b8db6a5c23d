"""One worker process as the pool's parent side sees it: its connection and the order of its
requests and replies (:class:`WorkerLane`)."""
from __future__ import annotations

import threading

from runtime import profile
from runtime.buffers import drop_cursor, dropped_since

__all__ = ["WorkerLane", "QUEUE_DEPTH"]

#: Requests one worker may hold at once: the one it runs plus those queued behind it.
QUEUE_DEPTH = 2


class WorkerLane:
    """A connected worker: ``index`` (0..n-1), its ``proc`` (``subprocess.Popen``) and
    ``conn`` (``multiprocessing.connection.Connection``).

    Several callers may have requests in flight on one worker (at most :data:`QUEUE_DEPTH`,
    counted in ``inflight`` by the pool under its condition).  The worker answers in request
    order, so :meth:`send` hands out tickets and :meth:`receive` lets each caller read the
    reply of its own ticket once the earlier replies were read.
    """

    def __init__(self, index, proc, conn):
        self.index = index
        self.proc = proc
        self.conn = conn
        self.drop_cursor = drop_cursor()     # shared segments it was told to unmap
        self.inflight = 0
        self._sent = 0
        self._received = 0
        self._send_lock = threading.Lock()
        self._turn = threading.Condition()

    def send(self, target: str, payload: bytes, settings) -> int:
        """Send one request (with the shared segments dropped since the last one, to unmap,
        and whether :mod:`runtime.profile` counts); returns its ticket.  Raises what the
        connection raises (EOFError, OSError)."""
        with self._send_lock:
            sync, cursor = dropped_since(self.drop_cursor)
            self.conn.send((target, payload, sync, settings, profile.active()))
            self.drop_cursor = cursor
            self._sent += 1
            return self._sent - 1

    def receive(self, ticket: int):
        """The reply ``(ok, payload)`` to request ``ticket``: waits until the replies before it
        were read.  A failed read still counts as read, so later callers get their own error
        from the connection instead of waiting forever."""
        with self._turn:
            while self._received != ticket:
                self._turn.wait()
            try:
                return self.conn.recv()
            finally:
                self._received += 1
                self._turn.notify_all()
