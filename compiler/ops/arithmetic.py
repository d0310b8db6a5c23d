"""Element-wise arithmetic: Python operators on Tensor/Batch and ``ndd.math`` functions.

One schema, ``arithmetic``, with the operation in ``args["op"]`` and the operand order in
``args["operands"]``: ``("t", i)`` is tensor input i, ``("s", value)`` a Python scalar. Type
promotion follows DALI (``compiler.promotion``).
"""
from __future__ import annotations

from compiler import promotion
from compiler.ir import ValueMeta
from compiler.schema import REQUIRED, ArgSpec, OpSchema, register


def _infer(metas, args):
    dts, sc = [], []
    for item in args["operands"]:
        if item[0] == "t":
            dts.append(metas[item[1]].dtype)
            sc.append(None)
        else:
            dts.append(None)
            sc.append(item[1])
    kw = {}
    names = ("lhs", "rhs", "third")
    for i, (d, s) in enumerate(zip(dts, sc)):
        kw[names[i]] = d
        if s is not None:
            kw[names[i] + "_scalar"] = s
    out = promotion.result_dtype(args["op"], kw.pop("lhs"), kw.pop("rhs", None),
                                 kw.pop("third", None), **kw)
    # layout/ndim: those of the highest-dimensional tensor operand
    best = max(metas, key=lambda m: m.ndim or 0)
    layout = best.layout
    for m in metas:
        if m.layout and layout and m.layout != layout and m.ndim == best.ndim:
            raise ValueError(f"operands have different layouts {m.layout!r} and {layout!r}")
    return [ValueMeta(dtype=out, ndim=best.ndim, layout=layout or "")]


register(OpSchema(
    "arithmetic", ("operands",), (
        ArgSpec("op", "str", REQUIRED, doc="Operation name (add, sub, ..., sqrt, clamp)."),
        ArgSpec("operands", "any", REQUIRED, doc="Operand order: tensor inputs and scalars."),
    ), _infer, traits=frozenset({"elementwise"}), variadic=True, min_inputs=1,
    devices=("cpu", "gpu"),
    doc="Element-wise arithmetic with DALI's type promotion."))

#: The operations ``ndd.math`` exposes as functions, as DALI's ``math`` module does: every
#: "math" operation of the promotion table and ``pow`` (also the ``**`` operator), as
#: ``(name, number of operands)``, unary first. They are values of the ``op`` argument of the one
#: ``arithmetic`` schema, so a new one is a row of ``compiler.promotion.OPS`` and its kernel.
MATH_FUNCTIONS: tuple[tuple[str, int], ...] = tuple(
    (info.name, info.arity) for info in sorted(promotion.OPS.values(), key=lambda i: i.arity)
    if info.category == "math" or info.name == "pow")
