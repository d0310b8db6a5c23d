"""Seeds drawn ahead of the loop body in compile mode, checked against eager order.

A compiled epoch's prefetcher instantiates the traced batch graph for the next batches before
the body runs them, so it draws their random seeds early.  It draws them from a *copy* of each
generator (taken when the speculation starts, with the generator where eager execution has
it), never from the generator itself: the user's generator only moves when the body makes a
random call, so reading it (``get_state``, ``rng.state``) in the body is always the eager
state and costs nothing.

:class:`Speculation` records every early draw (batch, entry, the copy's state before and after
it).  A replayed random call uses its early seeds only when it is its generator's next early
draw *and* the generator is in the state the copy drew from -- then the seeds are exactly those
eager execution would draw, and the generator is moved past them (to the copy's state after the
draw), as the eager draw would have.  Anything else -- a traced random call skipped or taken
out of order, a random call that is not replayed, any other use of the generator (``rng()``,
``set_state``, a reseed, another thread or compiled loop), draws left over at the end of a
batch -- *gives back* the early draws: they are dropped (the generator, never touched by them,
is already where eager execution has it), the speculation stops, and the caller re-prefetches
from the next batch on.  The result is the eager random stream, always; only the prefetched
work is lost.
"""
from __future__ import annotations

import collections
import threading

__all__ = ["Speculation", "SpeculationBroken"]


class SpeculationBroken(Exception):
    """Raised to the prefetcher when its early draws were given back."""


class Speculation:
    """The early draws of one prefetcher from ``rngs`` (``ndd.random.RNG`` objects), made
    from copies of them taken now (each generator must be at its eager position: no draw of
    another speculation pending on it, which the copies make true by construction)."""

    def __init__(self, rngs):
        self._lock = threading.Lock()
        # id -> (generator, its copy the prefetcher draws from, pending early draws)
        self._pending = {id(g): (g, g.clone(), collections.deque()) for g in rngs}
        self.broken = False

    def draw_ahead(self, rng, batch: int, entry: int, n: int) -> tuple:
        """The prefetcher's draw of ``n`` seeds for ``entry`` of ``batch`` (recorded)."""
        with self._lock:
            if self.broken:
                raise SpeculationBroken
            _, copy, dq = self._pending[id(rng)]
            before = copy._raw_state()
            seeds = copy._draw_raw(n)
            dq.append((batch, entry, before, copy._raw_state()))
            return seeds

    def consume(self, rng, batch: int, entry: int) -> bool:
        """The body makes the random call ``entry`` of ``batch`` on ``rng``: True when that is
        the generator's next early draw and the generator is where the copy drew it (its
        seeds stand; the generator moves past them); otherwise everything is given back and
        the call must run eagerly (False)."""
        with self._lock:
            if self.broken:
                return False
            dq = self._pending.get(id(rng), (None, None, ()))[2]
            if dq and dq[0][0] == batch and dq[0][1] == entry and \
                    rng._raw_state() == dq[0][2]:
                rng._restore(dq.popleft()[3])
                return True
            self._give_back_locked()
            return False

    def end_batch(self, batch: int) -> None:
        """The body is done with ``batch``: early draws of it (or before) left over mean it
        skipped traced random calls, and a generator that is not where the next early draw
        (or the copy) expects it was used by someone else: either gives everything back."""
        with self._lock:
            if self.broken:
                return
            for g, copy, dq in self._pending.values():
                if dq and dq[0][0] <= batch:
                    self._give_back_locked()
                    return
                expected = dq[0][2] if dq else copy._raw_state()
                if g._raw_state() != expected:
                    self._give_back_locked()
                    return

    def foreign(self, rng) -> None:
        """``rng`` is used by someone else than the prefetcher: give everything back (not
        needed for correctness -- :meth:`consume` checks the generator's state -- but it
        stops prefetching work that cannot be used)."""
        self.give_back()

    def give_back(self) -> None:
        """Drop the early draws and stop (idempotent); the generators are untouched."""
        with self._lock:
            if not self.broken:
                self._give_back_locked()

    def _give_back_locked(self) -> None:
        self.broken = True
        for _, _, dq in self._pending.values():
            dq.clear()
