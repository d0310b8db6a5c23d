"""CPU kernels of ``squeeze``, ``cat``, ``pad``, ``one_hot``, ``reinterpret``,
``element_extract`` and ``get_property`` (numpy).

Semantics follow DALI 2.4 (observed on its CPU operators):

* ``squeeze`` removes dimensions of extent 1 (or of extent 0 while the volume stays 0);
* ``cat`` joins along an existing axis, the other extents equal;
* ``pad`` pads at the end of each padded axis: to the batch's largest extent rounded up to
  ``align`` or, with ``shape[k] > 0``, to ``max(shape[k], extent)`` rounded up to ``align``;
* ``one_hot`` truncates float classes toward zero; classes outside ``[0, num_classes)`` set
  nothing.

Scalar values converted to the data type (``pad``'s ``fill_value``, ``one_hot``'s
``on_value``/``off_value``) follow C++'s ``static_cast`` from float on x86-64, as DALI's
compiled code does: truncation toward zero, out-of-range values wrapping through a 32-bit (or
64-bit) integer (:func:`c_convert`). Registers ``squeeze``, ``cat``, ``pad``, ``one_hot``,
``reinterpret``, ``element_extract`` and ``get_property``.
"""
from __future__ import annotations

import math

import numpy as np

from compiler.ops.shaping import axes_of
from runtime.buffers import batch_array
from runtime.kernels.cpu.cast import to_numpy_dtype
from runtime.kernels.cpu.dims import in_caller
from runtime.kernels.cpu.layout_ops import reshape
from runtime.kernels.registry import per_sample, register, sample_args

__all__ = ["c_convert", "squeeze", "cat", "pad_batch", "one_hot", "reinterpret",
           "element_extract"]


def _cvtt(f, bits):
    """x86 ``cvttss2si`` to a ``bits``-bit integer: truncation, "integer indefinite" (the most
    negative value) for NaN and out-of-range values."""
    lo = -(1 << (bits - 1))
    if math.isnan(f) or math.isinf(f):
        return lo
    t = int(f)                       # truncation toward zero, exact for any float
    return t if lo <= t < -lo else lo


def c_convert(value, dtype):
    """``static_cast<T>(float(value))`` as compiled for x86-64 (DALI's scalar arguments).

    Parameters
    ----------
    value : float
        Rounded to float32 first (DALI's float arguments are float32).
    dtype : dtype-like
        Target type.

    Returns
    -------
    numpy.generic
        Floats: IEEE conversion; bool: ``value != 0``; 8/16/32-bit signed and 8/16-bit unsigned
        integers: truncated to int32 (NaN and out-of-range: INT32_MIN), low bits kept; uint32:
        through int64; int64: truncated (out of range: INT64_MIN); uint64: values at or above
        2**63 subtract 2**63 first, negatives wrap.
    """
    dt = to_numpy_dtype(dtype)
    f32 = np.float32(value)
    if dt.kind == "f":
        with np.errstate(over="ignore"):
            return f32.astype(dt)
    f = float(f32)
    if dt.kind == "b":
        return np.bool_(f != 0)
    bits = dt.itemsize * 8
    if dt == np.uint64 and f >= 2.0 ** 63:
        i = _cvtt(f - 2.0 ** 63, 64) ^ (1 << 63)
    elif bits == 64 or dt == np.uint32:
        i = _cvtt(f, 64)
    else:
        i = _cvtt(f, 32)
    raw = i & ((1 << bits) - 1)
    return np.frombuffer(raw.to_bytes(dt.itemsize, "little"), dt)[0]


def squeeze(x, axes, copy=True):
    """``x`` without the dimensions ``axes`` (non-negative indices): a copy, or with
    ``copy=False`` a view when ``x`` is contiguous (the kernel's output, as ``reshape``'s).

    Raises
    ------
    ValueError
        A removed dimension whose extent is not 1 (unless the volume is 0 with and without it).
    """
    x = np.asarray(x)
    shape = tuple(e for k, e in enumerate(x.shape) if k not in axes)
    new_vol = math.prod(shape)
    if new_vol != x.size:
        raise ValueError(f"The volume of the new shape should match the one of the original "
                         f"shape. Requested a shape with {new_vol} elements but the original "
                         f"shape has {x.size} elements (squeezing axes {list(axes)} of shape "
                         f"{x.shape}).")
    out = x.reshape(shape)
    return out.copy() if copy else out


def cat(arrays, axis):
    """The arrays joined along ``axis`` (their other extents equal).

    Raises
    ------
    ValueError
        Different extents outside ``axis``.
    """
    arrays = [np.asarray(a) for a in arrays]
    ref = arrays[0].shape
    for i, a in enumerate(arrays[1:], 1):
        for k, (e, r) in enumerate(zip(a.shape, ref)):
            if k != axis and e != r:
                raise ValueError(f"Concatenated tensors can differ in size only in the "
                                 f"concatenation axis ({axis}). Input {i} has a shape "
                                 f"{a.shape} which is not compatible with input 0 of shape "
                                 f"{ref}. Mismatch in axis {k}.")
    if axis == 0 or len({a.dtype for a in arrays}) != 1 or arrays[0].dtype.kind not in "biuf":
        return np.concatenate(arrays, axis=axis)
    return _cat_rows(arrays, axis)


def _cat_rows(arrays, axis):
    """``np.concatenate`` along ``axis > 0`` as ``prod(shape[:axis])`` rows, each input adding
    one contiguous run of bytes per row: every run is copied as one void element (numpy copies
    the elements of a short trailing extent, e.g. the 3 channels of an HWC image, one by one;
    this is several times faster).  Same bytes as ``np.concatenate``."""
    dt = arrays[0].dtype
    rows = math.prod(arrays[0].shape[:axis])
    runs = [math.prod(a.shape[axis:]) * dt.itemsize for a in arrays]
    total = sum(runs)
    shape = arrays[0].shape[:axis] + (sum(a.shape[axis] for a in arrays),) \
        + arrays[0].shape[axis + 1:]
    out = np.empty(rows * total, np.uint8)
    off = 0
    for a, run in zip(arrays, runs):
        if run and rows:
            dst = np.ndarray((rows,), dtype=f"V{run}", buffer=out, offset=off,
                             strides=(total,))
            dst[...] = np.ascontiguousarray(a).reshape(-1).view(np.uint8).view(f"V{run}")
        off += run
    return out.view(dt).reshape(shape)


def _per_axis(values, n, name, *, broadcast):
    vals = [int(v) for v in np.asarray(values).ravel().tolist()]
    if broadcast and len(vals) == 1:
        return vals * n
    if len(vals) != n:
        raise ValueError(f'Argument "{name}" expected shape {n} but got {len(vals)} values, '
                         f"which can't be interpreted as the expected shape (one per padded "
                         f"axis).")
    return vals


def pad_batch(samples, axes, shapes=None, aligns=None, fills=None):
    """DALI's ``pad`` of a batch.

    Parameters
    ----------
    samples : list of numpy.ndarray
        Same number of dimensions (at least 1) and dtype.
    axes : list of int or None
        Non-negative axes to pad; None pads every axis.
    shapes, aligns : list (per sample) of sequences of int, or None
        Minimum extents (<= 0: the batch's largest extent) and alignments (positive; one value
        applies to every padded axis).
    fills : list (per sample) of float, or None
        The padding value (0), converted by :func:`c_convert`.

    Returns
    -------
    list of numpy.ndarray

    Raises
    ------
    ValueError
        A ``shape`` or ``align`` of the wrong length, or a non-positive alignment.
    """
    n = len(samples)
    if n == 0:
        return []
    ndim = samples[0].ndim
    axes = list(range(ndim)) if not axes else list(axes)
    biggest = [max(s.shape[a] for s in samples) for a in axes]
    out = []
    for i, x in enumerate(samples):
        align = _per_axis(aligns[i], len(axes), "align", broadcast=True) \
            if aligns is not None and aligns[i] is not None else [1] * len(axes)
        if any(v <= 0 for v in align):
            raise ValueError(f"Values of `align` argument must be positive, got {align}.")
        shape = _per_axis(shapes[i], len(axes), "shape", broadcast=False) \
            if shapes is not None and shapes[i] is not None else [-1] * len(axes)
        target = list(x.shape)
        for k, a in enumerate(axes):
            ext = biggest[k] if shape[k] <= 0 else max(shape[k], x.shape[a])
            target[a] = -(-ext // align[k]) * align[k]
        fill = c_convert(fills[i] if fills is not None else 0.0, x.dtype)
        y = np.full(target, fill, dtype=x.dtype)
        y[tuple(slice(0, e) for e in x.shape)] = x
        out.append(y)
    return out


def _class_index(x):
    """Integer class per element (-1 where none): floats truncated toward zero."""
    x = np.asarray(x)
    if x.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(x) & (np.abs(x) < 2.0 ** 62)
            return np.where(ok, np.trunc(np.where(ok, x, 0)), -1).astype(np.int64)
    if x.dtype == np.uint64:
        return np.where(x < 2 ** 62, x, 0).astype(np.int64) - (x >= 2 ** 62)
    return x.astype(np.int64)


def one_hot(x, num_classes, axis, on_value=1.0, off_value=0.0, dtype="float32", out=None):
    """One-hot encoding of ``x`` with the new axis at ``axis`` (``[0, ndim]``; None: a scalar,
    the output 1-D): ``off_value`` everywhere, then ``on_value`` scattered at each element's
    class (classes outside ``[0, num_classes)`` set nothing), into ``out`` when given.

    Returns
    -------
    numpy.ndarray
        ``dtype``; shape ``x.shape`` with ``num_classes`` inserted at ``axis``.
    """
    dt = to_numpy_dtype(dtype)
    cls = _class_index(x)
    if axis is None:
        cls = cls.reshape(())
        axis = 0
    shape = cls.shape[:axis] + (num_classes,) + cls.shape[axis:]
    res = np.empty(shape, dt) if out is None else out.reshape(shape)
    res[...] = c_convert(off_value, dt)
    if num_classes and cls.size:
        valid = (cls >= 0) & (cls < num_classes)
        idx = np.expand_dims(np.where(valid, cls, 0), axis)
        cur = np.take_along_axis(res, idx, axis)        # off_value where not valid
        on = np.where(np.expand_dims(valid, axis), c_convert(on_value, dt), cur)
        np.put_along_axis(res, idx, on, axis)
    return res


@register("squeeze", "cpu")
@in_caller
def squeeze_kernel(ctx, ins, a, i):
    """``squeeze`` of sample ``i``."""
    m = ctx.in_metas[0]
    x = np.asarray(ins[0])
    return squeeze(x, axes_of(x.ndim, m.layout or "", a.get("axes"), a.get("axis_names")),
                   copy=False)


@register("cat", "cpu")
@per_sample
def cat_kernel(ctx, ins, a, i):
    """``cat`` of sample ``i`` of every input."""
    layouts = [m.layout or "" for m in ctx.in_metas]
    axis = a.get("axis")
    name = a.get("axis_name")
    nd = np.asarray(ins[0]).ndim
    if name is not None:
        lay = next((x for x in layouts if x), "")
        axis = lay.index(name)
    axis = 0 if axis is None else (axis + nd if axis < 0 else axis)
    return cat(ins, axis)


@register("pad", "cpu")
def pad_kernel(ctx, inputs, args):
    """``pad`` of the whole batch (the default extents are the batch's largest)."""
    samples = [np.asarray(s) for s in inputs[0]]
    if not samples:
        return [[]]
    m = ctx.in_metas[0]
    axes = axes_of(samples[0].ndim, m.layout or "", args.get("axes"), args.get("axis_names"),
                   negative=True)
    per = [sample_args(ctx, args, i) for i in range(len(samples))]
    shapes = [p.get("shape") for p in per]
    aligns = [p.get("align") for p in per]
    fills = [0.0 if p.get("fill_value") is None else float(np.asarray(p["fill_value"]))
             for p in per]
    return [pad_batch(samples, axes, shapes, aligns, fills)]


@register("one_hot", "cpu")
def one_hot_kernel(ctx, inputs, args):
    """``one_hot`` of the whole batch (DALI's legacy rule looks at every sample's size)."""
    samples = [np.asarray(s) for s in inputs[0]]
    axis = args.get("axis")
    dtype = ctx.out_metas[0].dtype or args.get("dtype") or "float32"
    scalar = axis is None and all(s.size == 1 for s in samples)
    n_cls = int(args.get("num_classes") or 0)
    on = args.get("on_value") if args.get("on_value") is not None else 1.0
    off = args.get("off_value") if args.get("off_value") is not None else 0.0
    flat = batch_array((sum(s.size for s in samples) * n_cls if not scalar
                        else len(samples) * n_cls,), to_numpy_dtype(dtype))
    out, at = [], 0
    for x in samples:       # views of one recycled batch buffer (warm pages)
        pos = None if scalar else (x.ndim if axis is None or axis == -1 else axis)
        size = (1 if scalar else x.size) * n_cls
        out.append(one_hot(x, n_cls, pos, on, off, dtype, out=flat[at:at + size]))
        at += size
    return [out]


def reinterpret(x, dtype=None, shape=None, rel_shape=None, src_dims=None):
    """The bytes of ``x`` read as ``dtype`` with a new shape (DALI ``reinterpret``).

    Without ``shape`` / ``rel_shape`` / ``src_dims`` the innermost extent is adjusted to the
    new element size; a negative ``shape`` extent is inferred from the size in bytes;
    ``rel_shape`` / ``src_dims`` are relative to the input's extents (as ``reshape``).

    Returns
    -------
    numpy.ndarray
        A view of ``x``'s bytes when it is contiguous.

    Raises
    ------
    ValueError
        Sizes in bytes that do not match, or an innermost extent whose bytes do not divide by
        the new element size.
    """
    x = np.ascontiguousarray(x)
    dt = x.dtype if dtype is None else to_numpy_dtype(dtype)
    nbytes = x.size * x.itemsize
    if rel_shape is not None or src_dims is not None:
        target = list(reshape(x, rel_shape=rel_shape, src_dims=src_dims)[0].shape)
    elif shape is not None:
        if type(shape) is tuple and all(type(v) is int for v in shape):
            target = list(shape)        # the converted argument (the common case)
        else:
            target = [int(v) for v in np.asarray(shape).ravel().tolist()]
        wild = [k for k, v in enumerate(target) if v < 0]
        if len(wild) > 1:
            raise ValueError(f"reinterpret: only one extent of 'shape'={target} may be negative")
        if wild:
            rest = math.prod(v for k, v in enumerate(target) if k != wild[0])
            target[wild[0]] = nbytes // dt.itemsize // rest if rest else 0
    else:
        if x.ndim == 0:
            raise ValueError("reinterpret: a new dtype without a shape needs samples with at "
                             "least one dimension (got a 0-D sample)")
        inner = x.shape[-1] * x.itemsize
        if inner % dt.itemsize:
            raise ValueError(f"The size, in bytes, of the innermost dimension is not divisible "
                             f"by the sizes of the requested output type (innermost extent "
                             f"{x.shape[-1]} of {x.dtype}, output type {dt}).")
        target = list(x.shape[:-1]) + [inner // dt.itemsize]
    if math.prod(target) * dt.itemsize != nbytes:
        raise ValueError(f"Input and output samples must occupy the same size in bytes. Input "
                         f"shape {x.shape} ({nbytes} bytes), requested shape {tuple(target)} "
                         f"of {dt} ({math.prod(target) * dt.itemsize} bytes).")
    if dt == x.dtype:
        return x.reshape(target)
    return x.reshape(-1).view(np.uint8).view(dt).reshape(target)


@register("reinterpret", "cpu")
@in_caller
def reinterpret_kernel(ctx, ins, a, i):
    """``reinterpret`` of sample ``i`` (the ``shape_input`` input, when given, is ``shape``)."""
    shape = np.asarray(ins[1]) if len(ins) > 1 else a.get("shape")
    return reinterpret(ins[0], ctx.out_metas[0].dtype, shape, a.get("rel_shape"),
                       a.get("src_dims"))


def element_extract(x, element_map):
    """The frames ``x[e]`` for ``e`` in ``element_map`` (copies).

    Raises
    ------
    ValueError
        An index outside the sequence.
    """
    x = np.asarray(x)
    out = []
    for e in element_map:
        if not 0 <= e < x.shape[0]:
            raise ValueError(f"Index `{e}` from `element_map` is out of bounds for sample with "
                             f"sequence length equal `{x.shape[0]}`.")
        out.append(x[e].copy())
    return tuple(out)


@register("element_extract", "cpu")
def element_extract_kernel(ctx, inputs, args):
    """``element_extract``: one output per index of ``element_map``."""
    emap = args["element_map"]
    emap = [emap] if isinstance(emap, int) else [int(e) for e in emap]
    per = [element_extract(x, emap) for x in inputs[0]]
    return [[p[k] for p in per] for k in range(len(emap))]


@register("get_property", "cpu")
def get_property_kernel(ctx, inputs, args):
    """``get_property``: the layout letters, or each sample's source info (the storage's
    ``source_info``, e.g. a reader's file path; empty when unknown), as uint8 bytes."""
    data = inputs[0]
    if args["key"] == "layout":
        text = [ctx.in_metas[0].layout or ""] * len(data)
    else:
        info = getattr(data, "source_info", None)
        text = [str(info[i]) if info is not None and info[i] is not None else ""
                for i in range(len(data))]
    return [[np.frombuffer(t.encode(), np.uint8).copy() for t in text]]
