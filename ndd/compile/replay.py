"""Replaying the template on later batches: :class:`Instance` builds one batch's nodes from
the template and runs their compiled plan (ahead of the body, on the prefetcher's threads);
:class:`Replayer` answers the body's op calls from it, or lets a call run eagerly when it does
not match the trace.
"""
from __future__ import annotations

import os

import numpy as np

from compiler import pipeline
from compiler.ir import Graph, Node, Value
from compiler.passes.schedule import schedule
from compiler.pipeline import compile_graph
from compiler.passes.result import Alias
from ndd._callsite import callsite_key
from ndd._capture_state import scalar_constants
from ndd._captured import CapturedBatch
from ndd._eval_mode import EvalMode
from ndd._rng import get_default_rng
from ndd._tensor import Tensor
from ndd.capture._invariant import marked_values
from ndd.compile.reporting import Report
from ndd.compile.trace import Template
from runtime.executor import release_inputs, run_node, run_plan
from runtime.workers.errors import WorkerCrashed


class Instance:
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

    def run(self, template, last: bool = True):
        """Compile (or build from a recipe) and run this batch's plan; ``last``: it becomes
        the template's ``last_plan`` (the report's; an early run of the next epoch's batch,
        ``ndd/compile/early.py``, leaves it to this epoch's batches)."""
        wanted = [self.outputs[m][j] for (m, j) in sorted(template.consumed)]
        if not wanted:
            wanted = [v for outs in self.outputs for v in outs]
        key = PlanRecipe.key(template, self)
        recipes = template.plan_recipes
        recipe = recipes.get(key) if key is not None else None
        if recipe:
            plan = recipe.build(self, wanted)
        else:
            plan = compile_graph(Graph.from_outputs(wanted))
            if key is not None and recipe is None:     # (False: this key always compiles)
                recipes[key] = PlanRecipe.record(plan, self)
        if last:
            template.last_plan = plan
        self.plan = plan        # for explain (the batch's own plan)
        run_plan(plan)
        # the batch's own nodes too (fusion may have replaced some of them in the plan): no
        # Node <-> Value cycle keeps the batch alive until the garbage collector runs
        for node in self.nodes:
            release_inputs(node)

    def settle_failed(self, failure: BaseException | None = None):
        """After the plan failed: the batch's calls are made again, as fresh nodes (the
        compiler's passes rewired the first ones) with the same arguments and seeds, and run
        one by one as eager execution does (each op over the whole batch, unfused), so the
        errors are eager's (op, sample, type, message).  Each error waits in its node
        (``node.error``; a failed input's error for the calls depending on it) until the
        body consumes the value; the other values are computed.  When the plan's
        ``failure`` is a decode that crashed a worker process, the decoders are not run
        again here (the same file would crash this process): they keep that error."""
        crashed = failure if isinstance(failure, WorkerCrashed) else None
        self.nodes, self.outputs = [], []
        for e, (args, metas) in zip(self.template.entries, self.calls):
            node = self._add_node(e, args, metas)
            err = next((v.producer.error for v in node.all_inputs()
                        if v.data is None and v.producer is not None
                        and v.producer.error is not None), None)
            if err is None and crashed is not None and node.op.startswith("decoders."):
                err = crashed
            if err is None:
                try:
                    run_node(node)
                except Exception as exc:  # noqa: BLE001 - raised when consumed
                    err = exc
            if err is not None:
                node.error = err
            else:
                release_inputs(node)


class PlanRecipe:
    """A compiled plan of one batch's instance, kept as the ops, constant arguments and
    instance positions (``("reader", k)`` / ``("call", entry, output)``) of its steps, so the
    next batches with the same batch sizes get the same plan by building its nodes on their
    own values (and scheduling them) instead of compiling a graph of the same signature again
    (dead code, CSE, the fusion rewrites, placement: ~0.3 ms a batch of the speech front
    end; ~0.35 ms a batch of the train pipeline).  Only for templates whose plans cannot
    differ between such batches: CPU nodes only, every step's values the instance's or the
    template's constants, no plan observers, no IR checking; anything else compiles.  A
    random call's seeds (per batch, left out of the plan cache's signature: the passes do
    not depend on them) are a step's ``_seeds`` argument, that same object: the recipe keeps
    which call's seeds each step takes and gives it the batch's own; a plan where some random
    call's seeds are not one step's ``_seeds`` as they are (merged, derived, or its node
    removed) has no recipe."""

    __slots__ = ("steps", "aliases", "notes", "recorded")

    @staticmethod
    def key(template, inst):
        """The recipe key of ``inst`` (its batch sizes, the reader values' metadata and the
        compile options), or None when its plans are compiled every time."""
        if pipeline.OBSERVERS:
            return None
        opts = pipeline.options()
        if opts["check"]:
            return None
        return (tuple(metas[0].batch_size if metas else 0 for _, metas in inst.calls),
                tuple(v.meta for v in inst.reader_values),
                frozenset(pipeline.disabled_passes()), opts["max_lanes"])

    @classmethod
    def record(cls, plan, inst):
        """The recipe of ``plan`` (compiled from ``inst``), or False when it has steps or
        values that are neither the instance's nor the template's constants."""
        refs = {id(v): ("reader", k) for k, v in enumerate(inst.reader_values)}
        for m, outs in enumerate(inst.outputs):
            for j, v in enumerate(outs):
                refs[id(v)] = ("call", m, j)
        consts = {id(p[1]): p[1] for e in inst.template.entries
                  for p in list(e.inputs) + list(e.tensor_args.values()) if p[0] == "const"}

        def ref(v):
            r = refs.get(id(v))
            if r is None and id(v) in consts:
                r = ("fixed", v)
            return r
        # the random calls' seeds (id -> call), each to be found as one step's _seeds
        seeds = {id(args["_seeds"]): m for m, (args, _) in enumerate(inst.calls)
                 if "_seeds" in args}
        taken = set()
        steps = []
        for step in plan.steps:
            n = step.node
            if n.device.kind != "cpu":
                return False
            ins = [ref(v) for v in n.inputs]
            targs = {k: ref(v) for k, v in n.tensor_args.items()}
            outs = [refs.get(id(v)) for v in n.outputs]
            if None in ins or None in targs.values() or None in outs:
                return False
            args = dict(n.args)
            seed_of = None
            if "_seeds" in args:
                seed_of = seeds.get(id(args.pop("_seeds")))
                if seed_of is None or seed_of in taken:
                    return False
                taken.add(seed_of)
            if any(k == "_seeds" for st in args.get("stages", ()) for k, _ in
                   getattr(st, "args", ())):
                return False
            meta = {k: v for k, v in n.meta.items() if k != "lane"}
            steps.append((n.op, ins, args, targs, outs, n.device, n.callsite, meta, seed_of))
        if len(taken) != len(seeds):
            return False
        aliases = []
        for a in plan.aliases:
            pair = (ref(a.removed), ref(a.kept))
            if None in pair:
                return False
            aliases.append(pair)
        recipe = cls()
        recipe.steps, recipe.aliases = steps, aliases
        recipe.notes, recipe.recorded = list(plan.notes), plan.recorded
        return recipe

    def build(self, inst, wanted):
        """The plan of ``inst``: this recipe's steps as nodes on ``inst``'s values."""
        def value(r):
            return r[1] if r[0] == "fixed" else inst._resolve(r)
        nodes = []
        for op, ins, args, targs, outs, device, callsite, meta, seed_of in self.steps:
            args = dict(args)
            if seed_of is not None:
                args["_seeds"] = inst.calls[seed_of][0]["_seeds"]
            node = Node(op, [value(r) for r in ins], args,
                        {k: value(r) for k, r in targs.items()}, [], device=device,
                        callsite=callsite)
            node.outputs = [value(r) for r in outs]
            for v in node.outputs:
                v.producer = node
            node.meta.update(meta)
            nodes.append(node)
        plan = schedule(Graph(nodes, wanted), max_lanes=pipeline.options()["max_lanes"])
        plan.recorded = self.recorded
        plan.notes = list(self.notes)
        plan.aliases = tuple(Alias(value(a), value(b)) for a, b in self.aliases)
        return plan


class Replayer:
    """Answers the body's calls from an instance; falls back to eager on any mismatch."""

    def __init__(self, template: Template, inst: Instance, rep: Report, loop, rngs, spec,
                 batch: int):
        self.loop = loop
        self.t = template
        self.inst = inst
        self.rep = rep
        self.rngs = rngs
        self.spec = spec
        self.batch = batch
        self.counts: dict[tuple, int] = {}
        self.last = None        # the entry of the last hit (for wrap)

    def lookup(self, op, in_values, args, tensor_args, dev, n, rng=None,
               marked: frozenset = frozenset()):
        key = callsite_key(1, stop=self.loop.frame)
        occ = self.counts.get(key, 0)
        self.counts[key] = occ + 1
        m = self.t.index.get((key, occ))
        site = key      # (its file:line text is made by _miss: only a miss reports it)
        if m is None:
            reason = self.t.refused.get((key, occ))
            return self._miss(site, reason or "call site not in the trace (data-dependent "
                                              "Python?)")
        e = self.t.entries[m]
        if e.op != op:
            return self._miss(site, f"op changed ({e.op} -> {op})")
        prepared = self.inst.nodes[m].outputs[0].meta.batch_size
        if n != prepared:
            if not (e.inputs or e.tensor_args):
                # no batch inputs: which size the call follows was a guess (trace.py); learn
                # it for the next batches (a short last batch comes once per epoch)
                if n == self.inst.reader_values[0].meta.batch_size:
                    e.follows_reader = True
                elif n == e.batch_size:
                    e.follows_reader = False
            return self._miss(site, f"batch size {n}, prepared for {prepared} (a batch_size "
                                    f"argument that does not follow the reader's batches)")
        lost = sorted(e.marked - marked)
        if lost:
            name = lost[0] if lost[0].startswith("input") else f"argument '{lost[0]}'"
            raise RuntimeError(
                f"{op} at {e.callsite}: {name} was marked with ndd.capture.invariant when the "
                f"loop was traced; a marked argument must remain marked in every iteration "
                f"(wrap it in ndd.capture.invariant() here too)")
        if e.device != dev:
            raise RuntimeError(f"{op} at {e.callsite}: the device changed from {e.device} to "
                               f"{dev} after the loop was compiled (traced with "
                               f"device={e.device}, called with device={dev}): Cannot change "
                               f"device in capture mode")
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
            if want[0] == "const" and v is not want[1] and _same_constant(v, want[1]):
                continue        # a marked (ndd.capture.invariant) constant, equal to the traced
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
        self.last = m
        outs = self.inst.outputs[m]
        if EvalMode.current() in (EvalMode.sync_cpu, EvalMode.sync_full):
            for v in outs:      # synchronous modes raise at the call, as eagerly
                err = v.producer.error if v.producer is not None else None
                if err is not None:
                    raise err
        return outs

    def _miss(self, site, reason):
        k = (_site_text(site), reason)
        self.rep.fallbacks[k] = self.rep.fallbacks.get(k, 0) + 1
        return None

    def record(self, node, marked: frozenset = frozenset()) -> bool:
        return False        # a call that missed runs eagerly: its result is not captured

    def wrap(self, values, tensor_mode: bool) -> list:
        """The handles of the last hit's outputs: CapturedBatches (Tensors in tensor mode)."""
        if tensor_mode:
            return [Tensor(v, 0) for v in values]
        return [CapturedBatch(v, ("call", self.last, j), self.batch)
                for j, v in enumerate(values)]

    def consumed(self, value):
        pass


def _same_constant(v: Value, traced: Value) -> bool:
    """``v`` was marked with ``ndd.capture.invariant`` too and holds what the traced constant
    held (metadata and every sample, bit for bit): the prepared result stands for it."""
    if v not in marked_values or v.data is None or traced.data is None or v.meta != traced.meta:
        return False
    a, b = v.data, traced.data
    try:
        return len(a) == len(b) and all(
            getattr(x, "dtype", None) == getattr(y, "dtype", None) and np.array_equal(x, y)
            for x, y in zip(a, b))
    except TypeError:       # device arrays numpy cannot compare: not proven equal
        return False


def _site_text(key) -> str:
    """``file:line`` of the innermost frame of a call-site key."""
    if not key:
        return "<unknown>"
    code, lasti = key[0]
    line = None
    for start, end, ln in code.co_lines():
        if start <= lasti < end:
            line = ln
            break
    return f"{os.path.basename(code.co_filename)}:{line}"
