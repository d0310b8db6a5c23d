"""Device placement: every node reads its inputs on its own device.

A node's device is the ``device=`` argument or the one inferred from its inputs (set by the
front end). Where an input lives on another device, the pass inserts an explicit ``transfer``
node (a host <-> device copy) before the reader, shared by all readers on that device, so the
scheduler can put copies on lanes of their own. On a CPU-only graph the pass changes nothing.
"""
from __future__ import annotations

from compiler.ir import Graph, Node


def place(graph: Graph) -> Graph:
    copies: dict[tuple[int, str], object] = {}
    nodes: list[Node] = []
    for node in graph.nodes:
        def moved(v):
            if v.meta.device == node.device:
                return v
            key = (v.id, str(node.device))
            out = copies.get(key)
            if out is None:
                t = Node("transfer", [v], {"device": str(node.device)}, None,
                         [v.meta.with_(device=node.device)], device=node.device,
                         callsite=node.callsite)
                nodes.append(t)
                out = copies[key] = t.outputs[0]
                graph.notes.append(("place", f"copy %{v.id} {v.meta.device} -> "
                                             f"{node.device} for {node.op} ({node.callsite})"))
            return out
        node.inputs = tuple(moved(v) for v in node.inputs)
        node.tensor_args = {k: moved(v) for k, v in node.tensor_args.items()}
        nodes.append(node)
    graph.nodes = nodes
    return graph
