"""Reductions: ``reductions.sum`` / ``mean`` / ``mean_square`` / ``rms`` / ``min`` / ``max`` /
``std_dev`` / ``variance``.

Source: DALI 2.4 ``reductions.*`` (argument names, input and output types, layouts and axis
rules observed by running DALI's CPU operators): integers and float32 inputs; ``sum`` gives
int64 / uint64 / float32 by default, the means and deviations float32, ``min`` / ``max`` the
input type; the reduced letters leave the layout (all of them with ``keep_dims``: it is kept).
"""
from __future__ import annotations

from compiler.schema import ArgSpec, OpSchema, register

REDUCIBLE = ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
             "float32")
_DALI_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "float16"}


def reduced_axes(ndim, layout, axes, axis_names):
    """The sorted, non-negative reduced axes (every axis when neither argument is given).

    Raises
    ------
    ValueError
        Both arguments, a repeated axis, or a letter missing from the layout.
    IndexError
        An axis outside ``[-ndim, ndim - 1]`` (DALI's type).
    """
    if axes is not None and axis_names is not None:
        raise ValueError("Arguments `axes` and `axis_names` are mutually exclusive")
    if axis_names is not None:
        layout = layout or ""
        missing = [c for c in axis_names if c not in layout]
        if missing:
            raise ValueError(f"Axis name {missing[0]!r} (argument 'axis_names'="
                             f"{axis_names!r}) is not present in the input layout {layout!r}")
        axes = [layout.index(c) for c in axis_names]
    elif axes is None:
        return list(range(ndim))
    axes = [axes] if isinstance(axes, int) else [int(a) for a in axes]
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise IndexError(f"Axis index out of range: {a} not in range [{-ndim},{ndim - 1}]")
        a = a + ndim if a < 0 else a
        if a in out:
            raise ValueError(f"Duplicate axis index {a}")
        out.append(a)
    return sorted(out)


def default_dtype(op, in_dtype):
    """The output type of ``reductions.<op>`` for ``in_dtype`` without ``dtype``."""
    if op in ("min", "max"):
        return in_dtype
    if op == "sum":
        if in_dtype.startswith("uint"):
            return "uint64"
        return "int64" if in_dtype.startswith("int") else in_dtype
    return "float32"


def check_dtype(op, in_dtype, dtype):
    """The output type: ``dtype`` when DALI accepts it for ``in_dtype`` (the input type, the
    default type, or float32), else a ValueError with DALI's words."""
    if dtype is None:
        return default_dtype(op, in_dtype)
    if dtype not in (in_dtype, default_dtype(op, in_dtype), "float32"):
        raise ValueError(f"Unsupported types: {_DALI_TYPE_NAMES.get(in_dtype, in_dtype)}, "
                         f"{_DALI_TYPE_NAMES.get(dtype, dtype)} (reductions.{op} of "
                         f"{in_dtype} with dtype={dtype})")
    return dtype


def reduced_meta(op, m, args):
    """The output metadata of a reduction of an input with metadata ``m``."""
    dtype = m.dtype
    if dtype is not None and dtype not in REDUCIBLE:
        raise ValueError(f"Unsupported input type: {_DALI_TYPE_NAMES.get(dtype, dtype)} "
                         f"(reductions.{op} takes {', '.join(REDUCIBLE)})")
    out_dtype = check_dtype(op, dtype, args.get("dtype")) if dtype else args.get("dtype")
    if m.ndim is None:
        return m.with_(dtype=out_dtype, ndim=None, layout="")
    axes = reduced_axes(m.ndim, m.layout, args.get("axes"), args.get("axis_names"))
    if args.get("keep_dims"):
        return m.with_(dtype=out_dtype)
    layout = m.layout or ""
    kept = "".join(c for k, c in enumerate(layout) if k not in axes) if layout else ""
    return m.with_(dtype=out_dtype, ndim=m.ndim - len(axes), layout=kept)


_AXES = (
    ArgSpec("axes", "int[]", None,
            doc="Axes to reduce, in [-ndim, ndim - 1] (default: all of them; [] none)."),
    ArgSpec("axis_names", "layout", None,
            doc="Layout letters of the axes to reduce (exclusive with ``axes``)."),
)
_KEEP = ArgSpec("keep_dims", "bool", False, doc="Keep the reduced axes (extent 1).")
_DTYPE = ArgSpec("dtype", "dtype", None,
                 doc="Output (and accumulation) type: the input type, the default or float32.")
_DDOF = ArgSpec("ddof", "int", 0, doc="Delta degrees of freedom: the divisor is N - ddof.")

_SIMPLE = {
    "sum": "Sum of the elements along ``axes``: int64 / uint64 for integers (wrapping), float32 "
           "for float32 (accumulated in float64 in a fixed order, rounded once).",
    "mean": "Mean of the elements along ``axes`` (float32; integer ``dtype``: truncated).",
    "mean_square": "Mean of the squares of the elements along ``axes`` (float32).",
    "rms": "Root mean square of the elements along ``axes`` (float32).",
    "min": "Minimum along ``axes`` (the input type; an empty reduction gives the type's "
           "largest value).",
    "max": "Maximum along ``axes`` (the input type; an empty reduction gives the type's "
           "lowest value).",
}


def _make_infer(op):
    def infer(metas, args):
        return [reduced_meta(op, metas[0], args)]
    infer.__name__ = f"_{op}_infer"
    return infer


for _op, _doc in _SIMPLE.items():
    register(OpSchema(
        f"reductions.{_op}", ("input",),
        _AXES + ((_DTYPE,) if _op not in ("min", "max") else ()) + (_KEEP,),
        _make_infer(_op), public_name=f"reductions.{_op}",
        doc=f"{_doc} Source: DALI ``reductions.{_op}``."))


for _op, _doc in (("std_dev", "Standard deviation"), ("variance", "Variance")):
    register(OpSchema(
        f"reductions.{_op}", ("data", "mean"), _AXES + (_DDOF, _KEEP),
        _make_infer(_op), public_name=f"reductions.{_op}",
        doc=f"{_doc} of the elements along ``axes`` about the given ``mean`` (a scalar, or one "
            f"value per output element, with or without the reduced axes), divided by "
            f"N - ddof (float32). Source: DALI ``reductions.{_op}``."))


# ---------------------------------------------------------------- normalize
NORMALIZE_INPUTS = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "float32")
NORMALIZE_OUTPUTS = ("float32", "uint8", "int8", "uint16", "int16", "uint32", "int32")


def normalize_axes(ndim, layout, axes, axis_names):
    """``normalize``'s reduced axes (sorted; None when neither argument is given).

    Raises
    ------
    ValueError
        Both arguments, an axis outside ``[0, ndim - 1]`` (DALI takes no negative axes here) or
        a letter missing from the layout.
    """
    if axes is not None and axis_names is not None:
        raise ValueError("Normalize: Arguments `axes` and `axis_names` are mutually exclusive")
    if axis_names is not None:
        layout = layout or ""
        for c in axis_names:
            if c not in layout:
                raise ValueError(f"Normalize: axis name {c!r} (argument 'axis_names'="
                                 f"{axis_names!r}) is not present in the input layout "
                                 f"{layout!r}")
        return sorted({layout.index(c) for c in axis_names})
    if axes is None:
        return None
    axes = [axes] if isinstance(axes, int) else [int(a) for a in axes]
    for a in axes:
        if not 0 <= a < ndim:
            raise ValueError(f"Normalize: axis index {a} is out of valid range 0..{ndim - 1} "
                             f"(argument 'axes'={axes})")
    return sorted(set(axes))


def _normalize_infer(metas, args):
    m = metas[0]
    if m.dtype is not None and m.dtype not in NORMALIZE_INPUTS:
        raise ValueError(f"Normalize: unsupported input type: "
                         f"{_DALI_TYPE_NAMES.get(m.dtype, m.dtype)} (expected one of "
                         f"{', '.join(NORMALIZE_INPUTS)})")
    dtype = args.get("dtype") or "float32"
    if dtype not in NORMALIZE_OUTPUTS:
        raise ValueError(f"Normalize: unsupported output type: "
                         f"{_DALI_TYPE_NAMES.get(dtype, dtype)} (argument 'dtype'; expected one "
                         f"of {', '.join(NORMALIZE_OUTPUTS)})")
    if m.ndim is not None:
        normalize_axes(m.ndim, m.layout, args.get("axes"), args.get("axis_names"))
    return [m.with_(dtype=dtype)]


register(OpSchema(
    "normalize", ("input",), (
        ArgSpec("axes", "int[]", None,
                doc="Axes (in [0, ndim - 1]) over which mean and stddev are computed (default: "
                    "all, or those where a tensor ``mean`` / ``stddev`` has extent 1)."),
        ArgSpec("axis_names", "layout", None,
                doc="Layout letters of those axes (exclusive with ``axes``)."),
        ArgSpec("batch", "bool", False,
                doc="Compute mean and stddev over the whole batch (the other extents must "
                    "match)."),
        ArgSpec("ddof", "int", 0, doc="Delta degrees of freedom of the computed variance "
                                      "(divisor N - ddof)."),
        ArgSpec("dtype", "dtype", None,
                doc="Output type (default float32; integers round to nearest and saturate)."),
        ArgSpec("epsilon", "float", 0.0, doc="Added to the variance (also a given stddev's "
                                             "square)."),
        ArgSpec("mean", "float[]", None, tensor=True,
                doc="Mean to subtract: a scalar or a tensor broadcast against the sample "
                    "(default: computed)."),
        ArgSpec("scale", "float", 1.0, doc="Factor of the normalized values."),
        ArgSpec("shift", "float", 0.0, doc="Added after scaling (where the mean maps to)."),
        ArgSpec("stddev", "float[]", None, tensor=True,
                doc="Standard deviation to divide by: a scalar or a tensor (default: computed "
                    "about the mean)."),
    ), _normalize_infer, public_name="normalize",
    doc="``out = (in - mean) * (scale / sqrt(stddev**2 + epsilon)) + shift`` with the mean and "
        "standard deviation given or computed over ``axes`` (per sample, or over the batch). "
        "Source: DALI ``normalize``."))
