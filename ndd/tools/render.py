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

from compiler.export.dot import DEAD_FILL, DEAD_FONT, node_label, op_colour, value_text
from compiler.ir import stages_of


def have_graphviz() -> bool:
    """True when the Graphviz ``dot`` program is on PATH."""
    return shutil.which("dot") is not None


def _figure(w, h):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(w, h))
    FigureCanvasAgg(fig)
    return fig


# ------------------------------------------------------------------ matplotlib fallback
# The fallback draws in inches (axes limits = figure size), so box sizes follow the text:
# monospace 7 pt is ~0.6 em wide per character and ~1.2 em per line.
_FONT = 7
_CW, _LH, _PAD = 0.6 * _FONT / 72, 1.25 * _FONT / 72, 0.07
_GAP_X, _GAP_Y, _MARGIN = 0.35, 0.45, 0.25
_CLUSTER_PAD, _STAGE_GAP = 0.12, 0.22
_CLUSTER_FILL, _CLUSTER_EDGE = "#fff5f5", "#e03131"
# what each fused stage does, for the cluster title ("ROI decode + resize + normalize")
_STAGE_ROLE = {"random_resized_crop": "resize", "resize": "resize", "flip": "flip",
               "crop_mirror_normalize": "normalize", "crop": "crop"}


def _box_size(label: str) -> tuple[float, float]:
    lines = label.split("\n")
    return (max(len(s) for s in lines) * _CW + 2 * _PAD, len(lines) * _LH + 2 * _PAD)


def fusion_title(node) -> str:
    """Cluster title of a fused node: ``fused.image #29: ROI decode + resize + normalize``.

    A decoding stage followed by a cropping stage decodes only the region of interest
    (``ROI decode``); other stages are named by :data:`_STAGE_ROLE` (else by their op).
    """
    stages = list(node.meta["fused_from"])
    roles = []
    for k, st in enumerate(stages):
        if st.startswith("decoders."):
            roi = k + 1 < len(stages) and stages[k + 1] in (
                "random_resized_crop", "crop", "crop_mirror_normalize")
            roles.append("ROI decode" if roi else "decode")
        else:
            roles.append(_STAGE_ROLE.get(st, st))
    return f"{node.op} #{node.id}: " + " + ".join(roles)


class _Item:
    """One unit of the layered layout: a box, or a fused cluster of stacked stage boxes.

    ``boxes`` holds (gid, label, fill, style, dx, dy, w, h) relative to the item's top-left.
    """

    def __init__(self, key, boxes, title=None):
        self.key, self.title = key, title
        if title is None:
            gid, label, fill, style = boxes[0]
            w, h = _box_size(label)
            self.boxes = [(gid, label, fill, style, 0.0, 0.0, w, h)]
            self.w, self.h = w, h
            return
        sizes = [_box_size(b[1]) for b in boxes]
        title_h = (title.count("\n") + 1) * _LH + _PAD
        inner_w = max([w for w, _ in sizes] + [len(s) * _CW for s in title.split("\n")])
        self.w = inner_w + 2 * _CLUSTER_PAD
        self.boxes, y = [], _CLUSTER_PAD + title_h
        for (gid, label, fill, style), (w, h) in zip(boxes, sizes):
            self.boxes.append((gid, label, fill, style, (self.w - w) / 2, y, w, h))
            y += h + _STAGE_GAP
        self.h = y - _STAGE_GAP + _CLUSTER_PAD


def _stage_boxes(n, shapes):
    """Box specs of a fused node's stages: op and ``file:line`` of each original node; the last
    stage also carries the fused node's outputs, device and lane."""
    stages = list(n.meta["fused_from"])
    sites = [s for _, s in (n.meta.get("fused_sites") or [])]
    where = str(n.device) + (f"  lane {n.meta['lane']}" if "lane" in n.meta else "")
    boxes = []
    for k, st in enumerate(stages):
        if k == len(stages) - 1:
            label = node_label(n, shapes, op=st)
        else:
            label = "\n".join([st, where] + ([sites[k]] if k < len(sites) else []))
        boxes.append((f"n{n.id}_{k}", label, op_colour(st), "stage"))
    return boxes


def _layout_items(graph, dead, shapes):
    """Items and edges ((src key, src box), (dst key, dst box), label, style) of the picture."""
    items, edges, exit_of = {}, [], {}
    for v in graph.leaves():
        items[f"v{v.id}"] = _Item(f"v{v.id}", [(f"v{v.id}", _value_label(v, shapes),
                                                "#f8f9fa", "leaf")])
        exit_of[v.id] = (f"v{v.id}", 0)
    dead_ids = {n.id for n in dead}
    for n in list(graph.nodes) + list(dead):
        key = f"n{n.id}"
        if n.meta.get("fused_from"):
            items[key] = _Item(key, _stage_boxes(n, shapes), title=fusion_title(n))
        elif n.id in dead_ids:
            items[key] = _Item(key, [(key, node_label(n, shapes) + "\n(dead: removed)",
                                      DEAD_FILL, "dead")])
        else:
            style = "merged" if n.meta.get("merged") else "node"
            items[key] = _Item(key, [(key, node_label(n, shapes), op_colour(n.op), style)])
        for v in n.outputs:
            exit_of.setdefault(v.id, (key, len(items[key].boxes) - 1))
    for n in list(graph.nodes) + list(dead):
        key, style = f"n{n.id}", ("dead" if n.id in dead_ids else "data")
        for v in n.inputs:
            if v.id in exit_of:
                edges.append((exit_of[v.id], (key, 0), f"%{v.id}", style))
        stages = stages_of(n)
        for name, v in sorted(n.tensor_args.items()):
            if v.id in exit_of:     # the box of the stage reading it (else the first)
                k = next((i for i, s in enumerate(stages)
                          if any(key == name for _, key in s.tensor_args)), 0)
                edges.append((exit_of[v.id], (key, k), f"{name}=%{v.id}", "arg"))
        for k in range(1, len(items[key].boxes)):
            edges.append(((key, k - 1), (key, k), "", "stage"))
    items["out"] = _Item("out", [("out", "out", "#ffffff", "out")])
    for v in graph.outputs:
        if v.id in exit_of:
            edges.append((exit_of[v.id], ("out", 0), f"%{v.id}", "data"))
    return items, edges


def _value_label(v, shapes) -> str:
    return value_text(v, shapes)


def _place(items, edges):
    """Top-left corner of every item (inches, y down) and the picture size: rows are
    ``networkx.topological_generations`` of the item graph, each row ordered by the mean x of
    the item's predecessors (one barycentre pass) and centred."""
    import networkx as nx
    g = nx.DiGraph()
    g.add_nodes_from(items)
    g.add_edges_from((a[0], b[0]) for a, b, _, _ in edges if a[0] != b[0])
    order = {k: i for i, k in enumerate(items)}
    layers = [sorted(layer, key=order.get) for layer in nx.topological_generations(g)]
    widths = [sum(items[k].w for k in layer) + _GAP_X * (len(layer) - 1) for layer in layers]
    width = max(widths, default=1.0) + 2 * _MARGIN
    pos, centre, y = {}, {}, _MARGIN
    for layer in layers:
        preds = {k: [centre[p] for p in g.predecessors(k) if p in centre] for k in layer}
        layer.sort(key=lambda k: (sum(preds[k]) / len(preds[k]) if preds[k] else 0.0, order[k]))
        x = (width - (sum(items[k].w for k in layer) + _GAP_X * (len(layer) - 1))) / 2
        for k in layer:
            pos[k] = (x, y)
            centre[k] = x + items[k].w / 2
            x += items[k].w + _GAP_X
        y += max(items[k].h for k in layer) + _GAP_Y
    return pos, width, y - _GAP_Y + _MARGIN


def _draw_layered(graph, dead, shapes):
    from matplotlib.patches import FancyBboxPatch
    items, edges = _layout_items(graph, list(dead), shapes)
    pos, width, height = _place(items, edges)
    fig = _figure(max(width, 3.0), max(height, 2.0))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    ax.set_xlim(0, max(width, 3.0))
    ax.set_ylim(max(height, 2.0), 0)
    rect = {}
    for key, it in items.items():
        x0, y0 = pos[key]
        if it.title is not None:
            ax.add_patch(FancyBboxPatch((x0, y0), it.w, it.h, gid=f"cluster_{key[1:]}",
                                        boxstyle="round,pad=0,rounding_size=0.08",
                                        facecolor=_CLUSTER_FILL, edgecolor=_CLUSTER_EDGE,
                                        linewidth=1.5, zorder=1))
            ax.text(x0 + it.w / 2, y0 + _CLUSTER_PAD, it.title, ha="center", va="top",
                    fontsize=_FONT, family="monospace", fontweight="bold",
                    color=_CLUSTER_EDGE, gid=f"cluster_{key[1:]}_label", zorder=4,
                    bbox=dict(boxstyle="square,pad=0.05", facecolor=_CLUSTER_FILL,
                              edgecolor="none"))
        for k, (gid, label, fill, style, dx, dy, w, h) in enumerate(it.boxes):
            bx, by = x0 + dx, y0 + dy
            rect[(key, k)] = (bx, by, w, h)
            _draw_box(ax, gid, label, fill, style, bx, by, w, h)
    for (src, dst, label, style) in edges:
        _draw_edge(ax, rect[src], rect[dst], label, style)
    return fig


def _draw_box(ax, gid, label, fill, style, x, y, w, h):
    from matplotlib.patches import FancyBboxPatch
    edge, colour, ls, lw = "#333333", "black", "-", 0.8
    shape = "round,pad=0,rounding_size=0.05"
    if style == "dead":
        edge, colour, ls = DEAD_FONT, DEAD_FONT, "--"
    elif style == "leaf":
        edge, shape = "#868e96", "round,pad=0,rounding_size=%.3f" % (h / 2)
    elif style == "out":
        shape = "circle,pad=0"
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle=shape, facecolor=fill, edgecolor=edge,
                                linestyle=ls, linewidth=lw, gid=gid, zorder=2))
    if style == "merged":    # double border, like Graphviz peripheries=2
        ax.add_patch(FancyBboxPatch((x - 0.03, y - 0.03), w + 0.06, h + 0.06, boxstyle=shape,
                                    facecolor="none", edgecolor=edge, linewidth=lw, zorder=2))
    ax.text(x + w / 2, y + h / 2, label, ha="center", va="center", fontsize=_FONT,
            family="monospace", color=colour, zorder=3)


def _draw_edge(ax, a, b, label, style):
    ax0, ay0, aw, ah = a
    bx0, by0, bw, bh = b
    start = (ax0 + aw / 2, ay0 + ah)
    end = (bx0 + bw / 2, by0)
    if style == "arg" and by0 > ay0 + ah + 0.3:     # into a lower stage: reach its side
        end = (bx0 + bw, by0 + bh / 2) if start[0] > end[0] else (bx0, by0 + bh / 2)
    colour = {"stage": _CLUSTER_EDGE, "dead": DEAD_FONT}.get(style, "#555555")
    ls = {"stage": "--", "dead": "--", "arg": ":"}.get(style, "-")
    ax.annotate("", xy=end, xytext=start, xycoords="data",
                arrowprops=dict(arrowstyle="-|>", color=colour, linestyle=ls, lw=0.9,
                                shrinkA=0, shrinkB=0, mutation_scale=8), zorder=1.5)
    if label:
        t = 0.5 if style == "data" else 0.12     # arg labels near their source
        ax.text(start[0] + t * (end[0] - start[0]), start[1] + t * (end[1] - start[1]), label, fontsize=_FONT - 1,
                ha="center", va="center", color="#555555", family="monospace", zorder=3,
                bbox=dict(boxstyle="square,pad=0.1", facecolor="white", edgecolor="none"))


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
    import matplotlib
    fig = _draw_layered(graph, list(dead), shapes or {})
    if svg_path is not None:
        with matplotlib.rc_context({"svg.fonttype": "none"}):   # labels stay <text>
            fig.savefig(svg_path, format="svg")
    if png_path is not None:
        fig.savefig(png_path, format="png", dpi=150)
    return "matplotlib"


def render_timeline(spans, path, title: str = "ndd timeline") -> None:
    """A Gantt chart of the spans: one row per (thread, lane), bars coloured by op.

    Parameters
    ----------
    spans : list of runtime.trace.Span
    path : path-like
        PNG file to write.
    """
    rows = sorted({timeline_row(s) for s in spans})
    fig = _figure(11, max(2.5, 0.45 * len(rows) + 1.5))
    ax = fig.add_axes((0.18, 0.18, 0.8, 0.72))
    if spans:
        origin = min(s.t0 for s in spans)
        for s in spans:
            ax.barh(rows.index(timeline_row(s)), (s.t1 - s.t0) * 1e3, left=(s.t0 - origin) * 1e3,
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


def timeline_row(span) -> str:
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
