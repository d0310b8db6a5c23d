"""``ndd.explain``: what the compiler did."""
from __future__ import annotations

from compiler.explain import explain_graph
from compiler.ir import Graph
from compiler.pipeline import compile_graph
from ndd._capture_state import current_capture
from ndd._evaluate import last_plan


def explain(handle=None) -> str:
    """Text of the graph (as recorded and as compiled) behind a value, or of the last plan."""
    if handle is None:
        plan = last_plan()
        if plan is None:
            return "(nothing has been compiled yet on this thread)"
        return explain_graph(plan)
    value = handle._value
    if value.data is not None and value.producer is None:
        inst = getattr(current_capture(), "inst", None)     # a compiled loop's batch
        plan = getattr(inst, "plan", None)
        if plan is not None and any(v is value for outs in inst.outputs for v in outs):
            return (f"%{value.id} was computed ahead of the loop body by the compiled loop; "
                    f"this batch's compiled plan:\n" + explain_graph(plan))
        return (f"%{value.id} is already computed (leaf); nothing to compile. Explain a "
                f"value before consuming it to see its graph; ndd.explain() shows the last "
                f"plan compiled on this thread")
    graph = Graph.from_outputs([value])
    # Explaining must not run anything: compile a throwaway plan over the same nodes.
    plan = compile_graph(graph, dry_run=True)
    return explain_graph(plan)
