"""A graph as a JSON document (nodes, edges by value id, leaves, outputs, pass notes).

Schema (``"format": "ndd-graph/2"``)::

    {"format": "ndd-graph/1",
     "leaves":  [{"id": 3, "dtype": "uint8", "ndim": 1, "layout": "", "device": "cpu",
                  "batch_size": 32}, ...],
     "nodes":   [{"id": 7, "op": "resize", "args": {...}, "inputs": [3],
                  "tensor_args": {"mirror": 5}, "outputs": [<value as in leaves>],
                  "device": "cpu", "callsite": "train.py:12", "lane": 0,
                  "fused_from": ["decoders.image", "resize"] | null, "merged": [...] | null,
                  "stages": [{"op": "resize", "name": "resize", "args": {...},
                              "tensor_args": {"mirror": "cmn.mirror"}}, ...] | null}],
     "outputs": [9],
     "notes":   [["fuse", "applied ..."], ...]}
"""
from __future__ import annotations

import json as _json

from compiler.ir import Graph, Node, Stage, Value, stages_of

FORMAT = "ndd-graph/2"


def _jsonable(obj):
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, (list, tuple)):
        return [_jsonable(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    return repr(obj)


def _value(v: Value) -> dict:
    m = v.meta
    return {"id": v.id, "dtype": m.dtype, "ndim": m.ndim, "layout": m.layout,
            "device": str(m.device), "batch_size": m.batch_size}


def _stage(st: Stage) -> dict:
    return {"op": st.op, "name": st.name, "args": {k: _jsonable(v) for k, v in st.args},
            "tensor_args": dict(st.tensor_args)}


def _node(n: Node) -> dict:
    stages = stages_of(n)
    return {
        "id": n.id, "op": n.op,
        "args": {k: _jsonable(v) for k, v in sorted(n.args.items())
                 if not k.startswith("_") and not (stages and k == "stages")},
        "inputs": [v.id for v in n.inputs],
        "tensor_args": {k: v.id for k, v in sorted(n.tensor_args.items())},
        "outputs": [_value(v) for v in n.outputs],
        "device": str(n.device), "callsite": n.callsite, "lane": n.meta.get("lane"),
        "fused_from": list(n.meta["fused_from"]) if n.meta.get("fused_from") else None,
        "merged": list(n.meta["merged"]) if n.meta.get("merged") else None,
        "stages": [_stage(st) for st in stages] if stages else None,
    }


def to_json(graph: Graph, notes=()) -> dict:
    """The graph as a JSON-serialisable dict (see the module docstring for the schema).

    Parameters
    ----------
    graph : compiler.ir.Graph
    notes : iterable of (str, str)
        The pass notes to include (a compiled plan's ``plan.notes``).

    Returns
    -------
    dict
        Constant arguments are converted to lists/numbers/strings; private arguments (names
        starting with ``_``, e.g. drawn seeds) are left out.
    """
    return {"format": FORMAT,
            "leaves": [_value(v) for v in graph.leaves()],
            "nodes": [_node(n) for n in graph.nodes],
            "outputs": [v.id for v in graph.outputs],
            "notes": [[name, msg] for name, msg in notes]}


def to_json_text(graph: Graph, indent: int | None = 1, notes=()) -> str:
    """:func:`to_json` serialised with ``json.dumps`` (keys in insertion order)."""
    return _json.dumps(to_json(graph, notes), indent=indent)
