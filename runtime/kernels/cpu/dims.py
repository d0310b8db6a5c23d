"""CPU kernels of ``expand_dims`` and ``stack`` (numpy views and copies).

Semantics follow DALI 2.4: ``expand_dims``' axes are output positions; ``stack`` needs equal
shapes and inserts the new axis at ``axis`` (``[-ndim, ndim]``, -1 meaning ``ndim``).
``per_frame`` passes the data through. Registers ``expand_dims``, ``stack`` and ``per_frame``.
"""
from __future__ import annotations

import numpy as np

from runtime.kernels.registry import per_sample, register, sample_args

__all__ = ["expand_dims", "stack", "in_caller"]


def in_caller(fn):
    """Like :func:`runtime.kernels.registry.per_sample`, but every sample runs in the calling
    thread: for kernels that only make views (``expand_dims``, ``squeeze``, ``reinterpret``),
    where handing 8 samples to the pool's threads costs more than the work."""
    def kernel(ctx, inputs, args):
        if len(inputs) == 1 and not ctx.tensor_arg_names and len(inputs[0]) == ctx.batch_size:
            return [[fn(ctx, [x], args, i) for i, x in enumerate(inputs[0])]]   # the usual call
        out = []
        for i in range(ctx.batch_size):
            ins = [inp[i] if len(inp) > 1 else inp[0] for inp in inputs]
            out.append(fn(ctx, ins, sample_args(ctx, args, i), i))
        return [out]
    kernel.__name__ = getattr(fn, "__name__", "kernel")
    kernel.__doc__ = fn.__doc__
    return kernel


def expand_dims(x, axes, copy=True):
    """``x`` with dimensions of extent 1 at the output positions ``axes`` (numpy's
    ``expand_dims`` has DALI's meaning of ``axes``): a copy, or with ``copy=False`` a view (the
    kernel's output, as ``reshape``'s: DALI does not copy either)."""
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    x = np.asarray(x)
    if len(axes) == 1 and type(axes[0]) is int and 0 <= axes[0] <= x.ndim:
        a, shape = axes[0], x.shape     # the common case, in a fifth of np.expand_dims' time
        out = x.reshape(shape[:a] + (1,) + shape[a:])
    else:
        out = np.expand_dims(x, axes)
    return out.copy() if copy else out


def stack(arrays, axis=0):
    """The arrays (same shape) joined along a new axis at ``axis``.

    Raises
    ------
    ValueError
        Different shapes.
    """
    arrays = [np.asarray(a) for a in arrays]
    for i, a in enumerate(arrays[1:], 1):
        if a.shape != arrays[0].shape:
            raise ValueError(f"all inputs must have the same shape; input 0 has "
                             f"{arrays[0].shape}, input {i} has {a.shape}")
    nd = arrays[0].ndim
    if not -nd <= axis <= nd:
        raise ValueError(f"argument 'axis' must be in [{-nd}, {nd}] for {nd}-D inputs, got "
                         f"{axis}")
    return np.stack(arrays, axis=axis)      # numpy's -1 is DALI's: the last position, ndim


@register("expand_dims", "cpu")
@in_caller
def expand_dims_kernel(ctx, ins, a, i):
    """``expand_dims`` of sample ``i``."""
    return expand_dims(ins[0], a["axes"], copy=False)


@register("stack", "cpu")
@per_sample
def stack_kernel(ctx, ins, a, i):
    """``stack`` of sample ``i`` of every input."""
    return stack(ins, a.get("axis", 0))


@register("per_frame", "cpu")
def per_frame_kernel(ctx, inputs, args):
    """``per_frame``: the data unchanged (only the layout, in the metadata, changes)."""
    return [list(inputs[0])]
