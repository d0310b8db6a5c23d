"""Readable reports of what the compiler did to a graph."""
from __future__ import annotations

from compiler.printer import format_graph


def explain_graph(plan) -> str:
    """Recorded graph, compiled graph (with lanes), then the notes of each pass
    (fusions applied and refused with reasons, nodes removed or merged)."""
    parts = ["== recorded ==", plan.recorded or "(not kept)", "",
             f"== compiled ({len(plan.steps)} steps on {plan.num_lanes} lane(s)) ==",
             format_graph(plan.graph)]
    notes = plan.notes
    if notes:
        parts += ["", "== passes =="]
        parts += [f"[{name}] {msg}" for name, msg in notes]
    return "\n".join(parts)
