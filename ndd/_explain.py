"""``ndd.explain``: what the compiler did."""
from __future__ import annotations

from compiler.explain import explain_graph


def explain(handle=None) -> str:
    from ndd._evaluate import last_plan
    if handle is None:
        plan = last_plan()
        if plan is None:
            return "(nothing has been compiled yet on this thread)"
        return explain_graph(plan)
    value = handle._value
    if value.data is not None and value.producer is None:
        return f"%{value.id} is already computed (leaf); nothing to compile"
    from compiler.ir import Graph
    from compiler.pipeline import compile_graph
    graph = Graph.from_outputs([value])
    # Explaining must not run anything: compile a throwaway plan over the same nodes.
    plan = compile_graph(graph, dry_run=True)
    return explain_graph(plan)
