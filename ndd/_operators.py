"""Python operators on Tensor/Batch, recorded as ``arithmetic`` nodes (DALI promotion rules)."""
from __future__ import annotations

import numbers

import numpy as np


def _is_scalar(x) -> bool:
    return isinstance(x, (bool, numbers.Number)) and not hasattr(x, "shape")


def elementwise(op: str, *operands):
    """Record ``op`` over operands (Tensor/Batch/array-likes/Python scalars)."""
    from ndd._invoke import invoke
    inputs = []
    spec = []
    for x in operands:
        if _is_scalar(x):
            v = x
            if hasattr(v, "item"):
                v = v.item()
            spec.append(("s", v))
        else:
            spec.append(("t", len(inputs)))
            if isinstance(x, np.generic):   # a typed constant: a 0-d Tensor of its type
                from ndd._capture_state import scalar_constants
                from ndd._construct import tensor
                x = tensor(x)
                scalar_constants[x._value] = (x.dtype.name, x._value.data[0].item())
            inputs.append(x)
    if not inputs:
        # only Python/numpy scalars (``ndd.math.sqrt(4.0)``): the first becomes a 0-d Tensor of
        # its default type (bool / int32 / float32, or the numpy scalar's), as in DALI
        from ndd._construct import tensor
        inputs.append(tensor(operands[0]))
        spec[0] = ("t", 0)
    return invoke("arithmetic", tuple(inputs), {"op": op, "operands": tuple(spec)})


def _binary(name):
    def fwd(self, other):
        return elementwise(name, self, other)

    def rev(self, other):
        return elementwise(name, other, self)
    fwd.__name__ = f"__{name}__"
    rev.__name__ = f"__r{name}__"
    return fwd, rev


class OperatorMixin:
    """Operators and the metadata every handle (Tensor, Batch) has without computing."""

    __slots__ = ()

    @property
    def dtype(self):
        """Element type (``ndd.DType``)."""
        from compiler.types import DTYPES
        return DTYPES[self._value.meta.dtype]

    @property
    def layout(self) -> str | None:
        """Layout string (e.g. ``"HWC"``) or None when the data has none."""
        return self._value.meta.layout or None

    @property
    def device(self):
        """The ``ndd.Device`` holding the data."""
        return self._value.meta.device

    __add__, __radd__ = _binary("add")
    __sub__, __rsub__ = _binary("sub")
    __mul__, __rmul__ = _binary("mul")
    __truediv__, __rtruediv__ = _binary("truediv")
    __floordiv__, __rfloordiv__ = _binary("floordiv")
    __mod__, __rmod__ = _binary("mod")
    __pow__, __rpow__ = _binary("pow")
    __and__, __rand__ = _binary("and")
    __or__, __ror__ = _binary("or")
    __xor__, __rxor__ = _binary("xor")
    __lshift__, __rlshift__ = _binary("lshift")
    __rshift__, __rrshift__ = _binary("rshift")

    def __eq__(self, other):
        return elementwise("eq", self, other)

    def __ne__(self, other):
        return elementwise("ne", self, other)

    def __lt__(self, other):
        return elementwise("lt", self, other)

    def __le__(self, other):
        return elementwise("le", self, other)

    def __gt__(self, other):
        return elementwise("gt", self, other)

    def __ge__(self, other):
        return elementwise("ge", self, other)

    def __neg__(self):
        return elementwise("neg", self)

    def __pos__(self):
        return elementwise("pos", self)

    def __invert__(self):
        return elementwise("invert", self)

    def __abs__(self):
        return elementwise("abs", self)

    __hash__ = object.__hash__
