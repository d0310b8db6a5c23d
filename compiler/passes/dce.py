"""Dead-code elimination: keep only nodes that the requested outputs need."""
from __future__ import annotations

from compiler.ir import Graph
from compiler.passes.result import PassResult
from compiler.schema import REGISTRY


def dce(graph: Graph) -> PassResult:
    """Drop nodes none of whose outputs is requested or read by a kept node.

    Values held by live user handles but not requested are not computed now: their producers
    stay in the pending web of nodes and run on demand if the user consumes them later. Nodes
    with the ``has_side_effects`` trait are always kept.
    """
    wanted = {v.id for v in graph.outputs}
    keep = []
    notes = []
    for node in reversed(graph.nodes):
        schema = REGISTRY.get(node.op)
        side = schema is not None and "has_side_effects" in schema.traits
        if side or any(v.id in wanted for v in node.outputs):
            keep.append(node)
            for v in node.all_inputs():
                wanted.add(v.id)
        else:
            notes.append(("dce", f"removed {node.op} #{node.id} ({node.callsite})"))
    keep.reverse()
    modified = len(keep) != len(graph.nodes)
    graph.nodes = keep
    return PassResult(graph, modified, notes)
