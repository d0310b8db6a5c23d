"""ExternalSources called in the body of a compile-mode loop over a reader
(``reader.next_epoch(batch_size=N, capture=True)``): DALI 2.4's *feeders* of that loop.

A feeder's outputs become inputs of the loop's traced graph, like the reader's: in the traced
step the feeder is polled in the body and its values are registered with the tracer; from then
on compile mode polls the feeders with the reader, ahead of the body (``ndd.compile.epoch``
asks the template's ``side_inputs``, a :class:`SideInputs`, for the items it prefetches and
hands the body the reader's part), and a feeder's call in the body returns what was polled for
that step. Tensor items are broadcast to the step's batch size (the reader batch's).

The rules are those of a captured ExternalSource's feeders (``ndd._external_capture``): one
call per step, in every step from the traced one on, one loop per feeder, not also used
eagerly. A feeder stays bound to its reader's loop across epochs, as the reader keeps its
trace; a loop that was left during its traced step or that captured nothing unbinds its
feeders (they may be used eagerly again).
"""
from __future__ import annotations

import collections

from ndd._capture_state import current_capture
from ndd._captured import CapturedBatch
from ndd._external_capture import Role, check_feeder_role
from ndd.compile.trace import Tracer


class SideInputs:
    """The feeders of one compile-mode loop over a reader (the hook ``ndd.compile.epoch``
    calls: :meth:`feed` once per replayed epoch, :meth:`split` once per replayed step)."""

    def __init__(self, n_root: int, batch_size: int):
        self.n_root = n_root            # the reader's outputs: the loop's first inputs
        self.batch_size = batch_size    # of the traced step
        self.feeders: list = []
        self.read: set[int] = set()
        self.slots: dict[int, tuple] = {}
        self.fed = False                # a replayed epoch began (the loop has a template)
        self.open_step = False
        self.iteration = 0
        self.current: SideFeed | None = None    # the feed of the epoch being replayed

    def input_offset(self, es) -> int:
        """Index of ``es``'s first output among the loop's inputs."""
        k = self.n_root
        for f in self.feeders:
            if f is es:
                return k
            k += f.num_outputs
        raise KeyError(es)

    def feed(self, batches) -> "SideFeed":
        """The items compile mode prefetches: the reader's, then every feeder's outputs."""
        self.fed = True
        self.open_step = False
        self.current = SideFeed(self, batches)
        return self.current

    def split(self, handles, replayer) -> tuple:
        """One replayed step's item: the reader's handles (for the body); the feeders'
        outputs wait in their slots for the feeders' calls.

        Raises
        ------
        RuntimeError
            A feeder that was not called in the previous step.
        """
        self.check_consumed()
        if self.current is not None:
            self.current.handed()
        n = self.n_root
        self.iteration += 1
        self.slots = {}
        for f in self.feeders:
            k = self.input_offset(f)
            self.slots[id(f)] = tuple(CapturedBatch(h._value, ("source", k + j), self.iteration)
                                      for j, h in enumerate(handles[k:k + f.num_outputs]))
        self.read = set()
        self.open_step = True
        replayer.side_inputs = self
        return tuple(handles[:n])

    def check_consumed(self) -> None:
        """Raises RuntimeError when a feeder was not called in the step that ended."""
        if not self.open_step:
            return
        self.open_step = False
        missing = [f for f in self.feeders if id(f) not in self.read]
        if missing:
            raise RuntimeError(f"{missing[0].what()}: An ExternalSource was not consumed this "
                               f"step (a feeder of a captured loop is called once in every "
                               f"step)")

    def mark_read(self, es) -> None:
        if id(es) in self.read:
            raise RuntimeError(f"{es.what()}: An ExternalSource may be read only once per "
                               f"capture-mode step")
        self.read.add(id(es))

    def unbind(self) -> None:
        """The loop will not replay (left during tracing, or nothing captured)."""
        for f in self.feeders:
            if f.capture_ctx is self:
                f.capture_ctx = None
                f.role = Role.UNUSED


class SideFeed:
    """The reader's batches with the feeders' outputs appended (copies, polled on the
    prefetch thread). ``give_back`` returns the feeders' read-ahead to them and passes the
    count on to the reader; other attributes are the reader iterator's."""

    def __init__(self, side: SideInputs, batches):
        self.side = side
        self.inner = batches
        # per item given out and not yet handed to the body: [(feeder, raw item)]
        self.polled: collections.deque = collections.deque()

    def __iter__(self):
        return self

    def __next__(self):
        handles = tuple(next(self.inner))
        n = handles[0].batch_size if handles and hasattr(handles[0], "batch_size") \
            else self.side.batch_size
        outs = list(handles)
        items = []
        for f in self.side.feeders:
            try:
                item = f.pull()
            except StopIteration:
                raise RuntimeError(f"{f.what()}: A source was exhausted before the iteration "
                                   f"ended (a feeder of a captured loop ended before its "
                                   f"reader)") from None
            items.append((f, item))
            # a Batch item has the loop's batch size; a Tensor is broadcast to the step's
            outs.extend(f.convert(item, self.side.batch_size, copy=True, broadcast=n))
        self.polled.append(items)
        return tuple(outs)

    def handed(self) -> None:
        """The oldest item given out reached the body (its feeders' items are not kept)."""
        if self.polled:
            self.polled.popleft()

    def give_back(self, count: int) -> None:
        """The last ``count`` items never reached the body: the feeders' parts go back to
        them, and the count to the reader."""
        if count > 0:
            back = [self.polled.pop() for _ in range(min(count, len(self.polled)))][::-1]
            per_feeder: dict[int, tuple] = {}
            for items in back:
                for f, item in items:
                    per_feeder.setdefault(id(f), (f, []))[1].append(item)
            for f, fitems in per_feeder.values():
                f.poll.push_back(fitems)
        inner = getattr(self.inner, "give_back", None)
        if inner is not None:
            inner(count)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def loop_of(capture):
    """The :class:`SideInputs` of the compile-mode loop whose tracer / replayer ``capture``
    is (created at the first feeder of a traced step), or None when ``capture`` is neither."""
    side = getattr(capture, "side_inputs", None)
    if side is None and isinstance(capture, Tracer):
        roots = [p[1] for p in capture.prov.values() if p[0] == "reader"]
        side = capture.side_inputs = SideInputs(max(roots) + 1 if roots else 0,
                                                capture.reader_n)
    return side


def side_feeder_call(es, capture, batch_size):
    """``es()`` in the body of a compile-mode loop over a reader (``capture``: its tracer or
    replayer): trace a feeder, or return its outputs polled for this step.

    Raises
    ------
    RuntimeError
        As a captured ExternalSource's feeders (see ``ndd._external_capture.feeder_call``).
    """
    side = loop_of(capture)
    if side is None:        # a replayed step of a loop whose traced step called no feeder
        raise RuntimeError(f"{es.what()}: ExternalSource wasn't seen during tracing (a feeder "
                           f"of a captured loop is called in every step, the first included)")
    check_feeder_role(es, side)
    if isinstance(capture, Tracer):
        n = side.batch_size
        if batch_size is not None and batch_size != n:
            raise RuntimeError(f"Cannot change batch size to {batch_size}, the capture-mode "
                               f"loop uses {n}.")
        side.mark_read(es)
        outs = es.convert(es.pull(), n)
        if not any(f is es for f in side.feeders):
            side.feeders.append(es)
            es.capture_ctx = side
            es.role = Role.FEEDER
        first = side.input_offset(es)
        for j, b in enumerate(outs):
            capture.prov[b._value.id] = ("reader", first + j)
        return es.shape(tuple(CapturedBatch(b._value, ("source", first + j), 0)
                              for j, b in enumerate(outs)))
    if not any(f is es for f in side.feeders):
        raise RuntimeError(f"{es.what()}: ExternalSource wasn't seen during tracing (a feeder "
                           f"of a captured loop is called in every step, the first included)")
    outs = side.slots[id(es)]
    if batch_size is not None and batch_size != outs[0].batch_size:
        raise RuntimeError(f"Cannot change batch size to {batch_size}, the capture-mode loop "
                           f"uses {outs[0].batch_size}.")
    side.mark_read(es)
    return es.shape(outs)


def release_if_abandoned(es) -> None:
    """Called before an eager call of a feeder: when its loop never replayed and no compiled
    body runs now (it was left during tracing, or captured nothing and ran eagerly), unbind
    it (and the loop's other feeders), as DALI's teardown does."""
    side = es.capture_ctx
    if isinstance(side, SideInputs) and not side.fed and current_capture() is None:
        side.unbind()


__all__ = ["SideFeed", "SideInputs", "loop_of", "release_if_abandoned", "side_feeder_call"]
