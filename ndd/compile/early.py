"""The next epoch's first batches run before its ``next_epoch``: when a compiled loop's
prefetcher has taken its epoch's last batch and the reader began the next epoch early
(``runtime/readers/epoch.py`` ``ReadAhead``), the template is instantiated on that epoch's
first batches and run on the template's runner threads at once, as DALI's pipeline computes
its next iterations across an epoch boundary; the next compiled epoch adopts those runs
instead of starting them itself.

Only where that cannot change anything the loop sees: a template without random calls (no
seeds to draw ahead: an instance is a function of the template and the batch alone), without
side inputs, on the CPU, read from a CPU reader that can take its next epoch's batches early
(``peek_next_batch``).  A run is adopted only for the batch it was made on (the same sample
arrays, metadata and batch size, in order) and when nothing the plan depends on changed
meanwhile (which calls follow the reader's batch size, the compiler's options, passes and
observers); anything else drops the early runs and the batch runs as before.  The batches
themselves stay the reader's: its next epoch delivers them (or a read error) in their place,
so batches, states and errors are those of a loop without early runs.
"""
from __future__ import annotations

import threading
import weakref
from concurrent.futures import wait

from compiler import pipeline
from ndd.compile.replay import Instance

__all__ = ["EarlyBatches", "early_allowed", "take_early", "drop_early", "wait_all"]


def early_allowed(template, source) -> bool:
    """Whether a compiled epoch of ``template`` over ``source`` may begin the next epoch's
    first batches early (see the module docstring)."""
    return callable(getattr(source, "peek_next_batch", None)) and \
        getattr(source, "device", "cpu") == "cpu" and \
        getattr(template, "side_inputs", None) is None and bool(template.entries) and \
        all(e.rng is None and getattr(e.device, "kind", "cpu") == "cpu"
            for e in template.entries)


_live: weakref.WeakSet = weakref.WeakSet()     # every EarlyBatches started (for wait_all)


def wait_all(timeout: float | None = None) -> None:
    """Wait for the early runs of every compiled reader (tests that count compiles or
    threads: another test's reader may still be running its next epoch's batches)."""
    for early in list(_live):
        early.join(timeout)


def take_early(reader):
    """The :class:`EarlyBatches` begun for ``reader``'s next epoch (now this one's), or None;
    the reader keeps them (``compile_early``) until then."""
    early = getattr(reader, "compile_early", None)
    if early is not None:
        reader.compile_early = None
    return early


def drop_early(reader) -> None:
    """Stop the early runs begun for ``reader``'s next epoch, if any (the reader was closed,
    or its epoch reopened)."""
    early = take_early(reader)
    if early is not None:
        early.stop()


def _conditions(template) -> tuple:
    """What a batch's plan depends on besides the template's calls and the batch."""
    opts = pipeline.options()
    return (tuple(e.follows_reader for e in template.entries), tuple(pipeline.OBSERVERS),
            frozenset(pipeline.disabled_passes()), opts["max_lanes"], opts["check"])


class EarlyBatches:
    """Up to ``count`` of the next epoch's first batches, taken from ``source`` (its
    ``peek_next_batch()``: the batch as ``next_epoch`` will give it, or None) on a thread of
    their own, each instantiated on ``template`` and submitted to ``runner``.  The next
    compiled epoch calls :meth:`adopt` for its batches in order; :meth:`stop` cancels what is
    left."""

    def __init__(self, template, source, count: int, runner):
        self.template = template
        # (weak: the reader keeps these runs, they do not keep the reader)
        self._peek = weakref.WeakMethod(source.peek_next_batch)
        self._count = count
        self._runner = runner
        self._lock = threading.Lock()
        self._runs: list = []       # (reader values, instance, future, conditions), in order
        self._stopped = False
        self._thread = threading.Thread(target=self._fill, name="ndd-compile-early",
                                        daemon=True)

    def start(self) -> "EarlyBatches":
        _live.add(self)
        self._thread.start()
        return self

    def join(self, timeout: float | None = None) -> None:
        """Wait until the early batches are taken from the reader and their runs are done."""
        self._thread.join(timeout)
        with self._lock:
            futures = [fut for _, _, fut, _ in self._runs]
        wait(futures, timeout)

    def _fill(self) -> None:
        for _ in range(self._count):
            # the lock is held while the batch is read, so that the next epoch, which gets
            # it from the reader at the same time, finds its run in adopt
            with self._lock:
                if self._stopped:
                    return
                try:
                    peek = self._peek()
                    handles = peek() if peek is not None else None
                    del peek
                    if handles is None:
                        return
                    values = [h._value for h in handles]
                    cond = _conditions(self.template)
                    inst = Instance(self.template, values, {}, None, 0)
                except Exception:  # noqa: BLE001 - the next epoch meets it in its place
                    return
                try:
                    fut = self._runner.submit(inst.run, self.template, False)
                except RuntimeError:    # the runner shut down (interpreter exit)
                    return
                self._runs.append((values, inst, fut, cond))

    def adopt(self, values):
        """``(instance, future)`` of the early run made on the batch of ``values`` when it is
        the next one and still stands, else None (and every early run left is dropped)."""
        with self._lock:
            if self._runs and not self._stopped:
                early, inst, fut, cond = self._runs[0]
                if _same_batch(early, values) and cond == _conditions(self.template):
                    del self._runs[0]
                    inst.reader_values = values     # the handles the body gets
                    return inst, fut
            self._stop_locked()
            return None

    def stop(self) -> None:
        """Cancel the early runs not adopted (those begun finish; their results are
        dropped)."""
        with self._lock:
            self._stop_locked()

    def _stop_locked(self) -> None:
        self._stopped = True
        for _, _, fut, _ in self._runs:
            fut.cancel()
        self._runs = []


def _same_batch(early, values) -> bool:
    """``values`` hold the very samples (the same arrays) and metadata of ``early``."""
    if len(early) != len(values):
        return False
    for a, b in zip(early, values):
        if a.meta != b.meta or a.data is None or b.data is None or len(a.data) != len(b.data):
            return False
        if any(x is not y for x, y in zip(a.data, b.data)):
            return False
    return True
