"""Constant ops: ``ones``, ``zeros``, ``full`` and their ``*_like`` forms.

Source: DALI 2.4 ``fn.ones`` / ``zeros`` / ``full`` / ``ones_like`` / ``zeros_like`` /
``full_like`` (argument names, defaults and output types observed in DALI 2.4).
"""
from __future__ import annotations

from compiler.ir import ValueMeta
from compiler.schema import ArgSpec, OpSchema, register

_SHAPE = ArgSpec("shape", "int[]", None, tensor=True,
                 doc="Shape of each output sample (an int or a list of ints; default: a "
                     "scalar).")
_LAYOUT = ArgSpec("layout", "layout", None,
                  doc="Output layout; if set and not empty, it must have one letter per output "
                      "dimension.")


def _ones_infer(metas, args):
    # a per-sample shape (a Batch) leaves the number of dimensions to the data
    nd = len(args["shape"]) if args.get("shape") is not None else None
    layout = args.get("layout") or ""
    if layout and nd is not None and len(layout) != nd:
        raise ValueError(f"layout {layout!r} has {len(layout)} letters, but the output has "
                         f"{nd} dimensions (shape {args['shape']})")
    dtype = metas[0].dtype if metas else "int32"
    return [ValueMeta(dtype=args.get("dtype") or dtype, ndim=nd, layout=layout)]


def _like_infer(metas, args):
    m = metas[0]
    return [m.with_(dtype=args.get("dtype") or m.dtype)]


def _full_like_infer(metas, args):
    return [metas[0]]


_DTYPE = ArgSpec("dtype", "dtype", "int32", doc="Output type (DALI's default: int32).")
_LIKE_DTYPE = ArgSpec("dtype", "dtype", None,
                      doc="Output type (default: the type of ``data_like``).")

for _name, _what in (("ones", "ones"), ("zeros", "zeros")):
    register(OpSchema(
        _name, (), (_DTYPE, _LAYOUT, _SHAPE), _ones_infer, public_name=_name,
        doc=f"New data of the given ``shape`` and ``dtype``, filled with {_what}. Without "
            f"``batch_size`` a Tensor, with it a Batch. Source: DALI ``{_name}``."))

register(OpSchema(
    "full", ("fill_value",), (_LAYOUT, _SHAPE), _ones_infer, public_name="full",
    doc="New data of the given ``shape``, filled with ``fill_value`` (its type is the output "
        "type). A non-scalar ``fill_value`` is broadcast NumPy-style: dimensions are compared "
        "from the innermost, each must match or be 1 in ``fill_value``, which may have fewer "
        "dimensions. Source: DALI ``full``."))

for _name, _what in (("ones_like", "ones"), ("zeros_like", "zeros")):
    register(OpSchema(
        _name, ("data_like",), (_LIKE_DTYPE,), _like_infer, public_name=_name,
        doc=f"New data with the shape, type and layout of ``data_like``, filled with {_what}; "
            f"``dtype`` overrides the type. Source: DALI ``{_name}``."))

register(OpSchema(
    "full_like", ("data_like", "fill_value"), (), _full_like_infer, public_name="full_like",
    doc="New data with the shape, type and layout of ``data_like``, filled with ``fill_value`` "
        "(broadcast NumPy-style as in ``full``; converted to the type of ``data_like`` with "
        "``cast``'s rounding and saturation). Source: DALI ``full_like``."))
