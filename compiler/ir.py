"""The intermediate representation: Values produced by Nodes, collected into Graphs.

A :class:`Node` is one operator applied to batch-level :class:`Value` s. A Value is either
produced by a node or is a *leaf* holding already materialized storage (``value.data``), e.g. a
reader output or a user array. The compiler reasons on :class:`ValueMeta` only; ``data`` is an
opaque object owned by the runtime (a list of per-sample arrays on the CPU).

There is no global graph: the pending computation is the web of Node/Value pointers, and a
:class:`Graph` is cut out of it for the values that are asked for (:meth:`Graph.from_outputs`).

The IR keeps its own links up to date (as torch.fx does):

* a Value knows its *users*, the live nodes reading it as an input or a tensor argument
  (:attr:`Value.users`); assigning ``node.inputs`` / ``node.tensor_args`` updates them.
  Users are held by weak references: a node reads its inputs strongly, so a strong link back
  would make a Node <-> Value cycle that only the garbage collector could free, and pending
  work must be freed as soon as no handle refers to it;
* :meth:`Graph.replace_all_uses_with` rewires every reader of a value in one call, and
  :meth:`Graph.users` / :meth:`Graph.producer_of` answer what passes used to rebuild by hand.

A fused node keeps the original ops it stands for as :class:`Stage` records (:func:`stages_of`).
"""
from __future__ import annotations

import itertools
import weakref
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from compiler.types import CPU, Device

_ids = itertools.count()

#: The keys of ``Node.meta``: what passes learn about a node (and the two opt-outs they read).
#: Run state (futures, errors) lives in the node's own slots, never here; the IR checker
#: rejects other keys.
META_KEYS: dict[str, str] = {
    "lane": "schedule: the lane (worker thread / CUDA stream) the node runs on",
    "fused_from": "fuse: op names of the original nodes a fused node stands for, in order",
    "fused_sites": "fuse: (op, user file:line) of each original node (errors name the user's "
                   "own call)",
    "merged": "cse: '#id file:line' of the identical nodes merged into this one",
    "no_cse": "opt-out read by cse: never merge this node",
    "no_fuse": "opt-out read by fuse: never fuse this node",
}


_SCALARS = {int, float, bool, str, type(None)}


def freeze(obj):
    """A hashable copy of ``obj``: dicts become sorted ``(key, value)`` tuples, lists tuples."""
    if isinstance(obj, dict):
        return tuple(sorted((k, freeze(v)) for k, v in obj.items()))
    if isinstance(obj, (list, tuple)):
        if set(map(type, obj)) <= _SCALARS:     # flat numbers (SSD's 34928 anchor values)
            return obj if type(obj) is tuple else tuple(obj)
        return tuple(freeze(v) for v in obj)
    return obj


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
    :attr:`users` lists the live nodes reading the value.
    """

    __slots__ = ("id", "producer", "index", "meta", "data", "holder", "_users", "__weakref__")

    def __init__(self, meta: ValueMeta, producer: "Node | None" = None, index: int = 0,
                 data: Any = None):
        self.id = next(_ids)
        self.producer = producer
        self.index = index
        self.meta = meta
        self.data = data
        self.holder = None
        self._users: dict[int, weakref.ref] | None = None   # id(node) -> weak ref

    @property
    def is_materialized(self) -> bool:
        return self.data is not None

    @property
    def is_live(self) -> bool:
        """True while a user-facing handle pointing at this value exists."""
        return self.holder is not None and self.holder() is not None

    def set_holder(self, handle) -> None:
        self.holder = weakref.ref(handle)

    @property
    def users(self) -> list["Node"]:
        """The live nodes reading this value (as an input or a tensor argument), by node id.

        This spans the whole pending web; :meth:`Graph.users` keeps the nodes of one graph.
        """
        if not self._users:
            return []
        out = [n for r in self._users.values() if (n := r()) is not None]
        out.sort(key=lambda n: n.id)
        return out

    def _add_user(self, node: "Node") -> None:
        users = self._users
        if users is None:
            self._users = {id(node): weakref.ref(node)}
            return
        users[id(node)] = weakref.ref(node)
        n = len(users)
        if n >= 8 and not n & (n - 1):      # at 8, 16, 32...: forget dead readers (amortized)
            for key in [k for k, r in users.items() if r() is None]:
                del users[key]

    def _drop_user(self, node: "Node") -> None:
        if self._users is not None:
            self._users.pop(id(node), None)

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
        Positional (regular) inputs. Assigning it updates the users of old and new values.
    args : dict[str, Any]
        Constant arguments, hashable Python values (tuples, numbers, strings, None; a fused
        node's :class:`Stage` records under ``"stages"``).
    tensor_args : Mapping[str, Value]
        Arguments given per sample as batches (read-only; assign a new dict to rewire).
    outputs : list[Value]
    device : Device
        Where the op runs (the ``device=`` argument or inferred from the inputs).
    callsite : str
        The user's ``file:line`` that recorded the node (for errors and ``explain``).
    meta : dict
        What passes learn, keyed by :data:`META_KEYS` (``lane``, ``fused_from``...).
    rng, rng_default
        Recorded by the front end for a random op: the generator its ``_seeds`` were drawn
        from, and whether that was the thread's default generator (compile mode replays the
        draws from the same one). None / False otherwise.
    future, error, done
        Run state, owned by the runtime and the front end; passes never read it: the eager
        worker's future, the exception that computing the node raised (kept until a
        consumer asks), and whether the node has run.
    """

    __slots__ = ("id", "op", "_inputs", "args", "_tensor_args", "outputs", "device",
                 "callsite", "meta", "rng", "rng_default", "future", "error", "done",
                 "__weakref__")

    def __init__(self, op: str, inputs: Iterable[Value], args: dict[str, Any],
                 tensor_args: Mapping[str, Value] | None, out_metas: Iterable[ValueMeta],
                 device: Device = CPU, callsite: str = "<unknown>"):
        self.id = next(_ids)
        self.op = op
        self._inputs = tuple(inputs)
        self._tensor_args = MappingProxyType(dict(tensor_args or {}))
        self.args = dict(args)
        self.device = device
        self.callsite = callsite
        self.meta: dict[str, Any] = {}
        self.rng = None
        self.rng_default = False
        self.future = None
        self.error: BaseException | None = None
        self.done = False
        self.outputs = [Value(m, self, i) for i, m in enumerate(out_metas)]
        for v in self._inputs:
            v._add_user(self)
        for v in self._tensor_args.values():
            v._add_user(self)

    @property
    def inputs(self) -> tuple[Value, ...]:
        return self._inputs

    @inputs.setter
    def inputs(self, values: Iterable[Value]) -> None:
        before = self.all_inputs()
        self._inputs = tuple(values)
        self._relink(before)

    @property
    def tensor_args(self) -> Mapping[str, Value]:
        return self._tensor_args

    @tensor_args.setter
    def tensor_args(self, values: Mapping[str, Value]) -> None:
        before = self.all_inputs()
        self._tensor_args = MappingProxyType(dict(values))
        self._relink(before)

    def _relink(self, before: list[Value]) -> None:
        now = self.all_inputs()
        kept = {id(v) for v in now}
        for v in before:
            if id(v) not in kept:
                v._drop_user(self)
        for v in now:
            v._add_user(self)

    def replace_input_with(self, old: Value, new: Value) -> bool:
        """Read ``new`` wherever this node reads ``old`` (inputs and tensor arguments)."""
        if not any(v is old for v in self.all_inputs()):
            return False
        before = self.all_inputs()
        self._inputs = tuple(new if v is old else v for v in self._inputs)
        self._tensor_args = MappingProxyType(
            {k: new if v is old else v for k, v in self._tensor_args.items()})
        self._relink(before)
        return True

    def adopt_outputs(self, other: "Node") -> None:
        """Take over ``other``'s output values (they now name this node as their producer), so
        the handles pointing at them keep working after a rewrite."""
        self.outputs = list(other.outputs)
        for v in self.outputs:
            v.producer = self

    def all_inputs(self) -> list[Value]:
        """Regular inputs followed by tensor-argument values (in argument-name order)."""
        targs = self._tensor_args
        return list(self._inputs) + [targs[k] for k in sorted(targs)]

    def key(self) -> tuple:
        """Structural identity used by CSE: op, device, constant args, input value ids."""
        return (self.op, str(self.device), freeze(self.args),
                tuple(v.id for v in self._inputs),
                tuple((k, v.id) for k, v in sorted(self._tensor_args.items())))

    def __repr__(self) -> str:
        return f"Node({self.op} #{self.id} @ {self.callsite})"


@dataclass(frozen=True)
class Stage:
    """One original op inside a fused node, as the kernels, the printer and the exports read it.

    Attributes
    ----------
    op : str
        The original op (``"resize"``).
    name : str
        Its short stage name, the fused kernel's vocabulary (``"decode"``, ``"rrc"``,
        ``"resize"``, ``"flip"``, ``"cmn"``).
    args : tuple[tuple[str, Any], ...]
        Its constant arguments as ``(name, value)`` pairs sorted by name (hashable, so fused
        nodes still have a CSE key and a plan-cache signature).
    tensor_args : tuple[tuple[str, str], ...]
        Its per-sample arguments: ``(argument name, key of the fused node's tensor_args)``.
    """

    op: str
    name: str
    args: tuple[tuple[str, Any], ...] = ()
    tensor_args: tuple[tuple[str, str], ...] = ()

    def arg(self, name: str, default=None):
        """The constant argument ``name``, or ``default`` when it is not given."""
        for k, v in self.args:
            if k == name:
                return v
        return default

    def tensor_arg(self, name: str) -> str | None:
        """The fused node's ``tensor_args`` key holding the per-sample argument ``name``."""
        for k, key in self.tensor_args:
            if k == name:
                return key
        return None


def make_stage(op: str, name: str, args: Mapping[str, Any],
               tensor_keys: Mapping[str, str] = MappingProxyType({})) -> Stage:
    """A :class:`Stage` from an op's argument dict (pairs sorted by name; the values are kept
    as they are: hashable, as every node's constant arguments)."""
    return Stage(op, name, tuple(sorted(args.items())), tuple(sorted(tensor_keys.items())))


def stages_of(node: Node) -> tuple[Stage, ...]:
    """The :class:`Stage` records of a fused node (``args["stages"]``); ``()`` for others."""
    stages = node.args.get("stages")
    if isinstance(stages, tuple) and stages and isinstance(stages[0], Stage):
        return stages
    return ()


# A kernel gets the node's arguments as a dict (``args["stages"]`` the records, a tensor
# argument's data under its key); these read a fused node's stages from it.
def stage_names(kernel_args: Mapping[str, Any]) -> tuple[str, ...]:
    """The short names of the stages in a fused kernel's argument dict, in order."""
    return tuple(s.name for s in kernel_args.get("stages", ()))


def stage_args(kernel_args: Mapping[str, Any], name: str) -> dict[str, Any]:
    """Every argument of the stage called ``name`` (constants, and the data of its tensor
    arguments as found in ``kernel_args``); ``{}`` when there is no such stage."""
    for s in kernel_args.get("stages", ()):
        if s.name == name:
            out = dict(s.args)
            for arg, key in s.tensor_args:
                out[arg] = kernel_args[key]
            return out
    return {}


class Graph:
    """A DAG of nodes in topological order, with the values asked for as ``outputs``.

    Leaves are values without a producer or already materialized (their producers are not part
    of the graph). ``nodes`` is kept topologically sorted by every pass; passes replace the
    list (``graph.nodes = [...]``) rather than editing it in place, so the membership index
    behind ``node in graph`` stays right (the IR checker verifies it).
    """

    def __init__(self, nodes: list[Node], outputs: list[Value]):
        self.nodes = nodes
        self.outputs = outputs

    @property
    def nodes(self) -> list[Node]:
        return self._nodes

    @nodes.setter
    def nodes(self, nodes: list[Node]) -> None:
        self._nodes = nodes
        self._members = {id(n) for n in nodes}

    def __contains__(self, node) -> bool:
        return id(node) in self._members

    def membership_is_current(self) -> bool:
        """True when the membership index matches ``nodes`` (for the IR checker)."""
        return self._members == {id(n) for n in self._nodes}

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

    def producer_of(self, value: Value) -> Node | None:
        """The node of this graph computing ``value``, or None (a leaf of this graph).

        Follows the value's producer link, which the runtime drops once the value is computed:
        ask before the graph runs (as passes do)."""
        p = value.producer
        return p if p is not None and id(p) in self._members else None

    def users(self, value: Value) -> list[Node]:
        """The nodes of this graph reading ``value`` (nodes outside it, pending work that was
        not asked for, are not counted)."""
        return [n for n in value.users if id(n) in self._members]

    def replace_all_uses_with(self, old: Value, new: Value) -> list[Node]:
        """Make every node of this graph and the graph's outputs read ``new`` instead of ``old``;
        returns the rewired nodes. Nodes outside the graph keep reading ``old``."""
        rewired = [n for n in self.users(old) if n.replace_input_with(old, new)]
        self.outputs = [new if v is old else v for v in self.outputs]
        return rewired

    def leaves(self) -> list[Value]:
        """Input values the graph reads but does not compute (by the nodes' outputs, so this
        also holds for an executed graph whose values dropped their producer links)."""
        produced = {id(v) for n in self._nodes for v in n.outputs}
        out, seen = [], set()
        for n in self._nodes:
            for v in n.all_inputs():
                if id(v) not in produced and id(v) not in seen:
                    seen.add(id(v))
                    out.append(v)
        return out

    def to_networkx(self):
        """A ``networkx.DiGraph`` with node ids as vertices (for analyses and export)."""
        import networkx as nx
        g = nx.DiGraph()
        producer = {id(v): n for n in self._nodes for v in n.outputs}
        for n in self._nodes:
            g.add_node(n.id, op=n.op, node=n)
            for v in n.all_inputs():
                p = producer.get(id(v))
                if p is not None:
                    g.add_edge(p.id, n.id, value=v.id)
        return g

    def __len__(self) -> int:
        return len(self._nodes)


def clone_graph(graph: Graph) -> Graph:
    """A copy of the graph's nodes and produced values (same ids), sharing the leaves.

    Used to compile a graph for inspection (``explain``) without touching the pending nodes.
    The copies carry the pass metadata but no run state.
    """
    vmap: dict[int, Value] = {}
    nodes = []
    for n in graph.nodes:
        ins = [vmap.get(v.id, v) for v in n.inputs]
        targs = {k: vmap.get(v.id, v) for k, v in n.tensor_args.items()}
        c = Node(n.op, ins, n.args, targs, [v.meta for v in n.outputs], n.device, n.callsite)
        c.id = n.id
        c.meta = dict(n.meta)
        c.rng, c.rng_default = n.rng, n.rng_default
        for old, new in zip(n.outputs, c.outputs):
            new.id = old.id
            new.holder = old.holder
            vmap[old.id] = new
        nodes.append(c)
    return Graph(nodes, [vmap.get(v.id, v) for v in graph.outputs])
