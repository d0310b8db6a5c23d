"""CPU kernels of the constant ops: ``ones``, ``zeros``, ``full`` and the ``*_like`` forms.

Semantics follow DALI 2.4 (observed): ``ones`` / ``zeros`` default to int32 and a scalar
shape; ``full`` takes the type of ``fill_value``; ``full_like`` converts ``fill_value`` to the
type of ``data_like`` with ``cast``'s rules (round half away from zero, saturate). A non-scalar
fill value is broadcast NumPy-style (:func:`broadcast_fill`). Registers ``ones``, ``zeros``,
``full``, ``ones_like``, ``zeros_like``, ``full_like``.
"""
from __future__ import annotations

import numpy as np

from runtime.kernels.registry import per_sample, register

from .cast import cast, to_numpy_dtype

__all__ = ["output_shape", "broadcast_fill", "filled"]


def output_shape(shape) -> tuple:
    """The output shape from a ``shape`` argument (None: a scalar; an int: 1-D).

    Raises
    ------
    ValueError
        A negative extent.
    """
    if shape is None:
        return ()
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = tuple(int(s) for s in np.asarray(shape).reshape(-1).tolist())
    if any(s < 0 for s in shape):
        raise ValueError(f"argument 'shape' must not have negative extents, got {list(shape)}")
    return shape


def _shape_text(shape) -> str:
    return " x ".join(str(s) for s in shape) if shape else "()"


def broadcast_fill(fill, shape) -> np.ndarray:
    """``fill`` broadcast to ``shape`` (a read-only view).

    Dimensions are compared from the innermost; each must match or be 1 in ``fill``, which may
    have fewer dimensions (padded with 1s on the outside). DALI's rule.

    Raises
    ------
    ValueError
        The shapes can't be broadcast (DALI's words: "Shapes A and B can't be broadcast.").
    """
    fill = np.asarray(fill)
    ok = fill.ndim <= len(shape) and all(
        f in (1, s) for f, s in zip(fill.shape[::-1], shape[::-1]))
    if not ok:
        raise ValueError(f"Shapes {_shape_text(shape)} and {_shape_text(fill.shape)} can't be "
                         f"broadcast.")
    return np.broadcast_to(fill, shape)


def _check_layout(ctx, ndim):
    layout = ctx.out_metas[0].layout
    if layout and len(layout) != ndim:
        raise ValueError(f"layout {layout!r} has {len(layout)} letters, but the output has "
                         f"{ndim} dimensions")


def filled(shape, value, dtype) -> np.ndarray:
    """A new C-contiguous array of ``shape`` and ``dtype`` whose every element is ``value``
    (converted with :func:`runtime.kernels.cpu.cast.cast`; a non-scalar ``value`` is broadcast
    with :func:`broadcast_fill`)."""
    out = np.empty(shape, dtype=to_numpy_dtype(dtype))
    out[...] = cast(broadcast_fill(value, shape), out.dtype)
    return out


def _make(value):
    def kernel(ctx, ins, a, i):
        shape = output_shape(a.get("shape"))
        _check_layout(ctx, len(shape))
        return filled(shape, value, ctx.out_metas[0].dtype)
    return kernel


register("ones", "cpu")(per_sample(_make(1)))
register("zeros", "cpu")(per_sample(_make(0)))


@register("full", "cpu")
@per_sample
def full(ctx, ins, a, i):
    """``full``: ``fill_value`` (sample ``i``) broadcast to ``shape``, in its own type."""
    shape = output_shape(a.get("shape"))
    _check_layout(ctx, len(shape))
    fill = np.asarray(ins[0])
    return np.ascontiguousarray(broadcast_fill(fill, shape))


def _make_like(value):
    def kernel(ctx, ins, a, i):
        return filled(np.shape(ins[0]), value, ctx.out_metas[0].dtype)
    return kernel


register("ones_like", "cpu")(per_sample(_make_like(1)))
register("zeros_like", "cpu")(per_sample(_make_like(0)))


@register("full_like", "cpu")
@per_sample
def full_like(ctx, ins, a, i):
    """``full_like``: ``fill_value`` broadcast to the shape of ``data_like`` and converted to
    its type."""
    return filled(np.shape(ins[0]), ins[1], ctx.out_metas[0].dtype)
