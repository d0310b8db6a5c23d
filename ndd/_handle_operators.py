"""Python operators and indexing of the handles, attached to ``Tensor`` and ``Batch`` here.

The handle classes (``_tensor.py``, ``_batch.py``) import nothing of the call path; this
module imports both and attaches, in one place:

* arithmetic, bitwise, comparison and unary operators (``batch * 2``, ``t == u``, ``-t``),
  recorded as ``arithmetic`` nodes with DALI's type promotion rules;
* ``Tensor[...]`` and ``Batch.slice[...]``, recorded as ``subscript`` nodes
  (:mod:`ndd._slicing`).

``ndd/__init__.py`` imports it, so the methods exist once ``ndd`` is imported.
"""
from __future__ import annotations

import numbers

import numpy as np

from ndd._batch import SliceView
from ndd._capture_state import scalar_constants
from ndd._construct import tensor
from ndd._handle import Handle
from ndd._invoke import invoke
from ndd._slicing import subscript
from ndd._tensor import Tensor

#: ``__name__`` / ``__rname__`` pairs: ``x + y`` and ``y + x`` for a handle ``x``
BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor",
          "lshift", "rshift")
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
UNARY = ("neg", "pos", "invert", "abs")


def _is_scalar(x) -> bool:
    return isinstance(x, (bool, numbers.Number)) and not hasattr(x, "shape")


def elementwise(op: str, *operands):
    """Record ``op`` over operands (Tensor/Batch/array-likes/Python scalars)."""
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
                x = tensor(x)
                scalar_constants[x._value] = (x.dtype.name, x._value.data[0].item())
            inputs.append(x)
    if not inputs:
        # only Python/numpy scalars (``ndd.math.sqrt(4.0)``): the first becomes a 0-d Tensor of
        # its default type (bool / int32 / float32, or the numpy scalar's), as in DALI
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


def _comparison(name):
    def compare(self, other):
        return elementwise(name, self, other)
    compare.__name__ = f"__{name}__"
    return compare


def _unary(name):
    def unary(self):
        return elementwise(name, self)
    unary.__name__ = f"__{name}__"
    return unary


def _slice_item(view: SliceView, index):
    """``batch.slice[index]``."""
    return subscript(view._batch, index)


def _attach() -> None:
    for name in BINARY:
        for method in _binary(name):
            setattr(Handle, method.__name__, method)
    for method in map(_comparison, COMPARISONS):
        setattr(Handle, method.__name__, method)
    for method in map(_unary, UNARY):
        setattr(Handle, method.__name__, method)
    Tensor.__getitem__ = subscript
    SliceView.__getitem__ = _slice_item


_attach()
