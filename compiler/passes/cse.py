"""Common-subexpression elimination: merge identical pure nodes."""
from __future__ import annotations

from compiler.ir import Graph, Value


def cse(graph: Graph) -> Graph:
    """Merge nodes with the same op, device, constant arguments and inputs.

    Random, stateful, source and side-effecting ops are never merged (their schema traits say
    so). The merged node's outputs are redirected: every later reader of a removed node's output
    reads the kept node's output instead. A removed output the user still holds gets the kept
    node's result when the plan runs (recorded in ``graph.aliases``).
    """
    from compiler.schema import REGISTRY
    seen: dict[tuple, object] = {}
    replace: dict[int, Value] = {}
    kept = []
    aliases = getattr(graph, "aliases", {})
    for node in graph.nodes:
        if replace:
            node.inputs = tuple(replace.get(v.id, v) for v in node.inputs)
            node.tensor_args = {k: replace.get(v.id, v) for k, v in node.tensor_args.items()}
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
            replace[mine.id] = theirs
            aliases[mine.id] = (mine, theirs)
        other.meta.setdefault("merged", []).append(f"#{node.id} {node.callsite}")
        graph.notes.append(("cse", f"merged {node.op} #{node.id} ({node.callsite}) "
                                   f"into #{other.id} ({other.callsite})"))
    graph.outputs = [replace.get(v.id, v) if v.id in replace else v for v in graph.outputs]
    graph.nodes = kept
    graph.aliases = aliases
    return graph
