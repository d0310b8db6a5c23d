"""The traced (first) iteration of a compiled loop: every op call, with its call site, its
guards (op, arguments, device) and where its inputs came from; the template later batches
replay.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from compiler.ir import Node, Value
from ndd._callsite import callsite_key
from ndd._capture_state import scalar_constants
from ndd._batch import Batch
from ndd._captured import CapturedBatch
from ndd._tensor import Tensor
from ndd.capture._invariant import invariant, marked_values

__all__ = ["TraceEntry", "Tracer", "Template", "invariant", "hand_out_handles"]


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
    marked: frozenset = frozenset()     # arguments given as ndd.capture.invariant proxies


class Tracer:
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
        if v in marked_values and v.data is not None:
            return ("const", v)
        key = scalar_constants.get(v)
        if key is not None and v.data is not None:     # np.float32(0.5) * batch
            return ("scalar", v, key)
        return None

    def record(self, node: Node, marked: frozenset = frozenset()) -> bool:
        """Record ``node`` (called by the call path before it runs); True when the call is
        replayable (its result is then a CapturedBatch), False when refused."""
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
            return False
        m = len(self.entries)
        args = {k: v for k, v in node.args.items() if k != "_seeds"}
        n = node.outputs[0].meta.batch_size if node.outputs else 0
        self.entries.append(TraceEntry(
            key=key, occurrence=occ, op=node.op, args=args, inputs=ins, tensor_args=targs,
            device=node.device, callsite=node.callsite, rng=node.rng,
            out_metas=[v.meta for v in node.outputs], rng_default=bool(node.rng_default),
            batch_size=n, follows_reader=n == self.reader_n, marked=marked))
        for j, v in enumerate(node.outputs):
            self.prov[v.id] = ("call", m, j)
            self.values[v.id] = v
        return True

    def wrap(self, values, tensor_mode: bool) -> list:
        """The handles of a recorded call's outputs: CapturedBatches (Tensors in tensor
        mode, which DALI does not capture either)."""
        if tensor_mode:
            return [Tensor(v, 0) for v in values]
        return [CapturedBatch(v, self.prov.get(v.id, ("call",)), 0) for v in values]

    def consumed(self, value: Value):
        p = self.prov.get(value.id)
        if p is not None and p[0] == "call":
            self.consumed_ids.add((p[1], p[2]))


class Template:
    """What a traced iteration left for the next batches: its replayable calls (``entries``),
    which of their outputs the body consumed, why the other calls cannot be replayed, and
    ``(call-site key, occurrence) -> entry`` for the replayer's lookups."""

    def __init__(self, tracer: Tracer):
        self.entries = tracer.entries
        self.consumed = tracer.consumed_ids
        self.refused = tracer.refused
        self.index = {(e.key, e.occurrence): m for m, e in enumerate(self.entries)}
        self.last_plan = None    # the most recent compiled plan (for the report)
        #: key -> ndd.compile.replay.PlanRecipe (False: compiled every time)
        self.plan_recipes: dict = {}
        _settle_batch_sizes(self.entries)


def _settle_batch_sizes(entries) -> None:
    """An entry without batch inputs whose traced batch size was the reader's is ambiguous:
    ``batch_size=jpegs.batch_size`` (it follows a short last batch) or ``batch_size=4`` (it
    does not).  It follows the reader when a later call combines its output with data of the
    reader's batches (eager execution would reject unequal sizes there); otherwise it keeps its
    constant size, which is also DALI's (a captured loop has one batch size)."""
    from_reader = []        # per entry: its outputs have the reader's batch size
    for e in entries:
        provs = list(e.inputs) + list(e.tensor_args.values())
        from_reader.append(any(p[0] == "reader" or (p[0] == "call" and from_reader[p[1]])
                               for p in provs))
    for m, e in enumerate(entries):
        if e.inputs or e.tensor_args or not e.follows_reader:
            continue
        downstream, combined = {m}, False      # the calls computed from this one's output
        for k in range(m + 1, len(entries)):
            later = entries[k]
            provs = list(later.inputs) + list(later.tensor_args.values())
            if not any(p[0] == "call" and p[1] in downstream for p in provs):
                continue
            downstream.add(k)
            if any(p[0] == "reader" or (p[0] == "call" and p[1] not in downstream
                                        and from_reader[p[1]]) for p in provs):
                combined = True
                break
        e.follows_reader = combined
        from_reader[m] = combined


def hand_out_handles(handles, iteration: int) -> tuple:
    """The source's batches as the loop body gets them: CapturedBatches over the same values
    (a Tensor stays as it is)."""
    return tuple(CapturedBatch(h._value, ("source", k), iteration)
                 if isinstance(h, Batch) else h
                 for k, h in enumerate(handles))
