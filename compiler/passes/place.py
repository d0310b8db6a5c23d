"""Device placement: every node reads its inputs on its own device.

A node's device is the ``device=`` argument or the one inferred from its inputs (set by the
front end). Where an input lives on another device, the pass inserts an explicit ``transfer``
node (a host <-> device copy) before the reader, shared by all readers on that device, so the
scheduler can put copies on lanes of their own. Per-sample tensor arguments are read by the
kernels' host side (they become per-sample descriptors, as DALI's argument inputs, which live on
the CPU): a GPU tensor argument gets a transfer to the CPU, a CPU one stays. A decoder placed on
a GPU (DALI's "mixed" decoders: ``decoders.image(..., device="gpu")``) reads its encoded files on
the host (:func:`reads_on_host`) and writes its images on the GPU: its inputs stay on (or go
to) the CPU. On a CPU-only graph the pass changes nothing.
"""
from __future__ import annotations

from compiler.ir import Graph, Node, Value, stage_names
from compiler.passes.result import PassResult
from compiler.types import CPU

__all__ = ["place", "reads_on_host", "node_reads_on_host", "HOST_INPUT_PREFIXES"]

#: ops whose regular inputs are read on the host whatever their device (the decoders: encoded
#: bytes in host memory, decoded images on the node's device)
HOST_INPUT_PREFIXES = ("decoders.", "experimental.decoders.")


def reads_on_host(op: str) -> bool:
    """Whether ``op`` reads its regular inputs on the CPU even when placed on a GPU."""
    return op.startswith(HOST_INPUT_PREFIXES)


def node_reads_on_host(node: Node) -> bool:
    """:func:`reads_on_host` of ``node``'s op, or a ``fused.image`` that decodes (its first
    stage a decoder: the encoded files stay on the host)."""
    return reads_on_host(node.op) or (node.op == "fused.image"
                                      and stage_names(node.args)[:1] == ("decode",))


def place(graph: Graph) -> PassResult:
    copies: dict[tuple[int, str], Value] = {}
    nodes: list[Node] = []
    notes = []

    def moved(v: Value, node: Node, target) -> Value:
        if v.meta.device == target:
            return v
        key = (v.id, str(target))
        out = copies.get(key)
        if out is None:
            t = Node("transfer", [v], {"device": str(target)}, None,
                     [v.meta.with_(device=target)], device=target, callsite=node.callsite)
            nodes.append(t)
            out = copies[key] = t.outputs[0]
            notes.append(("place", f"copy %{v.id} {v.meta.device} -> "
                                   f"{target} for {node.op} ({node.callsite})"))
        return out

    for node in graph.nodes:
        if node.op == "transfer":       # a copy already: its input may live anywhere
            nodes.append(node)
            continue
        home = CPU if node_reads_on_host(node) else node.device
        ins = tuple(moved(v, node, home) for v in node.inputs)
        targs = {k: moved(v, node, CPU) for k, v in node.tensor_args.items()}
        if any(a is not b for a, b in zip(ins, node.inputs)):
            node.inputs = ins
        if any(targs[k] is not v for k, v in node.tensor_args.items()):
            node.tensor_args = targs
        nodes.append(node)
    graph.nodes = nodes
    return PassResult(graph, bool(copies), notes)
