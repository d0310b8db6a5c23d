"""A jaxpr-like text form of a graph: one line per node.

    { lambda %0:u8[] %1:i32[] .
      %2:u8[HWC] = decoders.image[output_type=RGB](%0)            # train.py:14  lane 0
      %3:f32[CHW] = crop_mirror_normalize[mean=(...)](%2, mirror=%5) # train.py:16  lane 0
      out (%3)
    }
"""
from __future__ import annotations

from compiler.ir import Graph, Node, Value, stages_of

#: Short element-type names of the text form (``u8``, ``f32``...).
DTYPE_SHORT = {"uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
               "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "float16": "f16",
               "float32": "f32", "float64": "f64", "bool": "bool", "bfloat16": "bf16",
               None: "?"}


def format_value(v: Value) -> str:
    m = v.meta
    dev = "" if m.device.kind == "cpu" else f"@{m.device}"
    return f"%{v.id}:{DTYPE_SHORT.get(m.dtype, m.dtype)}[{m.layout or ''}]{dev}"


def _fmt_arg(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, tuple):
        if len(v) > 6:
            return "(" + ", ".join(_fmt_arg(x) for x in v[:3]) + f", ... {len(v)} items)"
        return "(" + ", ".join(_fmt_arg(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return str(v)


def _fmt_pairs(pairs) -> list[str]:
    return [f"{k}={_fmt_arg(v)}" for k, v in pairs if v is not None]


def format_args(node: Node) -> str:
    """``k=v`` pairs of the constant arguments (unset and private ones left out); a fused
    node's stages come first, each as ``stage{k=v, ...}`` in order."""
    groups = []
    for st in stages_of(node):
        pairs = _fmt_pairs(st.args)
        if pairs:
            groups.append(f"{st.name}{{{', '.join(pairs)}}}")
    plain = _fmt_pairs((k, v) for k, v in sorted(node.args.items())
                       if not k.startswith("_") and k != "stages")
    return ", ".join(groups + plain)


def format_node(node: Node, show_lane: bool = True) -> str:
    outs = " ".join(format_value(v) for v in node.outputs)
    args = format_args(node)
    if "_seeds" in node.args:
        args = (args + ", " if args else "") + "rng=<drawn>"
    ins = [f"%{v.id}" for v in node.inputs]
    ins += [f"{k}=%{v.id}" for k, v in sorted(node.tensor_args.items())]
    text = f"{outs} = {node.op}[{args}]({', '.join(ins)})"
    dev = "" if node.device.kind == "cpu" else f" {node.device}"
    lane = f"  lane {node.meta['lane']}" if show_lane and "lane" in node.meta else ""
    extra = ""
    if node.meta.get("fused_from"):
        extra += f"  fused: {' + '.join(node.meta['fused_from'])}"
    if node.meta.get("merged"):
        extra += f"  merged: {', '.join(node.meta['merged'])}"
    return f"{text:<72s} # {node.callsite}{dev}{lane}{extra}"


def format_graph(graph: Graph, show_lane: bool = True) -> str:
    leaves = " ".join(format_value(v) for v in graph.leaves())
    lines = [f"{{ lambda {leaves} ."]
    for n in graph.nodes:
        lines.append("  " + format_node(n, show_lane))
    lines.append(f"  out ({', '.join('%' + str(v.id) for v in graph.outputs)})")
    lines.append("}")
    return "\n".join(lines)
