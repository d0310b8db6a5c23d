"""New dimensions and layouts: ``expand_dims``, ``stack`` and ``per_frame``.

Source: DALI 2.4 ``expand_dims`` / ``stack`` / ``per_frame`` (argument names, layouts and axis rules observed).
"""
from __future__ import annotations

from compiler.schema import REQUIRED, ArgSpec, OpSchema, register


def expand_axes(axes, in_ndim):
    """The sorted output positions of the new axes (``axes`` index the output), checked.

    Raises
    ------
    ValueError
        Repeated axes or an axis outside ``[0, in_ndim + len(axes))``.
    """
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    out_nd = in_ndim + len(axes)
    if len(set(axes)) != len(axes) or any(not 0 <= a < out_nd for a in axes):
        raise ValueError(f"argument 'axes' must be distinct positions in the output, in "
                         f"[0, {out_nd - 1}] for {in_ndim}-D input and {len(axes)} new axes; "
                         f"got {list(axes)}")
    return axes


def expand_layout(layout, axes, names):
    """The output layout of ``expand_dims``: ``names[k]`` at output position ``axes[k]``, the
    input's letters in the other positions; empty without ``names`` (as DALI)."""
    if not names:
        return ""
    out_nd = len(layout) + len(axes)
    named = dict(zip(axes, names))
    rest = iter(layout)
    return "".join(named[p] if p in named else next(rest) for p in range(out_nd))


def _expand_infer(metas, args):
    m = metas[0]
    names = args.get("new_axis_names") or ""
    axes = args["axes"]
    if names and len(names) != len(axes):
        raise ValueError(f"new_axis_names {names!r} must have one letter per new axis "
                         f"({len(axes)}: {list(axes)})")
    if m.ndim is None:
        return [m.with_(ndim=None, layout="")]
    axes = expand_axes(axes, m.ndim)
    layout = m.layout or ""
    if names and not layout and m.ndim:
        raise ValueError(f"new_axis_names {names!r} given, but the input has no layout to "
                         f"insert them into")
    return [m.with_(ndim=m.ndim + len(axes), layout=expand_layout(layout, axes, names))]


register(OpSchema(
    "expand_dims", ("data",), (
        ArgSpec("axes", "int[]", REQUIRED, doc="Output positions of the new dimensions "
                                               "(extent 1)."),
        ArgSpec("new_axis_names", "layout", None,
                doc="Layout letters of the new dimensions, one per axis; without them the "
                    "output has no layout."),
    ), _expand_infer, public_name="expand_dims",
    doc="Inserts dimensions of extent 1 at the output positions ``axes``. Source: DALI "
        "``expand_dims``."))


def stack_axis(axis, ndim):
    """``axis`` in ``[-ndim, ndim]`` as a position in ``[0, ndim]`` (-1 is ``ndim``)."""
    if not -ndim - 1 < axis <= ndim:
        raise ValueError(f"argument 'axis' must be in [{-ndim}, {ndim}] for {ndim}-D inputs, "
                         f"got {axis}")
    return axis + ndim + 1 if axis < 0 else axis


def _stack_infer(metas, args):
    m = metas[0]
    for i, other in enumerate(metas[1:], 1):
        if other.dtype != m.dtype:
            raise ValueError(f"all inputs must have the same type; input 0 is {m.dtype}, "
                             f"input {i} is {other.dtype}")
        if None not in (other.ndim, m.ndim) and other.ndim != m.ndim:
            raise ValueError(f"all inputs must have the same number of dimensions; input 0 "
                             f"has {m.ndim}, input {i} has {other.ndim}")
    if m.ndim is None:
        return [m.with_(ndim=None, layout="")]
    axis = stack_axis(args.get("axis", 0), m.ndim)
    name = args.get("axis_name")
    if name is not None and len(name) != 1:
        raise ValueError(f"argument 'axis_name' must be one character, got {name!r}")
    layout = m.layout or ""
    if name and (layout or m.ndim == 0):
        layout = layout[:axis] + name + layout[axis:]
    else:
        layout = ""
    return [m.with_(ndim=m.ndim + 1, layout=layout)]


register(OpSchema(
    "stack", ("input_0", "inputs"), (
        ArgSpec("axis", "int", 0, doc="Position of the new axis in the output, in [-ndim, "
                                      "ndim]; ndim interleaves the inputs' values."),
        ArgSpec("axis_name", "str", None,
                doc="Layout letter of the new axis, inserted into the input layout at "
                    "``axis`` (without it the output has no layout)."),
    ), _stack_infer, variadic=True, min_inputs=1, public_name="stack",
    doc="Joins tensors of equal shape and type along a new axis. Source: DALI ``stack``."))


def _per_frame_infer(metas, args):
    m = metas[0]
    layout = m.layout or ""
    if not layout:
        if m.ndim is None:
            return [m.with_(layout="")]
        if m.ndim == 0:
            raise ValueError("a per-frame argument needs at least one dimension (the frames)")
        return [m.with_(layout="F" + "*" * (m.ndim - 1))]
    if args.get("replace", False):
        return [m.with_(layout="F" + layout[1:])]
    if layout[0] != "F":
        raise ValueError(f"Per-frame argument input must be a sequence. The input layout "
                         f"should start with 'F', got: {layout}")
    return [m]


register(OpSchema(
    "per_frame", ("input",), (
        ArgSpec("replace", "bool", False,
                doc="Replace the first layout letter with F (otherwise it must be F)."),
    ), _per_frame_infer, public_name="per_frame",
    doc="Marks the input as a sequence (its first axis the frames), to give an op one argument "
        "value per frame; only the layout changes: without a layout it becomes ``F`` padded "
        "with ``*``. Source: DALI ``per_frame``."))


_POLICIES = ("error", "pad", "constant", "edge", "clamp", "reflect", "reflect_1001",
             "reflect_101", "wrap", "trim_to_shape")


def _slice_infer(metas, args):
    m = metas[0]
    return [m.with_(dtype=args.get("dtype") or m.dtype)]


register(OpSchema(
    "slice", ("data", "anchor", "shape_input"), (
        ArgSpec("axes", "int[]", None,
                doc="Axes (indices, negative from the back) of the window coordinates; default "
                    "[1, 0] without a layout."),
        ArgSpec("axis_names", "layout", None,
                doc="Layout letters of the window coordinates (over ``axes``); default 'WH' "
                    "when the data has a layout."),
        ArgSpec("dtype", "dtype", None, doc="Output type (default: the input type)."),
        ArgSpec("end", "float[]", None, tensor=True, doc="End coordinates (absolute)."),
        ArgSpec("fill_values", "float[]", (0.0,),
                doc="Padding value(s) for out_of_bounds_policy 'pad': one, or one per channel."),
        ArgSpec("normalized_anchor", "bool", True,
                doc="A float ``anchor`` input is relative (0..1); integer ones are absolute."),
        ArgSpec("normalized_shape", "bool", True,
                doc="A float ``shape_input`` is relative (0..1); integer ones are absolute."),
        ArgSpec("out_of_bounds_policy", "str", "error", choices=_POLICIES,
                doc="Outside the data: error, pad/constant, edge/clamp, reflect/reflect_1001, "
                    "reflect_101, wrap or trim_to_shape."),
        ArgSpec("rel_end", "float[]", None, tensor=True, doc="End coordinates (relative)."),
        ArgSpec("rel_shape", "float[]", None, tensor=True, doc="Window extents (relative)."),
        ArgSpec("rel_start", "float[]", None, tensor=True, doc="Start coordinates (relative)."),
        ArgSpec("shape", "float[]", None, tensor=True, doc="Window extents (absolute)."),
        ArgSpec("start", "float[]", None, tensor=True, doc="Start coordinates (absolute)."),
    ), _slice_infer, min_inputs=1, public_name="slice",
    deprecated={"output_dtype": "dtype", "image_type": None},
    doc="Extracts a window (a slice) of each sample: its start by the ``anchor`` input, "
        "``start`` or ``rel_start``, its extent by the ``shape_input`` input, ``shape``, "
        "``rel_shape``, ``end`` or ``rel_end``; coordinates round half up. Source: DALI "
        "``slice``."))
