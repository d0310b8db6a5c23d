"""CPU kernels of ``reductions.*`` (numpy), and the fixed-order sum they and ``normalize`` use.

Semantics follow DALI 2.4 (observed): integer sums are exact (int64 / uint64, wrapping);
float sums, means, mean squares, variances and their roots are accumulated in float64 by
:func:`fixed_sum` and rounded once to the output type (DALI accumulates in float32, so the
last bits may differ from DALI's); ``min`` / ``max`` of an empty range give the type's largest /
lowest finite value; ``mean`` to an integer ``dtype`` truncates toward zero; the divisor of
``variance`` / ``std_dev`` is ``N - ddof`` (0 gives inf, negative nan). Registers
``reductions.sum`` / ``mean`` / ``mean_square`` / ``rms`` / ``min`` / ``max`` / ``std_dev`` /
``variance``.
"""
from __future__ import annotations

import math

import numpy as np

from compiler.ops.reductions import reduced_axes
from runtime.kernels.registry import per_sample, register

from .reduce_jit import block_sqdev, block_sum, extreme, int_sum, view3, warm_up

__all__ = ["fixed_sum", "reduce_sample", "warm_up"]


def fixed_sum(x, axes):
    """Sum of ``x`` over ``axes`` in float64, in an order fixed by the shape alone.

    numpy's ``add.reduce`` sums floats pairwise in blocks whose size depends on the SIMD code
    path the CPU gets; here the reduced elements (``R`` of them) are split into blocks of
    ``B = ceil(sqrt(R))``: the blocks are added one after the other, element by element (each
    IEEE addition is exact-rounded and the same on every CPU), then the ``B`` partial sums
    one after the other.

    Parameters
    ----------
    x : numpy.ndarray
    axes : sequence of int
        Non-negative, distinct.

    Returns
    -------
    numpy.ndarray
        float64, the shape of ``x`` without ``axes``.
    """
    x = np.asarray(x)
    axes = list(axes)
    kept = [k for k in range(x.ndim) if k not in axes]
    out_shape = tuple(x.shape[k] for k in kept)
    x3 = view3(x, axes) if x.dtype.kind in "biuf" else None
    if x3 is not None:      # adjacent axes: one compiled pass, the same order (reduce_jit)
        return block_sum(x3).reshape(out_shape)
    y = np.transpose(x, axes + kept).astype(np.float64, copy=False)
    r = math.prod(x.shape[k] for k in axes)
    y = y.reshape((r, math.prod(out_shape)))
    total = np.zeros(y.shape[1], np.float64)
    if r:
        b = math.isqrt(r - 1) + 1
        pad = -r % b
        if pad:
            y = np.concatenate([y, np.zeros((pad, y.shape[1]), np.float64)])
        blocks = y.reshape((-1, b, y.shape[1]))
        part = np.zeros((b, y.shape[1]), np.float64)
        for blk in blocks:
            part += blk
        for row in part:
            total += row
    return total.reshape(out_shape)


def _keep(res, x_shape, axes, keep_dims):
    res = np.asarray(res)
    if keep_dims:
        return res.reshape(tuple(1 if k in axes else e for k, e in enumerate(x_shape)))
    return res


def _broadcast_mean(mean, x_shape, axes):
    m = np.asarray(mean, np.float64)
    if m.size == 1:
        return m.reshape(())
    if m.ndim == len(x_shape):
        return m
    return m.reshape(tuple(1 if k in axes else e for k, e in enumerate(x_shape)))


def reduce_sample(op, x, axes, dtype, keep_dims=False, mean=None, ddof=0):
    """``reductions.<op>`` of one sample.

    Parameters
    ----------
    op : str
        ``sum``, ``mean``, ``mean_square``, ``rms``, ``min``, ``max``, ``std_dev`` or
        ``variance``.
    x : numpy.ndarray
    axes : list of int
        Sorted, non-negative reduced axes.
    dtype : str
        The output type.
    mean : numpy.ndarray or float, optional
        ``std_dev`` / ``variance``: a scalar, or one value per output element.

    Returns
    -------
    numpy.ndarray
    """
    x = np.asarray(x)
    dt = np.dtype(dtype)
    n = math.prod(x.shape[k] for k in axes)
    ax = tuple(axes)
    x3 = view3(x, axes) if x.dtype.kind in "biuf" and x.dtype != np.float16 else None
    if x3 is not None:
        res = _reduce3(op, x3, x.shape, axes, dt, n, mean, ddof)
        if res is not None:
            out_shape = tuple(e for k, e in enumerate(x.shape) if k not in axes)
            return _keep(res.reshape(out_shape).astype(dt), x.shape, axes, keep_dims)
    if op in ("min", "max"):
        info = np.finfo(x.dtype) if x.dtype.kind == "f" else np.iinfo(x.dtype)
        fn, init = (np.min, info.max) if op == "min" else (np.max, info.min)
        return _keep(fn(x, axis=ax, initial=init).astype(dt), x.shape, axes, keep_dims)
    if op == "sum" and x.dtype.kind in "iu":
        acc = np.uint64 if x.dtype.kind == "u" else np.int64
        s = np.sum(x, axis=ax, dtype=acc)
        return _keep(np.asarray(s).astype(dt), x.shape, axes, keep_dims)
    if op == "mean" and dt.kind in "iu":
        s = np.asarray(np.sum(x, axis=ax, dtype=np.int64 if x.dtype.kind == "i" else np.uint64))
        d = s.dtype.type(max(n, 1))
        q = s // d if s.dtype.kind == "u" else np.where(s >= 0, s // d, -(-s // d))
        return _keep(np.asarray(q).astype(dt), x.shape, axes, keep_dims)
    with np.errstate(divide="ignore", invalid="ignore"):
        if op == "sum":
            res = fixed_sum(x, axes)
        elif op == "mean":
            res = fixed_sum(x, axes) / n
        elif op in ("mean_square", "rms"):
            xf = x.astype(np.float64)
            res = fixed_sum(xf * xf, axes) / n
            if op == "rms":
                res = np.sqrt(res)
        else:
            d = x.astype(np.float64) - _broadcast_mean(mean, x.shape, axes)
            res = fixed_sum(d * d, axes) / np.float64(n - ddof)
            if op == "std_dev":
                res = np.sqrt(res)
    return _keep(np.asarray(res).astype(dt), x.shape, axes, keep_dims)


def _reduce3(op, x3, x_shape, axes, dt, n, mean, ddof):
    """``reduce_sample`` on the ``(A, R, B)`` view (:mod:`.reduce_jit`), the same values as
    the numpy formulation below it; None where that one applies (a mean of another shape)."""
    if op in ("min", "max"):
        return extreme(x3.view(np.uint8) if x3.dtype == np.bool_ else x3, op == "max")
    if x3.dtype == np.bool_:
        x3 = x3.view(np.uint8)
    if op == "sum" and x3.dtype.kind in "iu":
        return int_sum(x3)
    if op == "mean" and dt.kind in "iu":
        s = int_sum(x3)
        d = s.dtype.type(max(n, 1))
        return s // d if s.dtype.kind == "u" else np.where(s >= 0, s // d, -(-s // d))
    with np.errstate(divide="ignore", invalid="ignore"):
        if op == "sum":
            return block_sum(x3)
        if op == "mean":
            return block_sum(x3) / n
        if op in ("mean_square", "rms"):
            res = block_sqdev(x3, 0.0) / n
            return np.sqrt(res) if op == "rms" else res
        m = _broadcast_mean(mean, x_shape, axes)
        if m.size not in (1, x3.shape[0] * x3.shape[2]):
            return None
        res = block_sqdev(x3, m.reshape(x3.shape[0], x3.shape[2]) if m.size > 1 else m) \
            / np.float64(n - ddof)
        return np.sqrt(res) if op == "std_dev" else res


def _make_kernel(op):
    @per_sample
    def kernel(ctx, ins, a, i):
        x = np.asarray(ins[0])
        m = ctx.in_metas[0]
        axes = reduced_axes(x.ndim, m.layout or "", a.get("axes"), a.get("axis_names"))
        mean = ins[1] if len(ins) > 1 else None
        return reduce_sample(op, x, axes, ctx.out_metas[0].dtype, bool(a.get("keep_dims")),
                             mean, int(a.get("ddof") or 0))
    kernel.__name__ = f"{op}_kernel"
    kernel.__doc__ = f"``reductions.{op}`` of sample ``i``."
    return kernel


for _op in ("sum", "mean", "mean_square", "rms", "min", "max", "std_dev", "variance"):
    register(f"reductions.{_op}", "cpu")(_make_kernel(_op))
