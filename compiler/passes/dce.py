"""Dead-code elimination: keep only nodes that the requested outputs (or live handles) need."""
from __future__ import annotations

from compiler.ir import Graph


def dce(graph: Graph) -> Graph:
    """Drop nodes none of whose outputs is requested, live, or read by a kept node.

    A value is *needed* if it is a graph output or is held by a live user handle (weak
    reference). Nodes with the ``has_side_effects`` trait are always kept.
    """
    from compiler.schema import REGISTRY
    wanted = {v.id for v in graph.outputs}
    keep = []
    for node in reversed(graph.nodes):
        schema = REGISTRY.get(node.op)
        side = schema is not None and "has_side_effects" in schema.traits
        if side or any(v.id in wanted or v.is_live for v in node.outputs):
            keep.append(node)
            for v in node.all_inputs():
                wanted.add(v.id)
        else:
            graph.notes.append(("dce", f"removed {node.op} #{node.id} ({node.callsite})"))
    keep.reverse()
    graph.nodes = keep
    return graph
