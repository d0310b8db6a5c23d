"""CPU kernel of ``normalize`` (numpy).

Semantics follow DALI 2.4 (observed): ``out = (in - mean) * (scale / sqrt(var + epsilon)) +
shift`` where ``var`` is ``stddev ** 2`` when ``stddev`` is given, else the variance about the
mean (given or computed) over the reduced axes, divided by ``N - ddof``; a computed ``var +
epsilon`` of 0 gives a factor of 0 (DALI's zeros for constant data), a given ``stddev`` of 0
gives inf. The reduced axes default to all of them, or, without ``axes`` / ``axis_names``, to
those where a tensor ``mean`` / ``stddev`` has extent 1. ``batch=True`` reduces over every
sample too. Integer outputs round half away from zero and saturate (``cast``).

The formulation (what the last bits follow): the mean is :func:`fixed_sum` / N in float64,
rounded to float32; the variance is accumulated in float64 from ``float32(x) - mean``; the
factor ``scale / sqrt(var + epsilon)`` is computed in float64 and rounded to float32; the
output is ``(float32(x) - mean) * factor + shift`` in float32 arithmetic. DALI accumulates in
float32, so results may differ from DALI's in the last bits. Registers ``normalize``.
"""
from __future__ import annotations

import math

import numpy as np

from compiler.ops.reductions import normalize_axes
from runtime.buffers import batch_array
from runtime.kernels.cpu.cast import cast
from runtime.kernels.cpu.reductions import fixed_sum
from runtime.kernels.registry import register, sample_args

from .reduce_jit import affine, block_sqdev, view3

__all__ = ["normalize_batch", "unflatten", "given_params"]


def unflatten(value, shape, axes):
    """A parameter given as a flat sequence (ndd passes a Tensor argument's values flat) in the
    shape it must have: the extents of ``shape`` outside the reduced ``axes`` (None: the one
    set of kept axes whose extents multiply to its length), 1 on them.

    Raises
    ------
    ValueError
        No set of axes, or several, fit the length.
    """
    p = np.asarray(value, np.float32)
    if p.ndim != 1 or p.size <= 1 or len(shape) <= 1:
        return p
    nd = len(shape)
    if axes is not None:
        kept = [tuple(1 if k in axes else e for k, e in enumerate(shape))]
    else:
        kept = []
        for bits in range(1, 1 << nd):
            cand = tuple(e if bits >> k & 1 else 1 for k, e in enumerate(shape))
            if math.prod(cand) == p.size and cand not in kept:
                kept.append(cand)
    fit = [k for k in kept if math.prod(k) == p.size]
    if len(fit) != 1:
        raise ValueError(f"Normalize: a parameter of {p.size} values does not fit the sample "
                         f"shape {tuple(shape)} unambiguously; give it the sample's number of "
                         f"dimensions (extent 1 on the reduced axes) or give 'axes'")
    return p.reshape(fit[0])


def _param(value, x, axes, name):
    """A float32 parameter broadcastable against ``x`` (keep-dims over ``axes``)."""
    p = np.asarray(value, np.float32)
    if p.size == 1 and p.ndim < x.ndim:
        return p.reshape(())
    if p.ndim != x.ndim or any(e != 1 and e != x.shape[k] for k, e in enumerate(p.shape)) or \
            any(p.shape[k] != 1 for k in axes):
        raise ValueError(f"Normalize: parameter {name!r} of shape {p.shape} does not match "
                         f"the input sample shape {x.shape} reduced over axes {list(axes)} "
                         f"(its extents must be 1 on the reduced axes and the input's "
                         f"elsewhere)")
    return p


def _kept_shape(x, axes):
    return tuple(1 if k in axes else e for k, e in enumerate(x.shape))


def _factor(var, epsilon, scale, computed):
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.asarray(var, np.float64) + np.float64(np.float32(epsilon))
        f = np.float64(np.float32(scale)) / np.sqrt(v)
        if computed:
            f = np.where(v == 0, 0.0, f)
    return f.astype(np.float32)


#: input types whose float32 conversion is exact: their sums can read the input directly
_EXACT_IN_F32 = frozenset(np.dtype(t) for t in ("uint8", "int8", "uint16", "int16", "float32",
                                                "bool"))


def _as_f32(s):
    """The sample as the float32 the formulation starts from; input types float32 holds
    exactly are left as they are (the compiled loops convert each element as they read it)."""
    s = np.asarray(s)
    return s if s.dtype in _EXACT_IN_F32 and s.dtype.kind != "b" else s.astype(np.float32)


def _to3(p, x3, kept):
    """A kept-dims parameter (scalar or ``kept``-broadcastable) as ``(A, B)`` or a scalar."""
    p = np.asarray(p)
    if p.size == 1:
        return p.reshape(())
    return np.broadcast_to(p, kept).reshape(x3.shape[0], x3.shape[2])


def _sqdev_sum(x, m, red):
    """Sum over ``red`` of ``float64(float32(x) - m) ** 2`` (fixed order), kept-dims less."""
    x3 = view3(x, red)
    if x3 is not None:
        kept = _kept_shape(x, red)
        out = block_sqdev(x3, _to3(m, x3, kept), float32_diff=True)
        return out.reshape(tuple(e for k, e in enumerate(x.shape) if k not in red))
    d = (x.astype(np.float32, copy=False) - m).astype(np.float64)
    return fixed_sum(d * d, red)


def _apply(x, m, f, shift32, red, dtype, out=None):
    """``cast((float32(x) - m) * f + shift, dtype)`` (float32 arithmetic), float32 results
    written into ``out`` when given (a view of the batch's recycled buffer)."""
    x3 = view3(x, red)
    f32 = np.dtype(dtype) == np.float32
    if x3 is not None:
        kept = _kept_shape(x, red)
        y = affine(x3, _to3(m, x3, kept), _to3(f, x3, kept), shift32,
                   out if f32 else None).reshape(x.shape)
    else:
        with np.errstate(invalid="ignore", over="ignore"):
            y = (x.astype(np.float32, copy=False) - m) * f + shift32
        if f32 and out is not None:
            out[...] = y
            y = out
    return y if f32 else cast(y, dtype)


def _outputs(xs, dtype):
    """Per-sample float32 output views of one recycled batch buffer
    (:func:`runtime.buffers.batch_array`: warm pages, no page faults per batch), or Nones."""
    if np.dtype(dtype) != np.float32:
        return [None] * len(xs)
    flat = batch_array((sum(x.size for x in xs),), np.float32)
    outs, at = [], 0
    for x in xs:
        outs.append(flat[at:at + x.size].reshape(x.shape))
        at += x.size
    return outs


def _serial(fn, n):
    return [fn(i) for i in range(n)]


def normalize_batch(samples, layout="", *, axes=None, axis_names=None, batch=False, ddof=0,
                    dtype="float32", epsilon=0.0, mean=None, scale=1.0, shift=0.0,
                    stddev=None, pmap=_serial):
    """DALI's ``normalize`` of a batch.

    Parameters
    ----------
    samples : list of numpy.ndarray
    mean, stddev : list (per sample) of float or numpy.ndarray, or None
    pmap : callable, optional
        ``pmap(fn, n) -> [fn(0), ..., fn(n - 1)]`` (e.g. the thread pool's ``map``); the
        per-sample work runs through it (results do not depend on it).
    Other parameters as the op's arguments.

    Returns
    -------
    list of numpy.ndarray
        ``dtype``, the input shapes.

    Raises
    ------
    ValueError
        Parameters of the wrong shape, tensor parameters with ``batch=True``, or samples whose
        kept extents differ with ``batch=True``.
    """
    if not samples:
        return []
    ndim = samples[0].ndim
    red = normalize_axes(ndim, layout, axes, axis_names)
    mean, stddev = ([unflatten(v, np.shape(samples[i]), red) for i, v in enumerate(p)]
                    if p is not None else None for p in (mean, stddev))
    if red is None:
        shaped = [np.asarray(p[0]) for p in (mean, stddev) if p is not None]
        shaped = [p for p in shaped if p.ndim == ndim and p.size > 1]
        red = [k for k in range(ndim) if shaped and shaped[0].shape[k] == 1] \
            if shaped else list(range(ndim))
    xs = [_as_f32(s) for s in samples]
    shift32 = np.float32(shift)
    if batch:
        if any(p is not None and np.asarray(p[0]).size > 1 for p in (mean, stddev)):
            raise ValueError("Normalize: Batch normalization cannot be used with parameters "
                             "specified as TensorList inputs")
        kept = _kept_shape(xs[0], red)
        for i, x in enumerate(xs[1:], 1):
            if _kept_shape(x, red) != kept:
                raise ValueError(f"Normalize: with batch=True the samples' extents outside the "
                                 f"reduced axes {red} must match; sample 0 has "
                                 f"{xs[0].shape}, sample {i} has {x.shape}")
        n = sum(math.prod(x.shape[k] for k in red) for x in xs)
        if mean is None:
            total = np.zeros(kept, np.float64)
            for part in pmap(lambda i: fixed_sum(xs[i], red), len(xs)):
                total += part.reshape(kept)         # in sample order
            with np.errstate(invalid="ignore", divide="ignore"):
                m = (total / n).astype(np.float32)
        else:
            m = np.float32(np.asarray(mean[0]).reshape(()))
        if stddev is None:
            acc = np.zeros(kept, np.float64)
            for part in pmap(lambda i: _sqdev_sum(xs[i], m, red), len(xs)):
                acc += part.reshape(kept)
            with np.errstate(invalid="ignore", divide="ignore"):
                f = _factor(acc / np.float64(n - ddof), epsilon, scale, True)
        else:
            s = np.float64(np.float32(np.asarray(stddev[0]).reshape(())))
            f = _factor(s * s, epsilon, scale, False)
        outs = _outputs(xs, dtype)
        return pmap(lambda i: _apply(xs[i], m, f, shift32, red, dtype, outs[i]), len(xs))
    outs = _outputs(xs, dtype)

    def one(i):
        x = xs[i]
        n = math.prod(x.shape[k] for k in red)
        if mean is None:
            with np.errstate(invalid="ignore", divide="ignore"):
                m = (fixed_sum(x, red) / n).astype(np.float32).reshape(_kept_shape(x, red))
        else:
            m = _param(mean[i], x, red, "mean")
        if stddev is None:
            with np.errstate(invalid="ignore", divide="ignore"):
                var = _sqdev_sum(x, m, red) / np.float64(n - ddof)
            f = _factor(var.reshape(_kept_shape(x, red)), epsilon, scale, True)
        else:
            s = _param(stddev[i], x, red, "stddev").astype(np.float64)
            f = _factor(s * s, epsilon, scale, False)
        return _apply(x, m, f, shift32, red, dtype, outs[i])
    return pmap(one, len(xs))


def given_params(shape, layout, args):
    """``(mean, factor, shift)`` of ``normalize`` with a given ``mean`` and ``stddev`` for one
    sample of ``shape``: ``out = (float32(x) - mean) * factor + shift`` in float32, ``mean`` and
    ``factor`` float32 arrays broadcastable against the sample (the hook of the fused colour
    kernel, ``runtime/kernels/cpu/fused_color.py``; the arithmetic of :func:`normalize_batch`).
    """
    nd = len(shape)
    red = normalize_axes(nd, layout or "", args.get("axes"), args.get("axis_names"))
    mean, stddev = (unflatten(args[k], shape, red) for k in ("mean", "stddev"))
    if red is None:
        shaped = [p for p in (np.asarray(mean), np.asarray(stddev)) if p.ndim == nd
                  and p.size > 1]
        red = [k for k in range(nd) if shaped[0].shape[k] == 1] if shaped else list(range(nd))
    x = np.broadcast_to(np.float32(0), shape)
    s = _param(stddev, x, red, "stddev").astype(np.float64)
    scale = 1.0 if args.get("scale") is None else args["scale"]
    return (_param(mean, x, red, "mean"), _factor(s * s, args.get("epsilon") or 0.0, scale, False),
            np.float32(args.get("shift") or 0.0))


@register("normalize", "cpu")
def normalize_kernel(ctx, inputs, args):
    """``normalize`` of the whole batch (``batch=True`` reduces across samples)."""
    samples = [np.asarray(s) for s in inputs[0]]
    per = [sample_args(ctx, args, i) for i in range(len(samples))]
    params = {}
    for name in ("mean", "stddev"):
        vals = [p.get(name) for p in per]
        params[name] = None if vals and vals[0] is None else vals
    return [normalize_batch(
        samples, ctx.in_metas[0].layout or "", axes=args.get("axes"),
        axis_names=args.get("axis_names"), batch=bool(args.get("batch")),
        ddof=int(args.get("ddof") or 0), dtype=ctx.out_metas[0].dtype or "float32",
        epsilon=args.get("epsilon") or 0.0, mean=params["mean"],
        scale=1.0 if args.get("scale") is None else args["scale"],
        shift=args.get("shift") or 0.0, stddev=params["stddev"], pmap=ctx.pool.map)]
