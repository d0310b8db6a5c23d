"""Saturating type conversion with DALI's rounding (CPU, numpy).

Semantics follow ``nvidia.dali.fn.cast`` (DALI 2.4, observed):

* float -> integer: round half away from zero (0.5 -> 1, -2.5 -> -3), then
  saturate to the target range (300.0 -> 255 for uint8, -inf -> 0);
* integer -> integer: saturate (-5 -> 0 for uint8, 70000 -> 32767 for int16);
* float -> bool: round first, so ``|x| < 0.5`` is False; integer -> bool is
  ``x != 0``;
* float -> float: IEEE conversion (overflow gives +-inf, as in DALI), except
  that conversions to float16 round exact ties away from zero, as DALI does
  (2049 -> 2050, where IEEE ties-to-even gives 2048);
* NaN -> integer gives 0 (DALI gives an unspecified value: 0, INT_MIN or 2**63
  depending on the type; see ``docs/semantics.md``); NaN -> bool is True.

The same conversion is used by ``crop`` / ``crop_mirror_normalize`` for their
``dtype`` and ``fill_values`` arguments.  Registers the ``cast`` kernel.
"""

from __future__ import annotations

import numpy as np

from runtime.buffers import batch_views
from runtime.kernels.registry import per_sample, register
from runtime.threadpool import map_runs

from . import cast_jit

__all__ = ["cast", "to_numpy_dtype", "round_half_away"]

_DALI_NAMES = {
    "float": "float32",
    "float16": "float16",
    "half": "float16",
    "float32": "float32",
    "float64": "float64",
    "double": "float64",
    "bool": "bool",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
}

_SUPPORTED = frozenset(np.dtype(v) for v in _DALI_NAMES.values())


def to_numpy_dtype(dtype, name="dtype"):
    """Resolve a user-facing dtype to a numpy dtype.

    Parameters
    ----------
    dtype : str, numpy dtype, numpy scalar type, or object with a ``name``
        attribute (e.g. a DALI/ndd type enum such as ``FLOAT`` / ``UINT8``,
        or a ``torch.dtype``). Strings are case-insensitive (``"float32"``,
        ``"FLOAT"``, ``"uint8"``).
    name : str
        Argument name used in error messages.

    Returns
    -------
    numpy.dtype
        One of bool, int8..int64, uint8..uint64, float16, float32, float64.

    Raises
    ------
    TypeError
        If ``dtype`` does not name one of the supported numeric types.
    """
    if isinstance(dtype, np.dtype):
        cand = dtype
    elif isinstance(dtype, type) and issubclass(dtype, np.generic):
        cand = np.dtype(dtype)
    elif dtype is bool or dtype is int or dtype is float:
        cand = np.dtype({bool: "bool", int: "int64", float: "float64"}[dtype])
    else:
        text = dtype if isinstance(dtype, str) else getattr(dtype, "name", None)
        if text is None:
            text = str(dtype)
        key = str(text).lower()
        key = key.rsplit(".", 1)[-1]  # "torch.float32" / "DALIDataType.FLOAT"
        if key not in _DALI_NAMES:
            raise TypeError(
                f"{name}={dtype!r} is not a supported type; expected one of "
                f"{sorted(set(_DALI_NAMES.values()))}")
        cand = np.dtype(_DALI_NAMES[key])
    if cand not in _SUPPORTED:
        raise TypeError(
            f"{name}={dtype!r} is not a supported type; expected one of "
            f"{sorted(set(_DALI_NAMES.values()))}")
    return cand


def round_half_away(x):
    """Round floats to the nearest integer, halves away from zero.

    Exact for every finite float (no ``x + 0.5`` error near 0.49999997).

    Parameters
    ----------
    x : numpy.ndarray or float
        Floating-point values.

    Returns
    -------
    numpy.ndarray or float
        Integer-valued floats of the same dtype; NaN and +-inf unchanged.
    """
    t = np.trunc(x)
    with np.errstate(invalid="ignore"):
        frac = np.abs(x - t)  # exact: x and trunc(x) share the exponent range
        return t + np.where(frac >= 0.5, np.sign(x), 0).astype(t.dtype, copy=False)


#: samples of at least this many elements are converted by the compiled loop (the same
#: integers; below it numpy's passes cost less than a call into compiled code, and a scalar
#: argument's conversion does not load numba)
_JIT_MIN = 4096


def _float_to_int(x, dst):
    x = np.asarray(x)       # a 0-d sample: numpy's scalar results cannot be assigned into
    if x.dtype == np.float16:
        x = x.astype(np.float32)
    if x.size >= _JIT_MIN and cast_jit.handles(x.dtype, dst):
        out = np.empty(x.shape, dst)
        cast_jit.float_to_int_into(x, out)
        return out
    info = np.iinfo(dst)
    r = round_half_away(x)
    ftype = r.dtype.type
    # largest float of r's type that is <= info.max, and info.min (a power of
    # two, or 0, so exact in every float type)
    hi_f = ftype(info.max)
    if int(hi_f) > info.max:
        hi_f = np.nextafter(hi_f, ftype(0))
    lo_f = ftype(info.min)
    nan = np.isnan(r)
    over = r > hi_f
    clipped = np.clip(np.where(nan, ftype(0), r), lo_f, hi_f)
    out = np.asarray(clipped.astype(dst))
    if over.any():
        out[over] = info.max
    return out


def _to_half(x):
    """float16 conversion rounding ties away from zero (DALI), else nearest."""
    with np.errstate(over="ignore", invalid="ignore"):
        wide = x.astype(np.float64)
        y = wide.astype(np.float16)
        diff = wide - y.astype(np.float64)
        other = np.nextafter(y, np.where(diff > 0, np.float16(np.inf), np.float16(-np.inf)))
        tie = (diff != 0) & (np.abs(wide - other.astype(np.float64)) == np.abs(diff)) \
            & (np.abs(other) > np.abs(y))
    if tie.any():
        y[tie] = other[tie]
    return y


def _int_to_int(x, dst):
    src_i, dst_i = np.iinfo(x.dtype), np.iinfo(dst)
    lo, hi = max(src_i.min, dst_i.min), min(src_i.max, dst_i.max)
    if lo == src_i.min and hi == src_i.max:
        return x.astype(dst)
    # np.asarray: numpy's clip of a 0-d array gives a scalar, which kernels cannot write into
    return np.asarray(np.clip(x, x.dtype.type(lo), x.dtype.type(hi)).astype(dst))


def cast(x, dtype):
    """Convert ``x`` to ``dtype`` with DALI's saturating, rounding semantics.

    Parameters
    ----------
    x : numpy.ndarray or scalar
        Input of any supported numeric dtype and any shape/layout.
    dtype : dtype-like
        Target type (see :func:`to_numpy_dtype`).

    Returns
    -------
    numpy.ndarray
        New array with the shape of ``x`` and dtype ``dtype`` (a copy even
        when the dtype does not change).

    Raises
    ------
    TypeError
        If ``dtype`` or ``x.dtype`` is not a supported numeric type.
    """
    dst = to_numpy_dtype(dtype)
    x = np.asarray(x)
    if x.dtype not in _SUPPORTED:
        raise TypeError(
            f"cast: input dtype {x.dtype} is not supported; expected one of "
            f"{sorted(set(_DALI_NAMES.values()))}")
    src = x.dtype
    if src == dst:
        return x.copy()
    if dst == np.float16 and src.kind in "iuf":
        return _to_half(x)
    if src.kind == "f":
        if dst.kind == "f":
            with np.errstate(over="ignore"):
                return x.astype(dst)
        if dst.kind == "b":
            with np.errstate(invalid="ignore"):
                return ~(np.abs(x) < 0.5)  # NaN compares False -> True
        return _float_to_int(x, dst)
    if src.kind == "b":
        return x.astype(dst)
    # integer source
    if dst.kind == "b":
        return x != 0
    if dst.kind == "f":
        return x.astype(dst)
    return _int_to_int(x, dst)


@per_sample
def _cast_samples(ctx, ins, a, i):
    return cast(ins[0], a["dtype"])


@register("cast", "cpu")
def cast_kernel(ctx, inputs, args):
    """``cast``: :func:`cast` of every sample to ``dtype``. float32 / float64 -> integers of
    up to 32 bits by the compiled loop (:mod:`.cast_jit`) into views of one recycled batch
    buffer, a run of samples per pool thread."""
    xs = inputs[0]
    dst = to_numpy_dtype(args["dtype"]) if "dtype" not in ctx.tensor_arg_names else None
    n = ctx.batch_size
    if dst is None or not xs or not cast_jit.handles(np.asarray(xs[0]).dtype, dst):
        return _cast_samples(ctx, inputs, args)
    samples = [np.asarray(xs[i] if len(xs) > 1 else xs[0]) for i in range(n)]
    if any(s.dtype != samples[0].dtype for s in samples):
        return _cast_samples(ctx, inputs, args)
    outs = batch_views([tuple(s.shape) for s in samples], dst)
    map_runs(ctx.pool, n, lambda i: cast_jit.float_to_int_into(samples[i], outs[i]))
    return [outs]


@register("cast_like", "cpu")
@per_sample
def cast_like_kernel(ctx, ins, a, i):
    """``cast_like``: :func:`cast` of every sample of the first input to the second input's
    dtype (the output dtype the schema inferred from it)."""
    return cast(ins[0], ctx.out_metas[0].dtype)
