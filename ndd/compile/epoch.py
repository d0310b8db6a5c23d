"""``next_epoch(compile=True)``: the iterator and the loop driving trace, prefetch and replay."""
from __future__ import annotations

import itertools
import warnings

from compiler.explain import explain_graph
from ndd._callsite import loop_frame
from ndd._capture_state import pop_capture, push_capture
from ndd._rng import get_default_rng
from ndd._speculation import Speculation
from ndd.compile.early import drop_early, early_allowed, take_early
from ndd.compile.prefetch import BatchPrefetcher
from ndd.compile.replay import Replayer
from ndd.compile.reporting import start_report
from ndd.compile.trace import Template, Tracer, hand_out_handles

DEFAULT_QUEUE_DEPTH = 2


class NothingCapturedWarning(UserWarning, RuntimeWarning):
    """The traced iteration of a compiled loop made no replayable call: the loop runs eagerly
    (DALI 2.4 warns with a UserWarning; ndd's earlier RuntimeWarning is kept as a base)."""


class CompiledEpoch:
    """The iterator ``next_epoch(compile=True)`` returns.

    ``close()`` stops the prefetch worker and ends the source's epoch; merely dropping the
    iterator (e.g. after ``break``) stops the worker but leaves the epoch open, as in
    non-compiled iteration.
    """

    def __init__(self, gen, batches, loop):
        self._gen = gen
        self._batches = batches
        self._loop = loop

    def __iter__(self):
        return self

    def __next__(self):
        self._loop.frame = loop_frame(1)
        return next(self._gen)

    def close(self) -> None:
        self._gen.close()
        close = getattr(self._batches, "close", None)
        if close is not None:
            close()


def compiled_epoch(reader, batches, queue_depth: int | None = None) -> CompiledEpoch:
    """``next_epoch(compile=True)``: trace the first batch (unless the source already has a
    template), then replay; see :class:`CompiledEpoch`."""
    if queue_depth is not None and (isinstance(queue_depth, bool) or
                                    not isinstance(queue_depth, int) or queue_depth < 1):
        raise ValueError(f"queue_depth must be a positive integer, got {queue_depth!r}")
    loop = Loop()
    return CompiledEpoch(_compiled_epoch(reader, batches, queue_depth, loop), batches, loop)


class Loop:
    """The user frame running the compiled loop (call-site keys stop there)."""

    frame = None


def _compiled_epoch(reader, batches, queue_depth, loop):
    depth = queue_depth or getattr(reader, "compile_queue_depth", DEFAULT_QUEUE_DEPTH)
    rep = start_report()
    template = getattr(reader, "compile_template", None)
    prefetch = None
    source = batches    # the reader's iterator (``batches`` may become a chain below)
    handed = [0]        # batches the body got (the rest of what the source gave: read ahead)
    try:
        if template is None:
            first = next(batches, None)
            if first is None:
                return
            tracer = Tracer([h._value for h in first], loop)
            handed[0] += 1
            yield from _hand_out(first, tracer, 0)
            rep.traced = len(tracer.entries)
            if not tracer.entries:
                warnings.warn("next_epoch(compile=True): no operators were captured during "
                              "tracing (the loop body made no replayable ndd calls); running "
                              "eagerly", NothingCapturedWarning, stacklevel=2)
                reader.compile_template = False
                # as DALI: the source is back to no mode, so eager iteration may follow
                reader._compiled = None
                yield from batches
                return
            template = Template(tracer)
            # [side inputs] ExternalSources the traced body called (ndd/_external_feeders.py)
            template.side_inputs = getattr(tracer, "side_inputs", None)
            reader.compile_template = template
        elif template is False:
            yield from batches
            return
        rep.traced = len(template.entries)
        # the generators of this epoch: rng=None calls draw from the loop thread's default
        # generator as it is now (a set_seed between epochs has reseeded it)
        rngs = {m: (get_default_rng() if e.rng_default else e.rng)
                for m, e in enumerate(template.entries) if e.rng is not None}
        unique = list({id(g): g for g in rngs.values()}.values())
        batch = 0           # the number of the next batch handed to the body
        # [side inputs] the body's feeders are polled with the source; the body gets the
        # source's part of each item, the feeders answer with theirs
        side = getattr(template, "side_inputs", None)
        if side is not None:
            batches = source = side.feed(batches)
        feed = batches      # what the prefetcher reads (after a restart: a chain)
        count = getattr(source, "count_delivered", None)
        if count is not None:   # an open epoch's "not fully consumed" counts what the body got
            count(lambda: handed[0])
        spec = Speculation(unique)
        # the runs the last epoch began on this one's first batches (ndd/compile/early.py)
        early = take_early(reader)
        ahead = reader if early_allowed(template, reader) else None
        prefetch = BatchPrefetcher(template, feed, depth, rngs, spec, batch, early, ahead)
        while True:
            item = prefetch.get()
            if item is None:
                break
            if item[0] == "error":
                raise item[1]
            if item[0] == "broken":
                # the prefetcher stopped before this batch (its early draws were given back):
                # prefetch again from here, drawing where eager execution has the generators
                spec, prefetch, feed = _respeculate(prefetch, feed, template, depth, rngs,
                                                   unique, batch)
                rep.respeculated += 1
                continue
            _, handles, inst, fut = item
            # when the plan failed (a corrupt file, a crop that does not fit one image), the
            # batch's calls run again one by one, as eagerly; their errors are raised where
            # the body consumes the failed values (inside the body, as in eager execution,
            # and only for what it consumes)
            if fut.exception() is not None:
                inst.settle_failed(fut.exception())
            # also after a give-back the batch is handed out: its results that depend on no
            # random call stand, and its random calls run eagerly (consume() is False then)
            replayer = Replayer(template, inst, rep, loop, rngs, spec, batch)
            handed[0] += 1
            if side is not None:    # [side inputs]
                handles = side.split(handles, replayer)
            yield from _hand_out(handles, replayer, batch)
            spec.end_batch(batch)
            batch += 1
            if spec.broken:     # prefetch again from the next batch on
                spec, prefetch, feed = _respeculate(prefetch, feed, template, depth, rngs,
                                                   unique, batch)
                rep.respeculated += 1
        if template.last_plan is not None:
            rep.plan_text = explain_graph(template.last_plan)
    finally:
        if prefetch is not None:
            unused = prefetch.close()
            prefetch.spec.give_back()   # the seeds of batches never handed out
            give_back = getattr(source, "give_back", None)
            if give_back is not None and unused:
                give_back(len(unused))  # and the reader's read-ahead
                drop_early(reader)      # (the epoch is open again: not the next one's)


def _hand_out(handles, capture, iteration: int):
    """Give ``handles`` (as CapturedBatches) to the loop body with ``capture`` (the tracer or
    the replayer) answering its ndd calls; after the body's iteration, RuntimeError if another
    compiled epoch advanced meanwhile."""
    handles = hand_out_handles(handles, iteration)
    stack = push_capture(capture)
    try:
        yield handles
    finally:
        # False: another epoch advanced meanwhile (the stack: a generator may be finalised
        # on another thread)
        alone = pop_capture(capture, stack)
    if not alone:
        raise RuntimeError(_INTERLEAVED)


def _respeculate(prefetch, feed, template, depth, rngs, unique, batch):
    """A new speculation and prefetcher from batch ``batch`` on: the batches the old one took
    but did not hand out come first, then the rest of its feed (nothing is lost or
    repeated)."""
    unused = prefetch.close()
    prefetch.spec.give_back()
    feed = itertools.chain(unused, feed)
    spec = Speculation(unique)
    return spec, BatchPrefetcher(template, feed, depth, rngs, spec, batch), feed


_INTERLEAVED = ("next_epoch(compile=True): another compiled epoch was advanced while this one "
                "was between iterations (e.g. two compiled readers zipped in one loop): their "
                "calls cannot be told apart. Iterate one compiled epoch at a time (a compiled "
                "loop may run inside another's body), or use next_epoch() without compile for "
                "the other reader")
