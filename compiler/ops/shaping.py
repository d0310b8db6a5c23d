"""Shape-changing ops: ``squeeze``, ``cat``, ``pad``, ``one_hot``, ``reinterpret``,
``element_extract`` and ``get_property``.

Source: DALI 2.4 ``squeeze`` / ``cat`` / ``pad`` / ``one_hot`` (argument names, defaults, layouts
and axis rules observed by running DALI's CPU operators).
"""
from __future__ import annotations

from compiler.schema import REQUIRED, ArgSpec, OpSchema, register


def axes_of(ndim, layout, axes, axis_names, *, negative=False, op_arg="axes"):
    """The axis indices named by ``axes`` (ints) or ``axis_names`` (layout letters), checked.

    Parameters
    ----------
    ndim : int
    layout : str
        The input layout ("" for none).
    axes, axis_names : list of int / str or None
        At most one of them may be given.
    negative : bool
        Whether ``axes`` may count from the back (``[-ndim, ndim - 1]``).

    Returns
    -------
    list of int or None
        Non-negative indices, in the given order; None when neither argument is set.

    Raises
    ------
    ValueError
        Both arguments given, an axis out of range or a letter not in the layout.
    """
    if axes is not None and axis_names is not None:
        raise ValueError('"axes" and "axis_names" are mutually exclusive')
    if axis_names is not None:
        out = []
        for c in axis_names:
            if c not in (layout or ""):
                raise ValueError(f"Axis '{c}' is not present in the input layout "
                                 f"{layout or ''!r} (argument 'axis_names'={axis_names!r})")
            out.append(layout.index(c))
        return out
    if axes is None:
        return None
    axes = [axes] if isinstance(axes, int) else [int(a) for a in axes]
    lo = -ndim if negative else 0
    out = []
    for a in axes:
        if not lo <= a < ndim:
            raise ValueError(f"Axis {a} out of range (argument {op_arg!r}={axes}). Expected "
                             f"range is [{lo}, {ndim - 1}] for a {ndim}D input")
        out.append(a + ndim if a < 0 else a)
    return out


# ---------------------------------------------------------------- squeeze
def _squeeze_infer(metas, args):
    m = metas[0]
    axes, names = args.get("axes"), args.get("axis_names")
    if axes is None and names is None:
        raise ValueError("Missing argument ``axes`` or ``axis_names``.")
    if axes is not None and names is not None:
        raise ValueError("Provided both ``axes`` and ``axis_names`` arguments")
    if m.ndim is None:
        return [m.with_(ndim=None, layout="")]
    layout = m.layout or ""
    idx = axes_of(m.ndim, layout, axes, names)
    if len(set(idx)) != len(idx):
        raise ValueError(f"Specified at least twice same dimension to remove (axes {idx})")
    out_layout = "".join(c for k, c in enumerate(layout) if k not in idx)
    return [m.with_(ndim=m.ndim - len(idx), layout=out_layout)]


register(OpSchema(
    "squeeze", ("data",), (
        ArgSpec("axes", "int[]", None, doc="Indices (in [0, ndim - 1]) of the dimensions to "
                                           "remove; each must have extent 1."),
        ArgSpec("axis_names", "layout", None,
                doc="Layout letters of the dimensions to remove (exclusive with ``axes``)."),
    ), _squeeze_infer, public_name="squeeze",
    doc="Removes dimensions of extent 1 given by ``axes`` or ``axis_names`` (a dimension of "
        "extent 0 only while the volume stays 0); their letters leave the layout. Source: DALI "
        "``squeeze``."))


# ---------------------------------------------------------------- cat
def cat_axis(ndim, layouts, axis, axis_name):
    """The concatenation axis in ``[0, ndim)`` from ``axis`` (default 0; negative from the
    back) or ``axis_name`` (a letter of the first non-empty layout among ``layouts``).

    Raises
    ------
    ValueError
        Both given, an axis out of range, or a name the layout lacks.
    """
    if axis is not None and axis_name is not None:
        raise ValueError("Arguments ``axis`` and ``axis_name`` cannot be used together.")
    layout = next((lay for lay in layouts if lay), "")
    if axis_name is not None:
        if len(axis_name) != 1 or axis_name not in layout:
            raise ValueError(f'``axis_name`` specifies an undefined axis {axis_name!r} for '
                             f'layout "{layout}"')
        return layout.index(axis_name)
    axis = 0 if axis is None else axis
    if not -ndim <= axis < ndim:
        raise ValueError(f"Invalid axis argument, {axis} for {ndim}-D tensors. Accepted range "
                         f"is [{-ndim}, {ndim - 1}], with negative indices being counted from "
                         f"the back.")
    return axis + ndim if axis < 0 else axis


def _cat_infer(metas, args):
    m = metas[0]
    for i, other in enumerate(metas[1:], 1):
        if other.dtype != m.dtype or None not in (other.ndim, m.ndim) and other.ndim != m.ndim:
            raise ValueError(f"All inputs must have the same type and number of dimensions. "
                             f"input #0: {m.dtype}, {m.ndim}-D; input #{i}: {other.dtype}, "
                             f"{other.ndim}-D")
    layouts = [x.layout or "" for x in metas]
    if m.ndim is None:
        return [m.with_(layout="")]
    if m.ndim == 0:
        raise ValueError("cat needs inputs with at least one dimension; got 0-D (scalar) inputs")
    cat_axis(m.ndim, layouts, args.get("axis"), args.get("axis_name"))
    return [m.with_(layout=next((lay for lay in layouts if lay), ""))]


register(OpSchema(
    "cat", ("input_0", "inputs"), (
        ArgSpec("axis", "int", None,
                doc="Axis of the concatenation, in [-ndim, ndim - 1] (default 0)."),
        ArgSpec("axis_name", "str", None,
                doc="Layout letter of the concatenation axis (exclusive with ``axis``)."),
    ), _cat_infer, variadic=True, min_inputs=1, public_name="cat",
    doc="Joins tensors along an existing axis; their shapes must match in every other axis. "
        "The output has the first non-empty input layout. Source: DALI ``cat``."))


# ---------------------------------------------------------------- pad
def _pad_infer(metas, args):
    m = metas[0]
    if m.ndim == 0:
        raise ValueError("pad: unsupported number of dimensions 0 (scalar samples)")
    if m.ndim is not None:
        axes_of(m.ndim, m.layout or "", args.get("axes"), args.get("axis_names"),
                negative=True)
    return [m]


register(OpSchema(
    "pad", ("input",), (
        ArgSpec("align", "int[]", None, tensor=True,
                doc="Alignment of the padded extents (one value for every padded axis, or one "
                    "per axis); positive."),
        ArgSpec("axes", "int[]", None,
                doc="Axes to pad (negative from the back); default: every axis."),
        ArgSpec("axis_names", "layout", None,
                doc="Layout letters of the axes to pad (exclusive with ``axes``)."),
        ArgSpec("fill_value", "float", 0.0, tensor=True,
                doc="The padding value, converted to the input type as C++ does (truncated)."),
        ArgSpec("shape", "int[]", None, tensor=True,
                doc="Minimum extents of the padded axes; a value <= 0 (e.g. -1) keeps the "
                    "default, the largest extent in the batch."),
    ), _pad_infer, public_name="pad",
    doc="Pads every sample at the end of the chosen axes with ``fill_value``: to the largest "
        "extent in the batch, or at least ``shape``, rounded up to a multiple of ``align``. "
        "Source: DALI ``pad``."))


# ---------------------------------------------------------------- one_hot
ONE_HOT_TYPES = ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
                 "float32", "float64")


def _one_hot_infer(metas, args):
    m = metas[0]
    dtype = args.get("dtype") or "float32"
    if dtype not in ONE_HOT_TYPES:
        raise ValueError(f"one_hot: unsupported output type: {dtype} (argument 'dtype'); "
                         f"expected one of {', '.join(ONE_HOT_TYPES)}")
    name = args.get("axis_name")
    if name is not None and len(name) != 1:
        raise ValueError(f'Unsupported axis_name value. It must be a single character, got '
                         f'"{name}" instead.')
    axis = args.get("axis")
    if m.ndim is None:
        return [m.with_(dtype=dtype, ndim=None, layout="")]
    if axis is not None and not -1 <= axis <= m.ndim:
        raise ValueError(f"Provided axis is outside of allowed range, got: {axis}, expected "
                         f"to be in range: [-1, {m.ndim}].")
    layout = m.layout or ""
    if axis is None and m.ndim > 0:
        # every sample of one element counts as a scalar (DALI's legacy rule): the number of
        # dimensions is known only from the data; the layout is ``axis_name`` where the input
        # has none (DALI's only non-failing case), else empty (docs/semantics.md)
        return [m.with_(dtype=dtype, ndim=None, layout=name if name and not layout else "")]
    pos = m.ndim if axis is None or axis == -1 else axis
    if name and layout:
        out_layout = layout[:pos] + name + layout[pos:]
    elif name and m.ndim == 0:
        out_layout = name
    elif name:
        raise ValueError(f'Input layout mismatch - expected input layout to be of size '
                         f'{m.ndim} but instead got "", which is of size 0 (argument '
                         f'axis_name={name!r} needs an input layout).')
    else:
        out_layout = ""
    return [m.with_(dtype=dtype, ndim=m.ndim + 1, layout=out_layout)]


register(OpSchema(
    "one_hot", ("input",), (
        ArgSpec("axis", "int", None,
                doc="Position of the new axis of ``num_classes`` elements, in [-1, ndim] "
                    "(-1, the default: the last). Without it, inputs whose every sample has one "
                    "element are scalars (DALI's legacy rule)."),
        ArgSpec("axis_name", "str", None,
                doc="Layout letter of the new axis (without it the output has no layout)."),
        ArgSpec("dtype", "dtype", None, doc="Output type (default float32; no float16/bool)."),
        ArgSpec("num_classes", "int", 0, doc="Number of classes (extent of the new axis)."),
        ArgSpec("off_value", "float", 0.0, doc="Value for the other classes (C++ conversion "
                                               "to ``dtype``: truncated)."),
        ArgSpec("on_value", "float", 1.0, doc="Value at the input's class (C++ conversion "
                                              "to ``dtype``: truncated)."),
    ), _one_hot_infer, public_name="one_hot",
    doc="One-hot encoding: a new axis of ``num_classes`` elements, ``on_value`` where the index "
        "equals the input's class (truncated to an integer) and ``off_value`` elsewhere "
        "(classes outside [0, num_classes) give no ``on_value``). Source: DALI ``one_hot``."))


# ---------------------------------------------------------------- reinterpret
def _reinterpret_infer(metas, args):
    m = metas[0]
    shape, rel, dims = args.get("shape"), args.get("rel_shape"), args.get("src_dims")
    layout, dtype = args.get("layout"), args.get("dtype")
    if shape is not None and rel is not None:
        raise ValueError(f"reinterpret: arguments 'shape'={shape!r} and 'rel_shape'={rel!r} "
                         f"are mutually exclusive")
    if shape is None and rel is None and dims is None and layout is None and dtype is None \
            and len(metas) < 2:
        raise ValueError("reinterpret is no-op: arguments specify neither new shape, layout "
                         "nor type.")
    if len(metas) > 1:
        nd = None
    elif shape is not None:
        nd = 1 if isinstance(shape, int) else len(shape)
    elif rel is not None:
        nd = 1 if isinstance(rel, (int, float)) else len(rel)
    elif dims is not None:
        nd = 1 if isinstance(dims, int) else len(dims)
    else:
        nd = m.ndim
    if layout is None:
        layout = (m.layout or "") if nd is not None and nd == m.ndim else ""
    elif layout and nd is not None and len(layout) != nd:
        raise ValueError(f"reinterpret: layout {layout!r} does not match the {nd} output "
                         f"dimensions")
    return [m.with_(dtype=dtype or m.dtype, ndim=nd, layout=layout)]


register(OpSchema(
    "reinterpret", ("data", "shape_input"), (
        ArgSpec("dtype", "dtype", None,
                doc="Output type: the same bytes read as this type; without a new shape the "
                    "innermost extent is adjusted (its bytes must divide by the type's size)."),
        ArgSpec("layout", "layout", None,
                doc="Output layout (default: the input's when the number of dimensions is "
                    "unchanged, else none)."),
        ArgSpec("rel_shape", "float[]", None, tensor=True,
                doc="Output extents relative to the input's (one may be negative: inferred)."),
        ArgSpec("shape", "int[]", None, tensor=True,
                doc="Output shape (one extent may be negative: inferred)."),
        ArgSpec("src_dims", "int[]", None, tensor=True,
                doc="Input dimension of each output dimension (-1: a new extent 1)."),
    ), _reinterpret_infer, min_inputs=1, public_name="reinterpret",
    doc="Reads each sample's bytes with another type, shape and/or layout (same size in "
        "bytes). Source: DALI ``reinterpret``."))


# ---------------------------------------------------------------- element_extract
def _element_extract_infer(metas, args):
    m = metas[0]
    emap = args["element_map"]
    emap = [emap] if isinstance(emap, int) else list(emap)
    if not emap:
        raise ValueError("element_extract: argument 'element_map' must name at least one "
                         "element")
    if any(e < 0 for e in emap):
        raise ValueError(f"Negative indices in `element_map` are not allowed, found: "
                         f"{min(emap)}.")
    layout = m.layout or ""
    if layout and layout[0] != "F":
        raise ValueError(f"Input layout must describe a sequence - it must start with 'F', got "
                         f"'{layout}' instead.")
    if m.ndim is not None and m.ndim < 2:
        raise ValueError("Input must have at least two dimensions - outermost for sequence and "
                         f"at least one for data elements (got {m.ndim}-D input).")
    nd = None if m.ndim is None else m.ndim - 1
    return [m.with_(ndim=nd, layout=layout[1:]) for _ in emap]


register(OpSchema(
    "element_extract", ("input",), (
        ArgSpec("element_map", "int[]", REQUIRED,
                doc="Indices of the frames to extract: one output each."),
    ), _element_extract_infer, public_name="element_extract",
    doc="Extracts frames (elements of the outermost dimension) of sequences: one output per "
        "index of ``element_map``, with the input's layout less its leading ``F``. Source: "
        "DALI ``element_extract``."))


# ---------------------------------------------------------------- get_property
PROPERTY_KEYS = ("source_info", "layout")


def _get_property_infer(metas, args):
    key = args["key"]
    if key not in PROPERTY_KEYS:
        raise ValueError(f"Unsupported property key: {key} (argument 'key'; expected one of "
                         f"{', '.join(PROPERTY_KEYS)})")
    return [metas[0].with_(dtype="uint8", ndim=1, layout="")]


register(OpSchema(
    "get_property", ("input",), (
        ArgSpec("key", "str", REQUIRED,
                doc="'source_info' (where the sample came from, e.g. a reader's file path; "
                    "empty if unknown) or 'layout' (the layout letters)."),
    ), _get_property_infer, public_name="get_property",
    doc="A property of each sample as a 1-D uint8 byte array (the string's bytes). Source: "
        "DALI ``get_property``."))
