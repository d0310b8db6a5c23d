"""Common-subexpression elimination: merge identical pure nodes."""
from __future__ import annotations

from compiler.ir import Graph
from compiler.passes.result import Alias, PassResult
from compiler.schema import REGISTRY


def cse(graph: Graph) -> PassResult:
    """Merge nodes with the same op, device, constant arguments and inputs.

    Random, stateful, source and side-effecting ops are never merged (their schema traits say
    so). The merged node's outputs are redirected: every later reader of a removed node's output
    (and the graph's outputs) reads the kept node's output instead
    (:meth:`Graph.replace_all_uses_with`). A removed output the user still holds gets the kept
    node's result when the plan runs (:attr:`PassResult.aliases`).
    """
    seen: dict[tuple, object] = {}
    kept = []
    aliases: list[Alias] = []
    notes = []
    for node in graph.nodes:
        schema = REGISTRY.get(node.op)
        if schema is None or not schema.is_pure or node.meta.get("no_cse"):
            kept.append(node)
            continue
        key = node.key()
        other = seen.get(key)
        if other is None:
            seen[key] = node
            kept.append(node)
            continue
        for mine, theirs in zip(node.outputs, other.outputs):
            graph.replace_all_uses_with(mine, theirs)
            aliases.append(Alias(mine, theirs))
        other.meta.setdefault("merged", []).append(f"#{node.id} {node.callsite}")
        notes.append(("cse", f"merged {node.op} #{node.id} ({node.callsite}) "
                             f"into #{other.id} ({other.callsite})"))
    graph.nodes = kept
    return PassResult(graph, bool(aliases), notes, aliases=tuple(aliases))
