"""``Tensor[...]`` and ``Batch.slice[...]``: per-sample indexing recorded as ``subscript`` nodes.

Index items may be ints, slices (with int or per-sample Batch bounds and steps), ``Ellipsis`` and
``None`` (new axis); a Batch gives one index per sample. Integer indices drop the axis and its
layout letter (DALI semantics).
"""
from __future__ import annotations

import numbers

from ndd._batch import Batch
from ndd._invoke import invoke
from ndd._tensor import Tensor


def _bound(x, name, k, targs, what):
    if x is None:
        return None
    if isinstance(x, Batch):
        if k > 3:
            raise ValueError(f"{what}: at most 4 index positions may be given per sample")
        targs[f"{name}_{k}"] = x
        return ("t",)
    if isinstance(x, Tensor):
        x = x.item()
    if isinstance(x, numbers.Integral) and not isinstance(x, bool):
        return int(x)
    raise TypeError(f"{what}: index bounds must be ints or Batches of ints, got {x!r}")


def subscript(handle, index):
    what = "Tensor[...]" if isinstance(handle, Tensor) else "Batch.slice[...]"
    if not isinstance(index, tuple):
        index = (index,)
    spec = []
    targs = {}
    for k, item in enumerate(index):
        if item is Ellipsis:
            spec.append(("ellipsis",))
        elif item is None:
            spec.append(("new",))
        elif isinstance(item, slice):
            step = 1 if item.step is None else _bound(item.step, "st", k, targs, what)
            if step == 0:
                raise ValueError(f"{what}: slice step cannot be zero")
            spec.append(("slice", _bound(item.start, "lo", k, targs, what),
                         _bound(item.stop, "hi", k, targs, what), step))
        else:
            b = _bound(item, "at", k, targs, what)
            spec.append(("idx", b))
    if sum(1 for s in spec if s[0] == "ellipsis") > 1:
        raise IndexError(f"{what}: an index can only have a single ellipsis ('...')")
    nd = handle.ndim
    used = sum(1 for s in spec if s[0] in ("idx", "slice"))
    if used > nd:
        raise IndexError(f"{what}: too many indices ({used}) for samples with {nd} dimensions")
    return invoke("subscript", (handle,), {"spec": tuple(spec), **targs})
