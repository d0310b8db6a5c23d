"""Compile mode: ``reader.next_epoch(batch_size=N, compile=True)``.

The first batch runs eagerly while every op call is traced (call site, op, arguments, where its
inputs came from). The traced calls form a per-batch graph template; for later batches a
prefetch worker instantiates the template on the reader's next batches, compiles it (plans are
cached by signature, so this happens once per batch size) and runs it ahead of time. In the loop
body, a call that matches the trace (same call site and occurrence, op, arguments — the guards —
and inputs that are this batch's reader outputs or replayed results) returns the prepared
result; anything else runs eagerly. Random ops draw their seeds from the same generators in the
same order as eager execution, so a seeded compiled epoch equals a seeded eager epoch.

``ndd.compile.invariant(x)`` promises that a Tensor/Batch built by Python code never changes,
so calls that take it can be replayed.
"""
from __future__ import annotations

import itertools
import queue
import threading
import warnings
import weakref
from dataclasses import dataclass, field

from compiler.ir import Graph, Node, Value
from compiler.pipeline import compile_graph
from ndd._batch import Batch
from ndd._callsite import callsite_key, loop_frame
from ndd._capture_state import pop_capture, push_capture, scalar_constants
from ndd._eval_mode import EvalMode
from ndd._speculation import Speculation, SpeculationBroken
from ndd._rng import get_default_rng
from runtime import executor

DEFAULT_QUEUE_DEPTH = 2
_invariants: "weakref.WeakSet[Value]" = weakref.WeakSet()


def invariant(value):
    """Mark a Tensor/Batch as invariant across iterations (it may then be used as a replayed
    input). Returns the value itself."""
    if not hasattr(value, "_value"):
        raise TypeError(f"ndd.compile.invariant expects an ndd.Tensor or ndd.Batch, got "
                        f"{type(value).__name__}")
    _invariants.add(value._value)
    return value


@dataclass
class TraceEntry:
    """One recorded call: where it was made and how its inputs were obtained."""

    key: tuple
    occurrence: int
    op: str
    args: dict
    inputs: list            # provenance per input: ("reader", k) | ("call", m, j) | ("const", v)
    tensor_args: dict       # name -> provenance
    device: object
    callsite: str
    rng: object = None
    out_metas: list = field(default_factory=list)
    rng_default: bool = False   # rng=None: the default generator of the loop's thread
    # an entry without batch inputs (a random op): its traced batch size, and whether that was
    # the reader's (``batch_size=jpegs.batch_size``: follows a short last batch) or a constant
    batch_size: int = 0
    follows_reader: bool = True


@dataclass
class Report:
    """What the last compiled loop did (``ndd.compile.report()``)."""

    traced: int = 0
    replayed: int = 0
    fallbacks: dict = field(default_factory=dict)   # (callsite, reason) -> count
    plan_text: str = ""
    respeculated: int = 0   # times the seeds drawn ahead were given back and prefetched again

    def __str__(self):
        lines = [f"compiled loop: {self.traced} traced calls, {self.replayed} replayed calls"]
        if self.respeculated:
            lines.append(f"  random seeds drawn ahead given back {self.respeculated}x (the "
                         f"body's random calls differed from the trace); prefetched again")
        for (site, reason), n in sorted(self.fallbacks.items()):
            lines.append(f"  not replayed x{n}: {site}: {reason}")
        if self.plan_text:
            lines += ["", self.plan_text]
        return "\n".join(lines)


_last_report = threading.local()


def report() -> Report | None:
    """The report of the last compiled loop run on this thread."""
    return getattr(_last_report, "report", None)


class _Tracer:
    """Records calls of the traced (first) iteration."""

    def __init__(self, reader_values, loop):
        self.loop = loop
        self.entries: list[TraceEntry] = []
        self.prov: dict[int, tuple] = {v.id: ("reader", k) for k, v in enumerate(reader_values)}
        self.reader_n = reader_values[0].meta.batch_size if reader_values else 0
        self.counts: dict[tuple, int] = {}
        self.consumed_ids: set[int] = set()
        self.values: dict[int, Value] = {}
        self.refused: dict[tuple, str] = {}

    def lookup(self, *a):
        return None

    def _provenance(self, v: Value):
        p = self.prov.get(v.id)
        if p is not None:
            return p
        if v in _invariants and v.data is not None:
            return ("const", v)
        key = scalar_constants.get(v)
        if key is not None and v.data is not None:     # np.float32(0.5) * batch
            return ("scalar", v, key)
        return None

    def record(self, node: Node):
        key = callsite_key(1, stop=self.loop.frame)
        occ = self.counts.get(key, 0)
        self.counts[key] = occ + 1
        ins = [self._provenance(v) for v in node.inputs]
        targs = {k: self._provenance(v) for k, v in node.tensor_args.items()}
        if any(p is None for p in ins) or any(p is None for p in targs.values()):
            # an input built by Python code: this call is not replayable
            bad = [f"input {j}" for j, p in enumerate(ins) if p is None]
            bad += [f"argument '{k}'" for k, p in targs.items() if p is None]
            self.refused[(key, occ)] = (
                f"{', '.join(bad)} is a fresh array built by Python code, not a reader output "
                f"or a traced result; wrap it in ndd.compile.invariant() if it never changes")
            return
        m = len(self.entries)
        args = {k: v for k, v in node.args.items() if k != "_seeds"}
        n = node.outputs[0].meta.batch_size if node.outputs else 0
        self.entries.append(TraceEntry(key, occ, node.op, args, ins, targs, node.device,
                                       node.callsite, node.rng,
                                       [v.meta for v in node.outputs],
                                       bool(node.rng_default), n,
                                       n == self.reader_n))
        for j, v in enumerate(node.outputs):
            self.prov[v.id] = ("call", m, j)
            self.values[v.id] = v

    def consumed(self, value: Value):
        p = self.prov.get(value.id)
        if p is not None and p[0] == "call":
            self.consumed_ids.add((p[1], p[2]))


class _Instance:
    """The template instantiated on one batch: nodes, values and the compiled plan's results."""

    def __init__(self, template, reader_values, rngs, spec, batch: int):
        self.reader_values = reader_values
        self.template = template
        self.outputs: list[list[Value]] = []
        self.nodes: list[Node] = []
        self.calls: list[tuple] = []    # (args, output metas) per entry, as first built
        reader_n = reader_values[0].meta.batch_size
        for m, e in enumerate(template.entries):
            # the batch size eager execution would give this call: its inputs' (a Tensor
            # input broadcasts), else the traced one, the reader's if it was the reader's
            sizes = [self._resolve(p).meta.batch_size
                     for p in list(e.inputs) + list(e.tensor_args.values())]
            n = max(sizes) if sizes else (reader_n if e.follows_reader else e.batch_size)
            args = dict(e.args)
            if e.rng is not None:
                args["_seeds"] = spec.draw_ahead(rngs[m], batch, m, n)
            self.calls.append((args, [m.with_(batch_size=n) for m in e.out_metas]))
            self._add_node(e, *self.calls[-1])

    def _add_node(self, e, args, metas) -> Node:
        """The node of entry ``e`` on this batch (inputs resolved), appended to the instance."""
        ins = [self._resolve(p) for p in e.inputs]
        targs = {k: self._resolve(p) for k, p in e.tensor_args.items()}
        node = Node(e.op, ins, dict(args), targs, metas, device=e.device, callsite=e.callsite)
        self.nodes.append(node)
        self.outputs.append(node.outputs)
        return node

    def _resolve(self, p):
        if p[0] == "reader":
            return self.reader_values[p[1]]
        if p[0] == "call":
            return self.outputs[p[1]][p[2]]
        return p[1]

    def run(self, template):
        wanted = [self.outputs[m][j] for (m, j) in sorted(template.consumed)]
        if not wanted:
            wanted = [v for outs in self.outputs for v in outs]
        graph = Graph.from_outputs(wanted)
        plan = compile_graph(graph)
        template.last_plan = plan
        self.plan = plan        # for explain (the batch's own plan)
        executor.execute(plan)
        for mine, theirs in plan.aliases:
            if mine.data is None and theirs.data is not None:
                mine.data = theirs.data
        # Computed values forget their producers: no Node <-> Value cycle keeps a batch (and
        # its recycled output buffer) alive until the garbage collector runs.
        for node in self.nodes:
            executor.release_inputs(node)
        for step in plan.steps:
            executor.release_inputs(step.node)

    def settle_failed(self):
        """After the plan failed: the batch's calls are made again, as fresh nodes (the
        compiler's passes rewired the first ones) with the same arguments and seeds, and run
        one by one as eager execution does (each op over the whole batch, unfused), so the
        errors are eager's (op, sample, type, message).  Each error waits in its node
        (``node.error``; a failed input's error for the calls depending on it) until the
        body consumes the value; the other values are computed."""
        self.nodes, self.outputs = [], []
        for e, (args, metas) in zip(self.template.entries, self.calls):
            node = self._add_node(e, args, metas)
            err = next((v.producer.error for v in node.all_inputs()
                        if v.data is None and v.producer is not None
                        and v.producer.error is not None), None)
            if err is None:
                try:
                    executor.run_node(node)
                except Exception as exc:  # noqa: BLE001 - raised when consumed
                    err = exc
            if err is not None:
                node.error = err
            else:
                executor.release_inputs(node)


class _Template:
    def __init__(self, tracer: _Tracer):
        self.entries = tracer.entries
        self.consumed = tracer.consumed_ids
        self.refused = tracer.refused
        self.index = {(e.key, e.occurrence): m for m, e in enumerate(self.entries)}
        self.last_plan = None    # the most recent compiled plan (for the report)


class _Replayer:
    """Answers the body's calls from an instance; falls back to eager on any mismatch."""

    def __init__(self, template: _Template, inst: _Instance, rep: Report, loop, rngs, spec,
                 batch: int):
        self.loop = loop
        self.t = template
        self.inst = inst
        self.rep = rep
        self.rngs = rngs
        self.spec = spec
        self.batch = batch
        self.counts: dict[tuple, int] = {}

    def lookup(self, op, in_values, args, tensor_args, dev, n, rng=None):
        key = callsite_key(1, stop=self.loop.frame)
        occ = self.counts.get(key, 0)
        self.counts[key] = occ + 1
        m = self.t.index.get((key, occ))
        site = _site_text(key)
        if m is None:
            reason = self.t.refused.get((key, occ))
            return self._miss(site, reason or "call site not in the trace (data-dependent "
                                              "Python?)")
        e = self.t.entries[m]
        if e.op != op:
            return self._miss(site, f"op changed ({e.op} -> {op})")
        prepared = self.inst.nodes[m].outputs[0].meta.batch_size
        if n != prepared:
            return self._miss(site, f"batch size {n}, prepared for {prepared} (a batch_size "
                                    f"argument that does not follow the reader's batches)")
        if e.device != dev:
            raise RuntimeError(f"{op} at {e.callsite}: the device changed from {e.device} to "
                               f"{dev} after the loop was compiled")
        plain = {k: v for k, v in args.items() if k != "_seeds"}
        if plain != e.args:
            changed = sorted(k for k in set(plain) | set(e.args) if plain.get(k) != e.args.get(k))
            return self._miss(site, f"guard failed: argument(s) {', '.join(changed)} changed")
        for j, v in enumerate(in_values):
            want = e.inputs[j]
            if want[0] == "scalar":     # a numpy scalar operand: the same type and value
                if scalar_constants.get(v) != want[2]:
                    return self._miss(site, f"guard failed: the numpy scalar operand {j} "
                                            f"changed")
                continue
            if v is not self.inst._resolve(want):
                return self._miss(site, f"input {j} is not the value the trace saw: an "
                                        f"earlier call was skipped or changed by "
                                        f"data-dependent Python, or it is a fresh array (wrap "
                                        f"constants in ndd.compile.invariant())")
        if e.rng is not None and (rng if rng is not None else get_default_rng()) \
                is not self.rngs[m]:
            return self._miss(site, "the call draws from another random generator than in "
                                    "this epoch's first batch (rng= argument or set_seed)")
        if set(tensor_args) != set(e.tensor_args):
            return self._miss(site, "per-sample arguments differ from the trace")
        for k, v in tensor_args.items():
            if v is not self.inst._resolve(e.tensor_args[k]):
                return self._miss(site, f"per-sample argument '{k}' is not the traced one")
        if e.rng is not None and not self.spec.consume(self.rngs[m], self.batch, m):
            return self._miss(site, "random draws out of the traced order (a random call "
                                    "skipped, added or drawn from elsewhere): the seeds drawn "
                                    "ahead were given back and this batch's random calls run "
                                    "eagerly")
        self.rep.replayed += 1
        outs = self.inst.outputs[m]
        if EvalMode.current() in (EvalMode.sync_cpu, EvalMode.sync_full):
            for v in outs:      # synchronous modes raise at the call, as eagerly
                err = v.producer.error if v.producer is not None else None
                if err is not None:
                    raise err
        return outs

    def _miss(self, site, reason):
        k = (site, reason)
        self.rep.fallbacks[k] = self.rep.fallbacks.get(k, 0) + 1
        return None

    def record(self, node):
        pass

    def consumed(self, value):
        pass


def _site_text(key) -> str:
    if not key:
        return "<unknown>"
    code, lasti = key[0]
    import os
    line = None
    for start, end, ln in code.co_lines():
        if start <= lasti < end:
            line = ln
            break
    return f"{os.path.basename(code.co_filename)}:{line}"


class _Prefetcher:
    """Runs the template on the next reader batches in the background (bounded queue).

    One thread walks the source: for each batch it instantiates the template (drawing the
    random seeds ahead, in batch order, through a :class:`ndd._speculation.Speculation` that
    checks them against what the body then does) and hands the instance's ``run`` to a small
    executor of ``OVERLAP`` runner threads, queueing ``("batch", handles, inst, future)`` in
    batch order.  Two batches in flight keep every pool worker busy: while the slowest chunk of
    batch ``k`` finishes, the chunks of batch ``k + 1`` already run on the other workers (one
    batch at a time left ~20 % of two cores idle at each batch's tail).  When the speculation
    is given back, the thread stops (queueing ``("broken",)``); :meth:`close` returns the
    source batches it took but did not hand out, in order, for a new prefetcher.
    """

    OVERLAP = 2

    def __init__(self, template, batches, depth, rngs, spec, first_batch: int):
        from concurrent.futures import ThreadPoolExecutor
        self.q: queue.Queue = queue.Queue(maxsize=depth)
        self.stop = threading.Event()
        self.template = template
        self.batches = batches
        self.rngs = rngs                    # entry index -> generator (random entries)
        self.spec = spec
        self.first_batch = first_batch      # number of the first batch, counted by the loop
        self.leftover: list = []            # taken from the source, not queued
        self.runner = ThreadPoolExecutor(self.OVERLAP, thread_name_prefix="ndd-compile-run")
        self.thread = threading.Thread(target=self._run, name="ndd-compile-prefetch",
                                       daemon=True)
        self.thread.start()

    def _run(self):
        batch = self.first_batch
        try:
            for handles in self.batches:
                if self.stop.is_set():
                    self.leftover.append(handles)
                    return
                values = [h._value for h in handles]
                try:
                    inst = _Instance(self.template, values, self.rngs, self.spec, batch)
                except SpeculationBroken:
                    self.leftover.append(handles)
                    self._put(("broken",))
                    return
                fut = self.runner.submit(inst.run, self.template)
                if not self._put(("batch", handles, inst, fut)):
                    self.leftover.append(handles)
                    return
                batch += 1
            self._put(None)
        except BaseException as exc:  # noqa: BLE001 - reader errors go to the consumer
            self._put(("error", exc))

    def _put(self, item) -> bool:
        while not self.stop.is_set():
            try:
                self.q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def get(self):
        return self.q.get()

    def _drain(self, into: list) -> None:
        while True:
            try:
                item = self.q.get_nowait()
            except queue.Empty:
                return
            if item is not None and item[0] == "batch":
                into.append(item[1])

    def close(self) -> list:
        """Stop; returns the source batches taken but not handed out (in order)."""
        self.stop.set()
        unused: list = []
        self._drain(unused)
        self.thread.join(timeout=60)
        self._drain(unused)         # one put may have raced the stop
        self.runner.shutdown(wait=True, cancel_futures=True)
        return unused + self.leftover


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
    loop = _Loop()
    return CompiledEpoch(_compiled_epoch(reader, batches, queue_depth, loop), batches, loop)


class _Loop:
    """The user frame running the compiled loop (call-site keys stop there)."""

    frame = None


def _compiled_epoch(reader, batches, queue_depth, loop):
    depth = queue_depth or getattr(reader, "compile_queue_depth", DEFAULT_QUEUE_DEPTH)
    rep = Report()
    _last_report.report = rep
    template = getattr(reader, "_compile_template", None)
    prefetch = None
    source = batches    # the reader's iterator (``batches`` may become a chain below)
    handed = [0]        # batches the body got (the rest of what the source gave: read ahead)
    try:
        if template is None:
            first = next(batches, None)
            if first is None:
                return
            tracer = _Tracer([h._value for h in first], loop)
            handed[0] += 1
            stack = push_capture(tracer)
            try:
                yield first
            finally:
                # False: another epoch advanced meanwhile (the stack: a generator may be
                # finalised on another thread)
                alone = pop_capture(tracer, stack)
            if not alone:
                raise RuntimeError(_INTERLEAVED)
            rep.traced = len(tracer.entries)
            if not tracer.entries:
                warnings.warn("next_epoch(compile=True): the loop body made no replayable ndd "
                              "calls; running eagerly", RuntimeWarning, stacklevel=2)
                reader._compile_template = False
                yield from batches
                return
            template = _Template(tracer)
            reader._compile_template = template
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
        feed = batches      # what the prefetcher reads (after a restart: a chain)
        count = getattr(source, "count_delivered", None)
        if count is not None:   # an open epoch's "not fully consumed" counts what the body got
            count(lambda: handed[0])
        spec = Speculation(unique)
        prefetch = _Prefetcher(template, feed, depth, rngs, spec, batch)
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
                inst.settle_failed()
            # also after a give-back the batch is handed out: its results that depend on no
            # random call stand, and its random calls run eagerly (consume() is False then)
            replayer = _Replayer(template, inst, rep, loop, rngs, spec, batch)
            handed[0] += 1
            stack = push_capture(replayer)
            try:
                yield handles
            finally:
                alone = pop_capture(replayer, stack)
            if not alone:
                raise RuntimeError(_INTERLEAVED)
            spec.end_batch(batch)
            batch += 1
            if spec.broken:     # prefetch again from the next batch on
                spec, prefetch, feed = _respeculate(prefetch, feed, template, depth, rngs,
                                                   unique, batch)
                rep.respeculated += 1
        if template.last_plan is not None:
            from compiler.explain import explain_graph
            rep.plan_text = explain_graph(template.last_plan)
    finally:
        if prefetch is not None:
            unused = prefetch.close()
            prefetch.spec.give_back()   # the seeds of batches never handed out
            give_back = getattr(source, "give_back", None)
            if give_back is not None and unused:
                give_back(len(unused))  # and the reader's read-ahead


def _respeculate(prefetch, feed, template, depth, rngs, unique, batch):
    """A new speculation and prefetcher from batch ``batch`` on: the batches the old one took
    but did not hand out come first, then the rest of its feed (nothing is lost or
    repeated)."""
    unused = prefetch.close()
    prefetch.spec.give_back()
    feed = itertools.chain(unused, feed)
    spec = Speculation(unique)
    return spec, _Prefetcher(template, feed, depth, rngs, spec, batch), feed


_INTERLEAVED = ("next_epoch(compile=True): another compiled epoch was advanced while this one "
                "was between iterations (e.g. two compiled readers zipped in one loop): their "
                "calls cannot be told apart. Iterate one compiled epoch at a time (a compiled "
                "loop may run inside another's body), or use next_epoch() without compile for "
                "the other reader")


capture = invariant   # alias namespace helper: ndd.capture.invariant
__all__ = ["invariant", "report", "compiled_epoch", "Report"]
