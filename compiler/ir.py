"""The intermediate representation: Values produced by Nodes, collected into Graphs.

A :class:`Node` is one operator applied to batch-level :class:`Value` s. A Value is either
produced by a node or is a *leaf* holding already materialized storage (``value.data``), e.g. a
reader output or a user array. The compiler reasons on :class:`ValueMeta` only; ``data`` is an
opaque object owned by the runtime (a list of per-sample arrays on the CPU).

There is no global graph: the pending computation is the web of Node/Value pointers, and a
:class:`Graph` is cut out of it for the values that are asked for (:meth:`Graph.from_outputs`).
"""
from __future__ import annotations

import itertools
import weakref
from dataclasses import dataclass, replace
from typing import Any, Iterable

from compiler.types import CPU, Device

_ids = itertools.count()


@dataclass(frozen=True)
class ValueMeta:
    """What the compiler knows about a batch without looking at its data.

    Attributes
    ----------
    dtype : str
        Element type name (``"uint8"``...), or None when unknown.
    ndim : int | None
        Number of dimensions of each sample.
    layout : str | None
        Layout letters (``"HWC"``), ``""`` for none; None when unknown.
    device : Device
    batch_size : int
    """

    dtype: str | None
    ndim: int | None
    layout: str | None
    device: Device = CPU
    batch_size: int = 1

    def with_(self, **changes) -> "ValueMeta":
        return replace(self, **changes)


class Value:
    """One batch-valued result in the graph.

    ``producer``/``index`` name the node output it comes from (None for a leaf). ``data`` holds the
    materialized storage once computed. ``holder`` is a weak reference to the user-facing handle
    (if any) so that dead-code elimination knows which values the user still holds.
    """

    __slots__ = ("id", "producer", "index", "meta", "data", "holder", "__weakref__")

    def __init__(self, meta: ValueMeta, producer: "Node | None" = None, index: int = 0,
                 data: Any = None):
        self.id = next(_ids)
        self.producer = producer
        self.index = index
        self.meta = meta
        self.data = data
        self.holder = None

    @property
    def is_materialized(self) -> bool:
        return self.data is not None

    @property
    def is_live(self) -> bool:
        """True while a user-facing handle pointing at this value exists."""
        return self.holder is not None and self.holder() is not None

    def set_holder(self, handle) -> None:
        self.holder = weakref.ref(handle)

    def __repr__(self) -> str:
        src = self.producer.op if self.producer is not None else "leaf"
        return f"Value(%{self.id} from {src}, {self.meta.dtype}[{self.meta.layout}])"


class Node:
    """One op application.

    Attributes
    ----------
    op : str
        Schema name (``"resize"``, ``"decoders.image"``...).
    inputs : tuple[Value, ...]
        Positional (regular) inputs.
    args : dict[str, Any]
        Constant arguments, hashable Python values (tuples, numbers, strings, None).
    tensor_args : dict[str, Value]
        Arguments given per sample as batches.
    outputs : list[Value]
    device : Device
        Where the op runs (the ``device=`` argument or inferred from the inputs).
    callsite : str
        The user's ``file:line`` that recorded the node (for errors and ``explain``).
    meta : dict
        What passes learn (``lane``, ``fused``, ``fused_from``...).
    """

    __slots__ = ("id", "op", "inputs", "args", "tensor_args", "outputs", "device", "callsite",
                 "meta", "__weakref__")

    def __init__(self, op: str, inputs: Iterable[Value], args: dict[str, Any],
                 tensor_args: dict[str, Value] | None, out_metas: Iterable[ValueMeta],
                 device: Device = CPU, callsite: str = "<unknown>"):
        self.id = next(_ids)
        self.op = op
        self.inputs = tuple(inputs)
        self.args = dict(args)
        self.tensor_args = dict(tensor_args or {})
        self.device = device
        self.callsite = callsite
        self.meta: dict[str, Any] = {}
        self.outputs = [Value(m, self, i) for i, m in enumerate(out_metas)]

    def all_inputs(self) -> list[Value]:
        """Regular inputs followed by tensor-argument values (in argument-name order)."""
        return list(self.inputs) + [self.tensor_args[k] for k in sorted(self.tensor_args)]

    def key(self) -> tuple:
        """Structural identity used by CSE: op, device, constant args, input value ids."""
        return (self.op, str(self.device), _freeze(self.args),
                tuple(v.id for v in self.inputs),
                tuple((k, v.id) for k, v in sorted(self.tensor_args.items())))

    def __repr__(self) -> str:
        return f"Node({self.op} #{self.id} @ {self.callsite})"


def _freeze(obj):
    if isinstance(obj, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in obj.items()))
    if isinstance(obj, (list, tuple)):
        return tuple(_freeze(v) for v in obj)
    return obj


class Graph:
    """A DAG of nodes in topological order, with the values asked for as ``outputs``.

    Leaves are values without a producer or already materialized (their producers are not part
    of the graph). ``nodes`` is kept topologically sorted by every pass.
    """

    def __init__(self, nodes: list[Node], outputs: list[Value]):
        self.nodes = nodes
        self.outputs = outputs
        self.notes: list[tuple[str, str]] = []   # (pass name, message) for explain

    @staticmethod
    def from_outputs(outputs: Iterable[Value]) -> "Graph":
        """Cut out the unevaluated nodes the given values need, in topological order."""
        outputs = list(outputs)
        order: list[Node] = []
        seen: set[int] = set()
        # iterative DFS post-order
        stack: list[tuple[Node, bool]] = []
        for v in outputs:
            if v.producer is not None and not v.is_materialized:
                stack.append((v.producer, False))
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            if node.id in seen:
                continue
            seen.add(node.id)
            stack.append((node, True))
            for inp in reversed(node.all_inputs()):
                p = inp.producer
                if p is not None and not inp.is_materialized and p.id not in seen:
                    stack.append((p, False))
        return Graph(order, outputs)

    def leaves(self) -> list[Value]:
        """Input values the graph reads but does not compute."""
        produced = {id(v) for n in self.nodes for v in n.outputs}
        out, seen = [], set()
        for n in self.nodes:
            for v in n.all_inputs():
                if id(v) not in produced and id(v) not in seen:
                    seen.add(id(v))
                    out.append(v)
        return out

    def consumers(self) -> dict[int, list[Node]]:
        """Map value id -> nodes of this graph reading it."""
        users: dict[int, list[Node]] = {}
        for n in self.nodes:
            for v in n.all_inputs():
                users.setdefault(v.id, []).append(n)
        return users

    def to_networkx(self):
        """A ``networkx.DiGraph`` with node ids as vertices (for analyses and export)."""
        import networkx as nx
        g = nx.DiGraph()
        producer_of = {v.id: n for n in self.nodes for v in n.outputs}
        for n in self.nodes:
            g.add_node(n.id, op=n.op, node=n)
            for v in n.all_inputs():
                p = producer_of.get(v.id)
                if p is not None:
                    g.add_edge(p.id, n.id, value=v.id)
        return g

    def __len__(self) -> int:
        return len(self.nodes)


def clone_graph(graph: Graph) -> Graph:
    """A copy of the graph's nodes and produced values (same ids), sharing the leaves.

    Used to compile a graph for inspection (``explain``) without touching the pending nodes.
    """
    vmap: dict[int, Value] = {}
    nodes = []
    for n in graph.nodes:
        ins = [vmap.get(v.id, v) for v in n.inputs]
        targs = {k: vmap.get(v.id, v) for k, v in n.tensor_args.items()}
        c = Node(n.op, ins, n.args, targs, [v.meta for v in n.outputs], n.device, n.callsite)
        c.id = n.id
        c.meta = {k: v for k, v in n.meta.items() if k not in ("future",)}
        for old, new in zip(n.outputs, c.outputs):
            new.id = old.id
            new.holder = old.holder
            vmap[old.id] = new
        nodes.append(c)
    return Graph(nodes, [vmap.get(v.id, v) for v in graph.outputs])
