"""Exports of a graph for other tools: Graphviz DOT text (:mod:`compiler.export.dot`) and a JSON
document (:mod:`compiler.export.json`). Pure Python: neither needs Graphviz, numpy nor torch."""
from compiler.export.dot import op_colour, to_dot
from compiler.export.json import to_json, to_json_text

__all__ = ["to_dot", "op_colour", "to_json", "to_json_text"]
