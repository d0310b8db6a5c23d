"""``ExternalSource.captured(batch_size=N)``: an ExternalSource as the root of a captured loop,
with the other ExternalSources the body calls (*feeders*) prefetched alongside it.

Built on compile mode (``ndd.compile.compiled_epoch``, the machinery of
``reader.next_epoch(compile=True)``): the first step runs eagerly and is traced, later steps
replay the trace on items prefetched ahead of the body. A feeder's outputs become inputs of
the traced graph like the root's: during the traced step it is polled in the body and its
values are registered with the tracer as loop inputs; from then on the prefetcher polls the
root and every feeder together, and a feeder's call in the body returns the values prefetched
for that step.

The rules are DALI 2.4's (``experimental.dynamic._capture`` / ``_external_source``):

* roles: an instance is used eagerly, or as a root (``captured()``), or as a feeder of one
  loop (bound to it for good), never two of these;
* a feeder is called exactly once per step, with the loop's batch size, and must have been
  called in the traced step; a feeder that ends before the root is an error, one that ends
  with it is a clean end of the epoch;
* leaving the loop early (``break``), an error, or a traced step without any replayable call
  ("no operators were captured") unbinds the root and its feeders: they may be used again in
  any way (and a later ``captured()`` traces again). ndd also gives back what the prefetcher
  read ahead: the next polls return those items first, so nothing is lost.
"""
from __future__ import annotations

import collections
import enum
import threading

from ndd._capture_state import current_capture
from ndd._captured import CapturedBatch
from ndd._external_callback import STOP
from ndd.compile import compiled_epoch


class Role(enum.Enum):
    """How an ExternalSource is used (DALI 2.4's roles, plus ndd's ``next_epoch``)."""

    UNUSED = enum.auto()
    EAGER = enum.auto()     # called outside captured loops
    FEEDER = enum.auto()    # called inside a captured loop (bound to it)
    ROOT = enum.auto()      # iterated with captured()
    EPOCHS = enum.auto()    # ndd: iterated with next_epoch


class State(enum.Enum):
    """Where a captured loop is."""

    IDLE = enum.auto()      # between epochs
    TRACING = enum.auto()   # the traced (eager) step
    REPLAY = enum.auto()    # a replayed step: feeders answer from the prefetched items
    DISABLED = enum.auto()  # torn down: calls run eagerly


_local = threading.local()


def _stack() -> list:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def active_context():
    """The captured loop whose body runs now on this thread (None outside any)."""
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


class CaptureContext:
    """One root's captured loop: its batch size, its feeders and the current step."""

    def __init__(self, root, batch_size: int):
        self.root = root
        self.batch_size = batch_size
        self.feeders: list = []         # in the order of their first call (traced step)
        self.state = State.IDLE
        self.read: set[int] = set()     # id() of the feeders called in this step
        self.slots: dict[int, tuple] = {}   # replayed step: feeder id -> prefetched outputs
        self.capture = None             # the compile-mode tracer / replayer of this step

    def check_batch_size(self, batch_size) -> None:
        """A feeder's ``batch_size`` is the loop's (or not given).

        Raises
        ------
        RuntimeError
            Otherwise (DALI's words).
        """
        if batch_size is not None and batch_size != self.batch_size:
            raise RuntimeError(f"Cannot change batch size to {batch_size}, the capture-mode "
                               f"loop uses {self.batch_size}.")

    def mark_read(self, es) -> None:
        """Note that ``es`` was called in this step.

        Raises
        ------
        RuntimeError
            For a second call in the step.
        """
        if id(es) in self.read:
            self.teardown()
            raise RuntimeError(f"{es.what()}: An ExternalSource may be read only once per "
                               f"capture-mode step")
        self.read.add(id(es))

    def input_offset(self, es) -> int:
        """Index of ``es``'s first output among the loop's inputs (root outputs first)."""
        k = self.root.num_outputs
        for f in self.feeders:
            if f is es:
                return k
            k += f.num_outputs
        raise KeyError(es)

    def teardown(self) -> None:
        """Unbind the root and the feeders (DALI's teardown); the next ``captured()`` traces
        again."""
        self.state = State.DISABLED
        for es in [self.root, *self.feeders]:
            if es.capture_ctx is self:
                es.capture_ctx = None
                es.role = Role.UNUSED
        self.root.compile_template = None


def captured_epoch(es, batch_size: int):
    """The iterator of ``es.captured(batch_size)``; binds ``es`` as the root now (before the
    first iteration, as DALI).

    Raises
    ------
    ValueError
        ``batch_size`` differs from the loop's (DALI: "Cannot change batch_size").
    """
    ctx = es.capture_ctx
    if ctx is not None and ctx.batch_size != batch_size:
        raise ValueError(f"{es.what()}: Cannot change batch_size from {ctx.batch_size} to "
                         f"{batch_size}")
    if ctx is None:
        ctx = es.capture_ctx = CaptureContext(es, batch_size)
        es.compile_template = None
    es.role = Role.ROOT
    return _epoch(es, ctx)


def _epoch(es, ctx):
    feed = Feed(es, ctx)
    inner = compiled_epoch(es, feed)
    n = es.num_outputs
    traces = es.compile_template is None       # compile mode traces this epoch's first step
    step = 0
    try:
        while True:
            try:
                handles = next(inner)
            except StopIteration:
                break
            feed.handed()
            if es.compile_template is False and ctx.state is not State.DISABLED:
                ctx.teardown()          # nothing replayable: the rest of the epoch is eager
            if ctx.state is State.DISABLED:
                yield es.shape(handles[:n])
                continue
            ctx.state = State.TRACING if traces and step == 0 else State.REPLAY
            ctx.capture = current_capture()
            ctx.read = set()
            ctx.slots = {}
            if ctx.state is State.REPLAY:
                for f in ctx.feeders:
                    k = ctx.input_offset(f)
                    ctx.slots[id(f)] = tuple(handles[k:k + f.num_outputs])
            stack = _stack()
            stack.append(ctx)
            try:
                yield es.shape(handles[:n])
            finally:
                _pop(stack, ctx)
            if ctx.state is not State.DISABLED:
                missing = [f for f in ctx.feeders if id(f) not in ctx.read]
                if missing:
                    ctx.teardown()
                    raise RuntimeError(f"{missing[0].what()}: An ExternalSource was not "
                                       f"consumed this step (a feeder of a captured loop is "
                                       f"called once in every step)")
            step += 1
    except BaseException:
        # break (GeneratorExit) or an error: stop the prefetcher (what it read ahead goes
        # back to the sources), then unbind; a later captured() traces again
        inner.close()
        ctx.teardown()
        raise
    finally:
        inner.close()
    if es.compile_template is False or ctx.state is State.DISABLED:
        ctx.teardown()
    elif step == 0 and traces:
        ctx.teardown()      # an empty source: nothing was bound
    else:
        ctx.state = State.IDLE


def _pop(stack: list, ctx) -> None:
    for k in range(len(stack) - 1, -1, -1):
        if stack[k] is ctx:
            del stack[k]
            return


class Feed:
    """The items a captured loop iterates: the root's next item and, once the traced step
    registered them, every feeder's, as one tuple of Batches (copies: the prefetcher polls
    ahead of the body, and a source may refill one buffer). Remembers what it polled, so that
    compile mode's ``give_back`` can return the items read ahead but never handed out."""

    def __init__(self, es, ctx: CaptureContext):
        self.es = es
        self.ctx = ctx
        # (root item, [(feeder, item)]) per tuple given out and not yet handed to the body
        self.polled: collections.deque = collections.deque()
        self.stopped = False

    def __iter__(self):
        return self

    def __next__(self):
        es, ctx = self.es, self.ctx
        try:
            item = es.pull()
        except StopIteration:
            self.stopped = True
            raise
        outs = list(es.convert(item, ctx.batch_size, copy=True))
        live = ctx.state is not State.DISABLED and es.compile_template is not False
        items = []
        for f in (list(ctx.feeders) if live else []):
            try:
                fitem = f.pull()
            except StopIteration:      # (the loop tears down when the error reaches it)
                raise RuntimeError(f"{f.what()}: A source was exhausted before the iteration "
                                   f"ended (a feeder of a captured loop ended before its "
                                   f"root)") from None
            items.append((f, fitem))
            outs.extend(f.convert(fitem, ctx.batch_size, copy=True))
        self.polled.append((item, items))
        return tuple(outs)

    def handed(self) -> None:
        """The oldest tuple given out reached the body (its items are no longer kept)."""
        if self.polled:
            self.polled.popleft()

    def give_back(self, count: int) -> None:
        """The last ``count`` tuples were never handed to the body: their items go back to
        their sources, to be polled first."""
        if count <= 0:
            return
        back = [self.polled.pop() for _ in range(min(count, len(self.polled)))][::-1]
        root_items = [r for r, _ in back]
        if self.stopped and self.es.cycle == "raise":
            root_items.append(STOP)     # the end the prefetcher reached comes after them
        self.es.poll.push_back(root_items)
        per_feeder: dict[int, tuple] = {}
        for _, items in back:
            for f, item in items:
                per_feeder.setdefault(id(f), (f, []))[1].append(item)
        for f, fitems in per_feeder.values():
            f.poll.push_back(fitems)


def check_feeder_role(es, owner) -> None:
    """Raise DALI's RuntimeError when ``es`` cannot feed the loop ``owner`` (a CaptureContext
    or a reader loop's side inputs): it is a captured root, used eagerly, iterated with
    ``next_epoch``, or bound to another loop."""
    if es.role is Role.ROOT:
        raise RuntimeError(f"{es.what()}: Instance already used through .captured() method")
    if es.role is Role.EAGER:
        raise RuntimeError(f"{es.what()}: This ExternalSource was already used eagerly")
    if es.role is Role.EPOCHS:
        raise RuntimeError(f"{es.what()} is iterated with next_epoch; it cannot also feed a "
                           f"captured loop")
    if es.capture_ctx is not None and es.capture_ctx is not owner:
        raise RuntimeError(f"{es.what()}: Already bound to a different capture context.")


def feeder_call(es, ctx: CaptureContext, batch_size):
    """``es()`` inside the body of ``ctx``'s loop: trace a feeder, or return its prefetched
    outputs for this step.

    Raises
    ------
    RuntimeError
        For the root itself, an instance used eagerly or bound to another loop, a second call
        in a step, a call in a nested compiled loop, a feeder not called in the traced step,
        another batch size (DALI's rules and words).
    """
    if es is ctx.root:
        raise RuntimeError(f"{es.what()}: Instance already used through .captured() method")
    check_feeder_role(es, ctx)
    if current_capture() is not ctx.capture:
        raise RuntimeError(f"{es.what()}: called inside a compiled loop that runs in a "
                           f"captured loop's body; Only one capture-mode loop can be active at "
                           f"a time for its feeders")
    ctx.check_batch_size(batch_size)
    if ctx.state is State.TRACING:
        ctx.mark_read(es)
        outs = es.convert(es.pull(), ctx.batch_size)
        if es not in ctx.feeders:
            ctx.feeders.append(es)
            es.capture_ctx = ctx
            es.role = Role.FEEDER
        first = ctx.input_offset(es)
        register_inputs(ctx.capture, outs, first)
        return es.shape(tuple(CapturedBatch(b._value, ("source", first + j), 0)
                              for j, b in enumerate(outs)))
    if not any(f is es for f in ctx.feeders):
        ctx.teardown()
        raise RuntimeError(f"{es.what()}: ExternalSource wasn't seen during tracing (a feeder "
                           f"of a captured loop is called in every step, the first included)")
    ctx.mark_read(es)
    return es.shape(ctx.slots[id(es)])


def register_inputs(tracer, outs: tuple, first: int) -> None:
    """Make ``outs`` inputs ``first, first + 1, ...`` of the traced loop (as the root's
    outputs are), so that calls on them are replayed with the values prefetched for each
    step."""
    prov = getattr(tracer, "prov", None)
    if prov is None:
        return
    for j, b in enumerate(outs):
        prov[b._value.id] = ("reader", first + j)


__all__ = ["CaptureContext", "Feed", "Role", "State", "active_context",
           "captured_epoch", "feeder_call", "register_inputs"]
