"""A graph as Graphviz DOT text, written without Graphviz.

* one box per node, filled with a stable colour per op kind (:func:`op_colour`);
* label lines: op, then per output ``%id dtype[layout] shape`` (shape or ragged range when
  known), then ``device  lane N``, then the user's ``file:line``; CSE-merged nodes get a
  ``merged: ...`` line and a double border;
* a fused node is drawn as a cluster (``subgraph cluster_<id>``) holding one box per fused stage;
* leaves (reader outputs, user arrays) are grey ellipses, the requested outputs point to ``out``;
* dead nodes (removed by DCE; taken from the recorded graph) are greyed and dashed.
"""
from __future__ import annotations

import zlib
from typing import Iterable

from compiler.ir import Graph, Node, Value
from compiler.printer import DTYPE_SHORT

# Fixed colours for the op kinds of the catalogue; other kinds hash into PALETTE.
KIND_COLOURS = {
    "decoders": "#ffd8a8", "readers": "#e9ecef", "resize": "#a5d8ff", "crop": "#b2f2bb",
    "crop_mirror_normalize": "#d0bfff", "random_resized_crop": "#99e9f2", "flip": "#ffec99",
    "random": "#fcc2d7", "arithmetic": "#c3fae8", "math": "#c3fae8", "cast": "#eebefa",
    "fused": "#ffc9c9", "transpose": "#d8f5a2", "reshape": "#d8f5a2", "copy": "#dee2e6",
    "peek_image_shape": "#ffe8cc",
}
PALETTE = ("#a5d8ff", "#b2f2bb", "#ffec99", "#ffd8a8", "#d0bfff", "#fcc2d7", "#99e9f2",
           "#c3fae8", "#eebefa", "#d8f5a2")
DEAD_FILL = "#eeeeee"
DEAD_FONT = "#999999"


def op_kind(op: str) -> str:
    """The colour key of an op: the part before the first dot (``decoders.image`` -> ``decoders``)."""
    return op.split(".", 1)[0]


def op_colour(op: str) -> str:
    """Stable fill colour (``#rrggbb``) of an op: fixed per known kind, else a CRC32 hash of the
    kind into :data:`PALETTE` (same colour in every run and every graph)."""
    kind = op_kind(op)
    if kind in KIND_COLOURS:
        return KIND_COLOURS[kind]
    return PALETTE[zlib.crc32(kind.encode()) % len(PALETTE)]


def _q(text: str) -> str:
    """A DOT double-quoted string (``\\l``-free; newlines become ``\\n``)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def value_text(v: Value, shapes: dict[int, str]) -> str:
    """``%id dtype[layout]`` and the shape text of ``v`` when ``shapes`` knows it."""
    m = v.meta
    text = f"%{v.id} {DTYPE_SHORT.get(m.dtype, m.dtype)}[{m.layout or ''}]"
    shape = shapes.get(v.id)
    if shape:
        text += f" {shape}"
    return text


def node_label(node: Node, shapes: dict[int, str] | None = None, op: str | None = None) -> str:
    """The multi-line label of a node box (see the module docstring)."""
    shapes = shapes or {}
    lines = [op or node.op]
    lines += [value_text(v, shapes) for v in node.outputs]
    where = str(node.device)
    if "lane" in node.meta:
        where += f"  lane {node.meta['lane']}"
    lines.append(where)
    lines.append(node.callsite)
    if node.meta.get("merged"):
        lines.append("merged: " + ", ".join(str(m) for m in node.meta["merged"]))
    return "\n".join(lines)


def _attrs(**kw) -> str:
    return "[" + ", ".join(f"{k}={_q(str(v))}" for k, v in kw.items()) + "]"


def to_dot(graph: Graph, *, name: str = "ndd", dead: Iterable[Node] = (),
           shapes: dict[int, str] | None = None) -> str:
    """DOT text of ``graph``.

    Parameters
    ----------
    graph : compiler.ir.Graph
        Usually a compiled plan's graph (nodes carry ``lane``, ``fused_from``, ``merged``).
    name : str
        The ``digraph`` name.
    dead : iterable of Node
        Nodes removed by dead-code elimination (from the recorded graph), drawn greyed.
    shapes : dict[int, str], optional
        Value id -> shape text (``"224x224x3"`` or a ragged range), e.g. measured while running.

    Returns
    -------
    str
        ``digraph`` text; node ids are ``n<node id>`` (fused stages ``n<id>_<k>``), leaves
        ``v<value id>``, the outputs sink ``out``.
    """
    shapes = shapes or {}
    dead = list(dead)
    lines = [f"digraph {_q(name)} {{", "  rankdir=TB;",
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
             '  edge [fontname="Helvetica", fontsize=9, color="#555555"];']
    exit_of: dict[int, str] = {}     # value id -> DOT id of what produces it
    entry_of: dict[int, str] = {}    # node id -> DOT id receiving its inputs
    for n in list(graph.nodes) + dead:
        for v in n.outputs:
            exit_of.setdefault(v.id, f"n{n.id}" if not n.meta.get("fused_from")
                               else f"n{n.id}_{len(n.meta['fused_from']) - 1}")
        entry_of[n.id] = f"n{n.id}_0" if n.meta.get("fused_from") else f"n{n.id}"

    for v in graph.leaves():
        lines.append(f"  v{v.id} " + _attrs(label=value_text(v, shapes), shape="ellipse",
                                            style="filled", fillcolor="#f8f9fa",
                                            color="#868e96"))
        exit_of[v.id] = f"v{v.id}"

    for n in graph.nodes:
        stages = n.meta.get("fused_from")
        if stages:
            lines.append(f"  subgraph cluster_{n.id} {{")
            lines.append(f"    label={_q(f'{n.op} #{n.id}: ' + ' + '.join(stages))};")
            lines.append(f'    style="rounded,filled"; fillcolor="#fff5f5"; color="#e03131";')
            for k, st in enumerate(stages):
                last = k == len(stages) - 1
                label = node_label(n, shapes, op=st) if last else st
                lines.append(f"    n{n.id}_{k} " + _attrs(label=label, fillcolor=op_colour(st)))
                if k:
                    lines.append(f"    n{n.id}_{k - 1} -> n{n.id}_{k} "
                                 + _attrs(style="dashed", color="#e03131"))
            lines.append("  }")
        else:
            extra = {"peripheries": 2} if n.meta.get("merged") else {}
            lines.append(f"  n{n.id} " + _attrs(label=node_label(n, shapes),
                                                fillcolor=op_colour(n.op), **extra))

    for n in dead:
        lines.append(f"  n{n.id} " + _attrs(label=node_label(n, shapes) + "\n(dead: removed)",
                                            fillcolor=DEAD_FILL, fontcolor=DEAD_FONT,
                                            color=DEAD_FONT, style="rounded,filled,dashed"))

    dead_ids = {n.id for n in dead}
    for n in list(graph.nodes) + dead:
        for v in n.inputs:
            src = exit_of.get(v.id)
            if src is not None:
                style = {"style": "dashed", "color": DEAD_FONT} if n.id in dead_ids else {}
                lines.append(f"  {src} -> {entry_of[n.id]} " + _attrs(label=f"%{v.id}", **style))
        for k, v in sorted(n.tensor_args.items()):
            src = exit_of.get(v.id)
            if src is not None:
                lines.append(f"  {src} -> {entry_of[n.id]} "
                             + _attrs(label=f"{k}=%{v.id}", style="dotted"))
    lines.append('  out [shape=doublecircle, style=filled, fillcolor="#ffffff", label="out"];')
    for v in graph.outputs:
        src = exit_of.get(v.id)
        if src is not None:
            lines.append(f"  {src} -> out " + _attrs(label=f"%{v.id}"))
    lines.append("}")
    return "\n".join(lines) + "\n"
