"""Seeds drawn ahead of the loop body in compile mode, checked against eager order.

A compiled epoch's prefetcher instantiates the traced batch graph for the next batches before
the body runs them, so it draws their random seeds early.  That equals eager execution only
while the body then makes exactly the traced random calls, in the traced order, and nothing
else draws from those generators in between.  :class:`Speculation` records every early draw
(batch, entry, the generator's state before it) and checks each replayed random call against
the next recorded draw of its generator.  Anything else -- a traced random call skipped or
taken out of order, a random call that is not replayed, any other use of the generator
(``rng()``, ``get_state``, another thread, another compiled loop), the end of a batch with
draws left over -- *gives back* the early draws: each generator returns to its state before
the first draw the body has not consumed (its eager position), the speculation stops, and the
caller re-prefetches from the next batch on.  The result is the eager random stream, always;
only the prefetched work is lost.
"""
from __future__ import annotations

import collections
import threading

__all__ = ["Speculation", "SpeculationBroken"]


class SpeculationBroken(Exception):
    """Raised to the prefetcher when its early draws were given back."""


class Speculation:
    """The early draws of one prefetcher from ``rngs`` (``ndd.random.RNG`` objects).

    Attaching to a generator that another speculation still holds gives that one's draws
    back first (its loop stopped using the generator).
    """

    def __init__(self, rngs):
        self._lock = threading.Lock()
        self._pending = {id(g): (g, collections.deque()) for g in rngs}
        self.broken = False
        for g in rngs:
            old = g._spec
            if old is not None and old is not self:
                old.give_back()
            g._spec = self

    def draw_ahead(self, rng, batch: int, entry: int, n: int) -> tuple:
        """The prefetcher's draw of ``n`` seeds for ``entry`` of ``batch`` (recorded)."""
        with self._lock:
            if self.broken:
                raise SpeculationBroken
            state = rng._raw_state()
            seeds = rng._draw_raw(n)
            self._pending[id(rng)][1].append((batch, entry, state))
            return seeds

    def consume(self, rng, batch: int, entry: int) -> bool:
        """The body makes the random call ``entry`` of ``batch`` on ``rng``: True when that is
        the generator's next early draw (its seeds stand); otherwise everything is given back
        and the call must run eagerly (False)."""
        with self._lock:
            if self.broken:
                return False
            dq = self._pending.get(id(rng), (None, ()))[1]
            if dq and dq[0][0] == batch and dq[0][1] == entry:
                dq.popleft()
                return True
            self._give_back_locked()
            return False

    def end_batch(self, batch: int) -> None:
        """The body is done with ``batch``: early draws of it (or before) left over mean it
        skipped traced random calls: give everything back."""
        with self._lock:
            if not self.broken and any(dq and dq[0][0] <= batch
                                       for _, dq in self._pending.values()):
                self._give_back_locked()

    def foreign(self, rng) -> None:
        """``rng`` is used by someone else than the prefetcher (see ``RNG._hook``)."""
        self.give_back()

    def give_back(self) -> None:
        """Return every generator to its eager position and stop (idempotent)."""
        with self._lock:
            if not self.broken:
                self._give_back_locked()

    def _give_back_locked(self) -> None:
        self.broken = True
        for g, dq in self._pending.values():
            if dq:
                g._restore(dq[0][2])
                dq.clear()
            if g._spec is self:
                g._spec = None
