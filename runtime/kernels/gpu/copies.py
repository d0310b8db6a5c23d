"""GPU kernels of ``crop``, ``flip``, ``transpose``, ``cast`` and ``cast_like``: one strided copy.

All five are the ``copy_<in>_<out>`` kernel of ``copy.cu``: every output element reads the input
at an affine offset (per-axis strides, negative for a flip, permuted for a transpose), or holds a
fill value where a crop window leaves the image, and is converted with DALI's cast. The host side
here computes, per sample, the output shape, the strides and the in-bounds ranges (with the
argument logic of :mod:`runtime.kernels.params` and the CPU kernels' fill conversion), merges
axes that need no separate index (:func:`coalesce`) and launches one kernel for the batch.

Semantics are those of the CPU kernels (``runtime/kernels/cpu/crop.py``, ``flip.py``,
``layout_ops.py``, ``cast.py``); the host-shim tests check them bit for bit.
"""
from __future__ import annotations

import numbers

import numpy as np

from runtime.kernels.cpu.cast import to_numpy_dtype
from runtime.kernels.cpu.crop import fill_vector
from runtime.kernels.params.layouts import layout_axes, meta_layout
from runtime.kernels.params.windows import clip_window, crop_args, crop_window
from runtime.kernels.registry import register, sample_args

from .launch import address, family_kernel, launch_batch

__all__ = ["MAX_DIMS", "DESC_WORDS", "CopyPlan", "coalesce", "copy_desc", "run_copies",
           "crop_plan", "flip_plan", "transpose_plan", "crop_batch", "flip_batch",
           "transpose_batch", "cast_batch", "is_dense", "dense_copies"]

#: most axes of one sample after :func:`coalesce` (``NDD_COPY_MAX_DIMS`` in copy.cu)
MAX_DIMS = 6
#: int64 words of one ``CopyDesc``
DESC_WORDS = 8 + 4 * MAX_DIMS


class CopyPlan:
    """One sample's strided copy: output ``shape`` (output axis order), input element
    ``strides`` and ``offset`` (elements), in-bounds ranges ``lo``/``hi`` per output axis, the
    fill values (output dtype; None when nothing is padded) and the output axis they vary on."""

    __slots__ = ("shape", "strides", "offset", "lo", "hi", "fill", "c_axis")

    def __init__(self, shape, strides, offset=0, lo=None, hi=None, fill=None, c_axis=-1):
        self.shape = [int(s) for s in shape]
        self.strides = [int(s) for s in strides]
        self.offset = int(offset)
        self.lo = [0] * len(self.shape) if lo is None else [int(v) for v in lo]
        self.hi = list(self.shape) if hi is None else [int(v) for v in hi]
        self.fill = fill
        self.c_axis = c_axis


def _elem_strides(arr) -> list[int]:
    item = np.dtype(arr.dtype).itemsize
    return [s // item for s in arr.strides]


def coalesce(plan: CopyPlan) -> CopyPlan:
    """Merge neighbouring output axes that one index can walk (contiguous strides, no window
    bounds, not the fill's channel axis) and drop extent-1 axes, so most copies need 1-3 axes.

    Raises
    ------
    NotImplementedError
        More than :data:`MAX_DIMS` axes remain.
    """
    per_channel = plan.fill is not None and plan.fill.size > 1
    axes = []
    for k in range(len(plan.shape)):
        keep = plan.shape[k] != 1 or (per_channel and k == plan.c_axis)
        if plan.shape[k] == 0:
            keep = True
        if keep:
            axes.append([plan.shape[k], plan.strides[k], plan.lo[k], plan.hi[k],
                         per_channel and k == plan.c_axis])
        elif not (plan.lo[k] <= 0 < plan.hi[k]):
            axes.append([1, plan.strides[k], plan.lo[k], plan.hi[k], False])
    merged = []
    for ax in axes:
        if merged:
            prev = merged[-1]
            full = (prev[2] == 0 and prev[3] == prev[0] and ax[2] == 0 and ax[3] == ax[0])
            if full and not prev[4] and not ax[4] and prev[1] == ax[1] * ax[0]:
                prev[0] *= ax[0]
                prev[1] = ax[1]
                prev[3] = prev[0]
                continue
        merged.append(ax)
    if not merged:
        merged = [[1, 0, 0, 1, False]]
    if len(merged) > MAX_DIMS:
        raise NotImplementedError(f"a GPU copy handles at most {MAX_DIMS} non-mergeable axes; "
                                  f"this sample has {len(merged)}")
    c_axis = next((k for k, ax in enumerate(merged) if ax[4]), -1)
    return CopyPlan([a[0] for a in merged], [a[1] for a in merged], plan.offset,
                    [a[2] for a in merged], [a[3] for a in merged], plan.fill, c_axis)


def copy_desc(row: np.ndarray, plan: CopyPlan, in_ptr: int, out_ptr: int, fill_ptr: int) -> None:
    """Fill one ``CopyDesc`` row (int64 words, the struct of copy.cu) from a coalesced plan."""
    nd = len(plan.shape)
    row[:] = 0
    row[0:8] = (in_ptr, out_ptr, fill_ptr, plan.offset, int(np.prod(plan.shape)), nd,
                plan.c_axis, 0 if plan.fill is None else plan.fill.size)
    m = MAX_DIMS
    row[8:8 + nd] = plan.shape
    row[8 + m:8 + m + nd] = plan.strides
    row[8 + 2 * m:8 + 2 * m + nd] = plan.lo
    row[8 + 3 * m:8 + 3 * m + nd] = plan.hi


def run_copies(ctx, samples, plans, out_dtype) -> list:
    """Allocate the outputs and run the copy kernel once over the batch.

    Parameters
    ----------
    samples : list of device arrays
        One input per plan (one dtype).
    plans : list of CopyPlan
        Uncoalesced plans in output axis order (the output is C-contiguous in that order),
        their fill values in ``out_dtype``.
    out_dtype : numpy.dtype
        The samples' dtype (the copy moves bits; see :func:`crop_batch` for conversions).

    Returns
    -------
    list of device arrays
        The outputs, from ``ctx.empty``.
    """
    out_dtype = np.dtype(out_dtype)
    n = len(plans)
    if n and np.dtype(samples[0].dtype) != out_dtype:
        raise ValueError(f"run_copies: samples of {samples[0].dtype}, output {out_dtype}")
    outs = [ctx.empty(tuple(p.shape), out_dtype) for p in plans]
    if n == 0:
        return outs
    descs = np.zeros((n, DESC_WORDS), np.int64)
    fills, max_count = [], 0
    for i, plan in enumerate(plans):
        cp = coalesce(plan)
        fill_ptr = 0
        if cp.fill is not None:
            dev = ctx.upload(np.ascontiguousarray(cp.fill, dtype=out_dtype))
            fills.append(dev)
            fill_ptr = _ptr(dev)
        copy_desc(descs[i], cp, _ptr(samples[i]), _ptr(outs[i]), fill_ptr)
        max_count = max(max_count, int(descs[i, 4]))
    kernel = family_kernel(ctx, "copy", f"copy_{out_dtype.itemsize}")
    launch_batch(ctx, kernel, descs, max_count, reads=[*samples, *fills], writes=outs)
    return outs


def _dense_strides(shape) -> list[int]:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(1, s)
    return out[::-1]


def is_dense(x) -> bool:
    """Whether a (device) array is C-contiguous (element strides of its shape)."""
    return len(x.shape) == 0 or _elem_strides(x) == _dense_strides(x.shape) or x.size <= 1


def _ptr(arr) -> int:
    return address(arr)


# ------------------------------------------------------------------ per-op plans
def crop_plan(shape, strides, layout, window, policy="error", fill_values=0, out_dtype=None):
    """The :class:`CopyPlan` of ``crop`` on one sample (``runtime/kernels/cpu/crop.py``
    ``crop_to_window``): the window clipped by ``policy``, padding with ``fill_values``
    converted to ``out_dtype`` (only when the window leaves the image)."""
    layout, axes = layout_axes(layout, len(shape))
    ah, aw = axes["H"], axes["W"]
    H, W = shape[ah], shape[aw]
    y0, x0, h, w = clip_window(window, (H, W), policy, tuple(shape), layout)
    out_shape = list(shape)
    out_shape[ah], out_shape[aw] = h, w
    lo, hi = [0] * len(shape), list(out_shape)
    lo[ah], hi[ah] = max(0, -y0), max(max(0, -y0), min(h, H - y0))
    lo[aw], hi[aw] = max(0, -x0), max(max(0, -x0), min(w, W - x0))
    inside = lo[ah] == 0 and hi[ah] == h and lo[aw] == 0 and hi[aw] == w
    fill, c_axis = None, -1
    if not inside:
        c = axes.get("C")
        fill = fill_vector(fill_values, shape[c] if c is not None else None, out_dtype)
        c_axis = c if c is not None else -1
    offset = y0 * strides[ah] + x0 * strides[aw]
    return CopyPlan(out_shape, strides, offset, lo, hi, fill, c_axis)


def _flag(value, name) -> bool:
    if isinstance(value, (numbers.Integral, np.integer, bool, np.bool_)):
        return bool(value)
    arr = np.asarray(value)
    if arr.size == 1 and arr.dtype.kind in "biu":
        return bool(arr.item())
    raise TypeError(f"{name}={value!r}: expected an integer (0 = keep, non-zero = flip)")


def flip_plan(shape, strides, layout, horizontal=1, vertical=0, depthwise=0):
    """The :class:`CopyPlan` of ``flip`` on one sample (``runtime/kernels/cpu/flip.py``)."""
    layout, axes = layout_axes(layout, len(shape))
    st, offset = list(strides), 0
    for letter, value, name in (("W", horizontal, "horizontal"), ("H", vertical, "vertical"),
                                ("D", depthwise, "depthwise")):
        if _flag(value, name) and letter in axes:
            k = axes[letter]
            offset += (shape[k] - 1) * st[k] if shape[k] > 0 else 0
            st[k] = -st[k]
    return CopyPlan(shape, st, offset)


def transpose_plan(shape, strides, perm=None):
    """The :class:`CopyPlan` of ``transpose`` (``perm`` default: the axes reversed)."""
    nd = len(shape)
    perm = tuple(range(nd - 1, -1, -1)) if perm is None else tuple(int(p) for p in perm)
    if sorted(perm) != list(range(nd)):
        raise ValueError(f"perm {perm} is not a permutation of the {nd} axes of the sample")
    return CopyPlan([shape[p] for p in perm], [strides[p] for p in perm])


# ------------------------------------------------------------------ batch entry points
def _broadcast(samples, n):
    return [samples[i] if len(samples) > 1 else samples[0] for i in range(n)]


def crop_batch(ctx, samples, per_sample_args, layout):
    """``crop`` of a batch: ``per_sample_args[i]`` are sample ``i``'s arguments.

    With a ``dtype`` argument the samples are converted first (:func:`cast_batch`, a second
    launch): converting then copying equals copying then converting element by element, and
    the fill values are converted by the CPU's ``fill_vector``, as the CPU kernel does."""
    plans = []
    dtypes = {np.dtype(x.dtype) if a.get("dtype") is None else to_numpy_dtype(a["dtype"])
              for x, a in zip(samples, per_sample_args)}
    if len(dtypes) > 1:
        raise ValueError("crop on the GPU needs one output dtype for the batch")
    out_dtype = dtypes.pop() if dtypes else np.dtype(np.uint8)
    if samples and np.dtype(samples[0].dtype) != out_dtype:
        samples = cast_batch(ctx, samples, out_dtype)
    dt = out_dtype
    for x, a in zip(samples, per_sample_args):
        lay, axes = layout_axes(layout, len(x.shape))
        window = crop_window((x.shape[axes["H"]], x.shape[axes["W"]]), **crop_args(a))
        plans.append(crop_plan(x.shape, _elem_strides(x), lay, window,
                               a.get("out_of_bounds_policy") or "error",
                               0 if a.get("fill_values") is None else a["fill_values"], dt))
    return run_copies(ctx, samples, plans, out_dtype)


def flip_batch(ctx, samples, per_sample_args, layout):
    """``flip`` of a batch."""
    plans = [flip_plan(x.shape, _elem_strides(x), layout, a.get("horizontal", 1),
                       a.get("vertical", 0), a.get("depthwise", 0))
             for x, a in zip(samples, per_sample_args)]
    return run_copies(ctx, samples, plans, samples[0].dtype if samples else np.uint8)


def transpose_batch(ctx, samples, per_sample_args):
    """``transpose`` of a batch."""
    plans = [transpose_plan(x.shape, _elem_strides(x), a.get("perm"))
             for x, a in zip(samples, per_sample_args)]
    return run_copies(ctx, samples, plans, samples[0].dtype if samples else np.uint8)


def cast_batch(ctx, samples, dtype):
    """``cast`` of a batch to ``dtype`` (DALI's rounding and saturation)."""
    dtype = to_numpy_dtype(dtype)
    samples = dense_copies(ctx, samples)
    outs = [ctx.empty(tuple(x.shape), dtype) for x in samples]
    if not samples:
        return outs
    descs = np.array([(_ptr(x), _ptr(o), int(np.prod(x.shape))) for x, o in zip(samples, outs)],
                     np.int64).reshape(len(samples), 3)
    kernel = family_kernel(ctx, "cast", f"cast_{np.dtype(samples[0].dtype).name}_{dtype.name}")
    launch_batch(ctx, kernel, descs, int(descs[:, 2].max()), reads=samples, writes=outs)
    return outs


def dense_copies(ctx, samples) -> list:
    """``samples`` themselves when all are C-contiguous, else C-contiguous copies (one copy
    launch)."""
    if all(is_dense(x) for x in samples):
        return list(samples)
    return run_copies(ctx, samples, [CopyPlan(x.shape, _elem_strides(x)) for x in samples],
                      samples[0].dtype)


def _per_sample(ctx, args, n):
    return [sample_args(ctx, args, i) for i in range(n)]


@register("crop", "gpu")
def crop_kernel(ctx, inputs, args):
    """``crop`` on the GPU: one copy launch for the batch."""
    samples = _broadcast(inputs[0], ctx.batch_size)
    per = _per_sample(ctx, args, len(samples))
    return [ctx.samples(crop_batch(ctx, samples, per, meta_layout(ctx.in_metas[0])))]


@register("flip", "gpu")
def flip_kernel(ctx, inputs, args):
    """``flip`` on the GPU: one copy launch for the batch."""
    samples = _broadcast(inputs[0], ctx.batch_size)
    return [ctx.samples(flip_batch(ctx, samples, _per_sample(ctx, args, len(samples)),
                       meta_layout(ctx.in_metas[0])))]


@register("transpose", "gpu")
def transpose_kernel(ctx, inputs, args):
    """``transpose`` on the GPU: one copy launch for the batch."""
    samples = _broadcast(inputs[0], ctx.batch_size)
    return [ctx.samples(transpose_batch(ctx, samples, _per_sample(ctx, args, len(samples))))]


@register("cast", "gpu")
def cast_kernel(ctx, inputs, args):
    """``cast`` on the GPU: one copy launch for the batch."""
    return [ctx.samples(cast_batch(ctx, _broadcast(inputs[0], ctx.batch_size), args["dtype"]))]


@register("cast_like", "gpu")
def cast_like_kernel(ctx, inputs, args):
    """``cast_like`` on the GPU: ``cast`` to the second input's dtype."""
    samples = _broadcast(inputs[0], ctx.batch_size)
    return [ctx.samples(cast_batch(ctx, samples, ctx.out_metas[0].dtype))]

