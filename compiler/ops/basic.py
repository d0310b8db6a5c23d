"""Type and layout ops: cast, copy, transpose, reshape, and per-sample subscripting."""
from __future__ import annotations

from compiler.ir import ValueMeta
from compiler.schema import REQUIRED, ArgSpec, OpSchema, register

_EW = frozenset({"elementwise"})


def _cast_infer(metas, args):
    return [metas[0].with_(dtype=args["dtype"])]


register(OpSchema(
    "cast", ("input",), (ArgSpec("dtype", "dtype", REQUIRED, doc="Output type."),),
    _cast_infer, traits=_EW, public_name="cast", devices=("cpu", "gpu"),
    doc="Converts the element type. float -> int rounds half away from zero and saturates; "
        "int -> int saturates. Source: DALI ``cast`` (rounding observed in DALI 2.4)."))

def _cast_like_infer(metas, args):
    return [metas[0].with_(dtype=metas[1].dtype)]


register(OpSchema(
    "cast_like", ("input_0", "input_1"), (), _cast_like_infer, public_name="cast_like",
    devices=("cpu", "gpu"),
    doc="Converts the element type of ``input_0`` to that of ``input_1`` (only its dtype is "
        "read), with ``cast``'s rules. Source: DALI ``cast_like``."))

register(OpSchema("copy", ("input",), (), lambda m, a: [m[0]], public_name="copy",
                  doc="Copies the data."))


def _transpose_infer(metas, args):
    m = metas[0]
    perm = args.get("perm")
    if perm is None:        # DALI: the axes reversed
        perm = tuple(range(m.ndim - 1, -1, -1)) if m.ndim is not None else None
    if m.ndim is not None and sorted(perm) != list(range(m.ndim)):
        raise ValueError(f"perm {perm} is not a permutation of the {m.ndim} axes")
    layout = m.layout or ""
    if args.get("output_layout"):
        layout = args["output_layout"]
        if m.ndim is not None and len(layout) != m.ndim:
            raise ValueError(f"output_layout {layout!r} has {len(layout)} letters; the samples "
                             f"have {m.ndim} dimensions")
    elif perm is None:
        layout = ""
    elif layout and args.get("transpose_layout", True):
        layout = "".join(layout[p] for p in perm)
    elif not args.get("transpose_layout", True):
        pass
    return [m.with_(layout=layout)]


register(OpSchema(
    "transpose", ("input",), (
        ArgSpec("perm", "int[]", None, doc="Output axis i is input axis perm[i]; default: "
                                               "the axes reversed (DALI)."),
        ArgSpec("transpose_layout", "bool", True, doc="Permute the layout letters too."),
        ArgSpec("output_layout", "layout", None, doc="Explicit output layout."),
    ), _transpose_infer, public_name="transpose", devices=("cpu", "gpu"),
    doc="Permutes the axes of each sample. Source: DALI ``transpose``."))


def _reshape_infer(metas, args):
    m = metas[0]
    shape = args.get("shape")
    rel = args.get("rel_shape")
    nd = len(shape) if shape is not None else (len(rel) if rel is not None else None)
    layout = args.get("layout")
    if layout is None:
        layout = m.layout if nd == m.ndim else ""
    if layout and nd is not None and len(layout) != nd:
        raise ValueError(f"layout {layout!r} does not match the {nd} output dimensions")
    return [m.with_(ndim=nd, layout=layout)]


register(OpSchema(
    "reshape", ("input",), (
        ArgSpec("shape", "int[]", None, tensor=True,
                doc="Output shape; -1 marks one inferred extent."),
        ArgSpec("rel_shape", "float[]", None, tensor=True,
                doc="Output shape relative to the input shape."),
        ArgSpec("layout", "layout", None, doc="Output layout."),
    ), _reshape_infer, public_name="reshape",
    doc="Reshapes each sample (same element count). Source: DALI ``reshape``."))


def _subscript_infer(metas, args):
    m = metas[0]
    spec = args["spec"]
    layout = m.layout or ""
    nd = m.ndim
    out_layout = []
    dim = 0
    dropped = 0
    added = 0
    for item in spec:
        kind = item[0]
        if kind == "idx":
            dim += 1
            dropped += 1
        elif kind == "slice":
            if layout:
                out_layout.append(layout[dim])
            dim += 1
        elif kind == "new":
            added += 1
            out_layout.append("")
        elif kind == "ellipsis":
            rest = sum(1 for it in spec if it[0] in ("idx", "slice"))
            skip = (nd or 0) - rest
            if layout:
                out_layout.extend(layout[dim:dim + skip])
            dim += skip
    if layout:
        out_layout.extend(layout[dim:])
    out_nd = None if nd is None else nd - dropped + added
    lay = "".join(out_layout) if layout and not added else ""
    return [m.with_(ndim=out_nd, layout=lay)]


register(OpSchema(
    "subscript", ("input",), (
        ArgSpec("spec", "any", REQUIRED, doc="Index items (internal encoding)."),
        ArgSpec("lo_0", "int", None, tensor=True), ArgSpec("hi_0", "int", None, tensor=True),
        ArgSpec("at_0", "int", None, tensor=True), ArgSpec("lo_1", "int", None, tensor=True),
        ArgSpec("hi_1", "int", None, tensor=True), ArgSpec("at_1", "int", None, tensor=True),
        ArgSpec("lo_2", "int", None, tensor=True), ArgSpec("hi_2", "int", None, tensor=True),
        ArgSpec("at_2", "int", None, tensor=True), ArgSpec("lo_3", "int", None, tensor=True),
        ArgSpec("hi_3", "int", None, tensor=True), ArgSpec("at_3", "int", None, tensor=True),
        *(ArgSpec(f"st_{k}", "int", None, tensor=True) for k in range(4)),
    ), _subscript_infer,
    doc="Indexes inside each sample (``Tensor[...]``, ``Batch.slice[...]``); integer indices "
        "drop the axis and its layout letter."))


register(OpSchema(
    "transfer", ("input",), (ArgSpec("device", "str", REQUIRED, doc="Target device."),),
    lambda m, a: [m[0]], devices=("cpu", "gpu"),
    doc="Copies a batch to another device (inserted by the ``place`` pass)."))
