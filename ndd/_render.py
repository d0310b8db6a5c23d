"""Pictures for ``ndd graph``: the DAG (SVG + PNG), the per-lane timeline (PNG), an HTML page.

The DAG is drawn by Graphviz ``dot`` when it is on ``PATH`` (from the DOT text of
:func:`compiler.export.dot.to_dot`, fused groups as clusters); otherwise by a layered layout
(``networkx.topological_generations``) drawn with matplotlib. Matplotlib is used through
``matplotlib.figure.Figure`` only (no pyplot, no global backend switch).
"""
from __future__ import annotations

import base64
import html
import shutil
import subprocess

from compiler.export.dot import DEAD_FILL, DEAD_FONT, node_label, op_colour


def have_graphviz() -> bool:
    """True when the Graphviz ``dot`` program is on PATH."""
    return shutil.which("dot") is not None


def _figure(w, h):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(w, h))
    FigureCanvasAgg(fig)
    return fig


def _layered_items(graph, dead, shapes):
    """(key, label, colour, style) per box and edges (key, key) for the matplotlib layout."""
    import networkx as nx
    g = nx.DiGraph()
    producer = {}
    for v in graph.leaves():
        g.add_node(f"v{v.id}", label=f"%{v.id} {(shapes or {}).get(v.id, '')}".strip(),
                   fill="#f8f9fa", style="leaf")
        producer[v.id] = f"v{v.id}"
    dead_ids = {n.id for n in dead}
    for n in list(graph.nodes) + list(dead):
        if n.meta.get("fused_from"):
            label = "fused: " + " + ".join(n.meta["fused_from"]) + "\n" + \
                node_label(n, shapes).split("\n", 1)[1]
            style, fill = "fused", op_colour(n.op)
        else:
            label = node_label(n, shapes)
            style, fill = ("dead", DEAD_FILL) if n.id in dead_ids else ("node", op_colour(n.op))
        g.add_node(f"n{n.id}", label=label, fill=fill, style=style)
        for v in n.outputs:
            producer.setdefault(v.id, f"n{n.id}")
    for n in list(graph.nodes) + list(dead):
        for v in n.all_inputs():
            if v.id in producer:
                g.add_edge(producer[v.id], f"n{n.id}")
    return g


def _draw_layered(graph, dead, shapes):
    import networkx as nx
    g = _layered_items(graph, dead, shapes)
    layers = list(nx.topological_generations(g)) if len(g) else []
    width = max((len(layer) for layer in layers), default=1)
    fig = _figure(max(6.0, 3.2 * width), max(3.0, 1.9 * len(layers)))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    pos = {}
    for depth, layer in enumerate(layers):
        for k, key in enumerate(sorted(layer)):
            pos[key] = ((k + 0.5) / len(layer), 1 - (depth + 0.5) / len(layers))
    for a, b in g.edges:
        ax.annotate("", xy=pos[b], xytext=pos[a], xycoords="axes fraction",
                    arrowprops=dict(arrowstyle="->", color="#555555", shrinkA=22, shrinkB=22))
    for key, (x, y) in pos.items():
        d = g.nodes[key]
        box = dict(boxstyle="round,pad=0.4", facecolor=d["fill"], edgecolor="#333333")
        colour = "black"
        if d["style"] == "fused":
            box.update(edgecolor="#e03131", linewidth=2)
        elif d["style"] == "dead":
            box.update(edgecolor=DEAD_FONT, linestyle="--")
            colour = DEAD_FONT
        elif d["style"] == "leaf":
            box.update(boxstyle="round4,pad=0.3", edgecolor="#868e96")
        ax.text(x, y, d["label"], ha="center", va="center", fontsize=7, color=colour, bbox=box,
                transform=ax.transAxes, family="monospace")
    return fig


def render_graph(dot_text: str, graph, dead=(), shapes=None, svg_path=None, png_path=None):
    """Write the DAG picture(s).

    Parameters
    ----------
    dot_text : str
        DOT text of the same graph (used when Graphviz is available).
    graph : compiler.ir.Graph
    dead : sequence of Node
        Dead (DCE-removed) nodes to grey out.
    shapes : dict[int, str], optional
        Value id -> shape text.
    svg_path, png_path : path-like, optional
        Where to write each format (skipped when None).

    Returns
    -------
    str
        ``"graphviz"`` or ``"matplotlib"``: which renderer was used.
    """
    if have_graphviz():
        for path, fmt in ((svg_path, "svg"), (png_path, "png")):
            if path is not None:
                subprocess.run(["dot", f"-T{fmt}", "-o", str(path)], input=dot_text.encode(),
                               check=True, timeout=60)
        return "graphviz"
    fig = _draw_layered(graph, list(dead), shapes or {})
    if svg_path is not None:
        fig.savefig(svg_path, format="svg")
    if png_path is not None:
        fig.savefig(png_path, format="png", dpi=110)
    return "matplotlib"


def render_timeline(spans, path, title: str = "ndd timeline") -> None:
    """A Gantt chart of the spans: one row per (thread, lane), bars coloured by op.

    Parameters
    ----------
    spans : list of runtime.trace.Span
    path : path-like
        PNG file to write.
    """
    rows = sorted({_row(s) for s in spans})
    fig = _figure(11, max(2.5, 0.45 * len(rows) + 1.5))
    ax = fig.add_axes((0.18, 0.18, 0.8, 0.72))
    if spans:
        origin = min(s.t0 for s in spans)
        for s in spans:
            ax.barh(rows.index(_row(s)), (s.t1 - s.t0) * 1e3, left=(s.t0 - origin) * 1e3,
                    color=op_colour(s.op), edgecolor="#333333", linewidth=0.3, height=0.7)
        ax.set_yticks(range(len(rows)), rows, fontsize=8)
        ops = sorted({s.op for s in spans})
        from matplotlib.patches import Patch
        ax.legend(handles=[Patch(color=op_colour(o), label=o) for o in ops], fontsize=7,
                  loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=min(5, len(ops)))
    else:
        ax.text(0.5, 0.5, "no spans recorded", ha="center", transform=ax.transAxes)
    ax.set_xlabel("ms", fontsize=8, loc="right")
    ax.set_title(title, fontsize=10)
    ax.invert_yaxis()
    fig.savefig(path, format="png", dpi=100)


def _row(span) -> str:
    lane = "eager" if span.lane is None else f"lane {span.lane}"
    return f"{span.thread} / {lane}"


def write_html(path, text: str, svg: str, timeline_png: bytes, title: str = "ndd graph") -> None:
    """A self-contained page: the graph text, the SVG inline, the timeline PNG as a data URI."""
    uri = "data:image/png;base64," + base64.b64encode(timeline_png).decode()
    start = svg.find("<svg")
    svg = svg[start:] if start >= 0 else svg
    page = f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:1.5em}}pre{{background:#f8f9fa;padding:1em;
overflow:auto;font-size:12px}}.graph svg{{max-width:100%;height:auto}}</style></head>
<body><h1>{html.escape(title)}</h1>
<h2>Graph</h2><div class="graph" id="graph">{svg}</div>
<h2>Timeline</h2><img id="timeline" alt="per-lane timeline" src="{uri}">
<h2>Text</h2><pre id="text">{html.escape(text)}</pre>
</body></html>
"""
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)


def png_bytes(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


__all__ = ["render_graph", "render_timeline", "write_html", "have_graphviz"]
