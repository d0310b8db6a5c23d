"""One epoch of a reader: its bookkeeping (:class:`EpochRun`) and its iterator
(:class:`EpochIterator`), which moves the reader's position as items are handed out."""
from __future__ import annotations

import collections
import threading

from runtime.readers.prefetch import Prefetcher
from runtime.readers.sharding import epoch_order, split_batches

__all__ = ["EpochRun", "EpochIterator", "ReadAhead", "Peekable"]


class EpochRun:
    """Bookkeeping of the epoch in progress (consumer side)."""

    __slots__ = ("epoch", "order", "position", "finished", "iterator", "__weakref__")

    def __init__(self, epoch, order, position):
        self.epoch = epoch
        self.order = order
        self.position = position  # index into `order` of the next sample to deliver
        self.finished = False
        self.iterator = None  # weakref to the EpochIterator


class EpochIterator:
    """Iterator over one epoch of a ``FileReaderCore``.

    Yields ``(encoded, label)`` per sample, or ``(list of encoded, list of labels)`` per
    batch (plus a list of dataset indices when ``return_indices=True``). ``close()`` ends the
    epoch early; the reader's next ``next_epoch`` then starts the following epoch.
    """

    def __init__(self, reader, run, prefetcher, batch_size, with_indices):
        self._reader = reader
        self._run = run
        self._prefetcher = prefetcher
        self._batch_size = batch_size
        self._with_indices = with_indices
        self._pending = []  # sample mode: samples of the current chunk not yet delivered
        self._counts = []   # batch mode: samples counted for each batch handed out
        # compile mode: () -> how many of the batches handed out its loop body got (the rest
        # were read ahead); None: every batch handed out was consumed
        self.delivered = None

    @property
    def batch_size(self):
        """The batch size (None: per sample)."""
        return self._batch_size

    @property
    def with_indices(self) -> bool:
        """Whether the items carry the samples' dataset indices."""
        return self._with_indices

    def __iter__(self):
        return self

    def __next__(self):
        if self._run.finished:
            raise StopIteration
        try:
            return self._next_item()
        except StopIteration:
            raise
        except BaseException:
            self.close()  # a failed read ends the epoch; the next one can start
            raise

    def _next_item(self):
        if self._batch_size is not None:
            item = self._prefetcher.get()
            count = min(self._batch_size, len(self._run.order) - self._run.position)
            self._counts.append(count)
            self._reader.advance(self._run, count)
            return tuple(item)
        if not self._pending:
            chunk = self._prefetcher.get()
            self._pending = list(zip(*chunk))[::-1]
        sample = self._pending.pop()
        self._reader.advance(self._run, 1)
        return sample

    def give_back(self, batches: int) -> None:
        """Count the last ``batches`` batches as not read: a compiled loop's prefetcher read
        them ahead but the loop body never got them (it left the epoch early), so the
        epoch's position -- and the "not fully consumed" check of the next ``next_epoch`` --
        is that of the batches the body got.  The batches themselves are not delivered again;
        ``close()`` still ends the epoch."""
        batches = min(int(batches), len(self._counts))
        if batches <= 0:
            return
        count = sum(self._counts[-batches:])
        del self._counts[-batches:]
        self._reader.unadvance(self._run, count)

    def consumed(self) -> int:
        """Samples the consumer got: the position, less what a compiled loop read ahead."""
        got = self.delivered() if self.delivered is not None else len(self._counts)
        return self._run.position - sum(self._counts[max(0, got):])

    def close(self):
        """End this epoch now (remaining samples are skipped) and stop prefetching."""
        self.delivered = None       # closed: what was not delivered is skipped, not pending
        self._prefetcher.close()
        self._reader.finish(self._run)

    def __len__(self):
        """Number of items (batches or samples) this iterator yields in total."""
        n = len(self._run.order)
        return n if self._batch_size is None else -(-n // self._batch_size)


class ReadAhead:
    """A reader's next epoch begun early: when a compiled loop read an epoch to its end (its
    body has not got the last batches yet), a prefetcher already reading the next epoch's
    first batches, as DALI's pipeline reads on across epochs, so that the loop's next epoch
    does not start with an empty queue.

    Only what the reader's next ``next_epoch`` would read anyway with the same arguments: the
    epoch's order from its start, in batch mode (the prefetcher reads at most its depth + 1
    batches ahead, then waits); nothing of the reader's state (epoch, position, checkpoints)
    moves.  :meth:`take` hands it to a ``next_epoch`` with the same arguments (else drops
    it); the reader drops it on ``close`` or a give-back that reopens the epoch.  A read error
    is raised where it would be, at its batch of the epoch.  The prefetcher is a
    :class:`Peekable`: the compiled loop may take the first batches before that
    ``next_epoch`` (to begin their ops too); the epoch's iterator still delivers them.  Eager and deferred iteration (no
    compiled loop) never read ahead."""

    __slots__ = ("key", "prefetcher")

    def __init__(self):
        self.key = self.prefetcher = None

    def start(self, run, epoch, spec, depth, make_loader, index, name) -> None:
        """After ``run`` finished: begin epoch ``epoch`` if a compiled loop read ``run`` to
        its end (``make_loader(index, with_indices)``: the reader's loader)."""
        it = run.iterator() if run.iterator is not None else None
        if self.prefetcher is not None or it is None or it.delivered is None or \
                run.position < len(run.order) or it.batch_size is None:
            return
        items = split_batches(epoch_order(spec, epoch), it.batch_size, spec.pad_last_batch)
        self.key = (epoch, it.batch_size, it.with_indices)
        self.prefetcher = Peekable(Prefetcher(make_loader(index, it.with_indices), items,
                                              depth, name=name))

    def peek(self):
        """The next batch of the epoch begun early that nobody has taken, read now if need
        be; it stays the epoch's (its iterator delivers it in its place).  None when no epoch
        was begun early, it started already, or it has no batch left before its end or a
        read error (left for its iterator to raise); see :meth:`Peekable.peek`."""
        pf = self.prefetcher        # (one read: ``take`` may drop it meanwhile)
        return pf.peek() if pf is not None else None

    @staticmethod
    def unfinished(run):
        """``run`` (a reader's last finished one) when a compiled loop read it to the end but
        its body has not got every batch yet (its iterator alive and not closed), else
        None."""
        it = run.iterator() if run is not None and run.iterator is not None else None
        if it is None or it.delivered is None or it.consumed() >= len(run.order):
            return None
        return run

    def take(self, epoch, batch_size, with_indices, from_start: bool):
        """The prefetcher, if begun for this epoch from its start with these arguments (else
        None, and it is dropped)."""
        pf, key = self.prefetcher, self.key
        self.key = self.prefetcher = None
        if pf is not None and from_start and key == (epoch, batch_size, with_indices):
            return pf
        if pf is not None:
            pf.close()
        return None

    def drop(self) -> None:
        self.take(None, None, None, False)


class Peekable:
    """A :class:`Prefetcher` whose first results can be taken before its consumer starts
    (:meth:`peek`); :meth:`get` then returns them first, in order, and the rest as the
    prefetcher's ``get`` (a read error met by a peek is raised by ``get`` at its item)."""

    __slots__ = ("_pf", "_lock", "_kept", "_started", "_ended")

    def __init__(self, prefetcher):
        self._pf = prefetcher
        self._lock = threading.Lock()
        self._kept = collections.deque()    # (True, item) / (False, its read error)
        self._started = False               # the consumer called get
        self._ended = False                 # a peek met the end or an error, or closed

    def peek(self):
        """The next item not yet taken (blocking while it is read), kept for :meth:`get`;
        None once the consumer began, at the end, at a read error (kept for ``get``) or
        after :meth:`close`."""
        with self._lock:
            if self._started or self._ended:
                return None
            try:
                item = self._pf.get()
            except StopIteration:
                self._ended = True
                return None
            except BaseException as exc:  # noqa: BLE001 - raised by get, at its item
                self._kept.append((False, exc))
                self._ended = True
                return None
            self._kept.append((True, item))
            return item

    def get(self):
        """The next item: a peeked one first, then the prefetcher's (see ``Prefetcher.get``)."""
        with self._lock:
            self._started = True
            if self._kept:
                ok, item = self._kept.popleft()
                if not ok:
                    raise item
                return item
        return self._pf.get()

    def close(self) -> None:
        """Stop the prefetcher; what was peeked and not delivered is dropped."""
        self._ended = True          # (first: a peek waiting on its read stops there)
        self._pf.close()
        with self._lock:
            self._kept.clear()
