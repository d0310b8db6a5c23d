"""``transpose`` and ``reshape``: axis permutation and shape reinterpretation (CPU).

Semantics follow ``nvidia.dali.fn.transpose`` and ``nvidia.dali.fn.reshape``
(DALI 2.4 documentation, checked against DALI). Layouts are strings (or
``None`` for "no layout"); both functions return ``(array, layout)``.

Registers the kernels of the ops that move or reinterpret a sample's elements without
computing: ``copy``, ``transpose``, ``reshape`` and ``subscript`` (``Tensor`` indexing,
``Batch.slice``).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from runtime.kernels.registry import per_sample, register

__all__ = ["transpose", "reshape"]


def _int_list(value, name):
    if isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, bool):
        return [int(value)]
    try:
        vals = list(np.asarray(value).ravel().tolist())
    except (TypeError, ValueError):
        raise TypeError(f"{name}={value!r}: expected a list of integers") from None
    for v in vals:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{name}={value!r}: expected integers, got {v!r}")
    return vals


def _check_layout(layout, ndim, name):
    if layout is None or layout == "":
        return None
    if not isinstance(layout, str):
        raise TypeError(f"{name}={layout!r}: expected a layout string or None")
    if len(layout) != ndim:
        raise ValueError(f"{name}={layout!r} has {len(layout)} letters; expected {ndim} "
                         f"(one per dimension)")
    return layout


def transpose(x, perm=None, *, layout=None, transpose_layout=True, output_layout=None):
    """Permute the axes of one sample (DALI ``fn.transpose``).

    ``out.shape[i] == x.shape[perm[i]]``.

    Parameters
    ----------
    x : numpy.ndarray
        One sample, any dtype.
    perm : sequence of int, optional
        A permutation of ``0..ndim-1``; ``None`` reverses the axes (DALI default).
    layout : str, optional
        Layout of ``x``.
    transpose_layout : bool
        Permute the layout letters with ``perm`` (default); otherwise the input
        layout is kept unchanged.
    output_layout : str, optional
        Explicit output layout; overrides ``transpose_layout``.

    Returns
    -------
    tuple
        ``(array, layout)``: a new C-contiguous array and its layout string
        (``None`` when the input has no layout and none is set).

    Raises
    ------
    ValueError
        ``perm`` is not a permutation of the axes; layout of the wrong length.
    TypeError
        Non-integer ``perm``.
    """
    x = np.asarray(x)
    nd = x.ndim
    perm = list(range(nd))[::-1] if perm is None else _int_list(perm, "perm")
    if sorted(perm) != list(range(nd)):
        raise ValueError(f"perm={perm!r}: expected a permutation of {list(range(nd))} "
                         f"for a {nd}-D input")
    layout = _check_layout(layout, nd, "layout")
    out = np.ascontiguousarray(np.transpose(x, perm))
    if output_layout is not None and output_layout != "":
        return out, _check_layout(output_layout, nd, "output_layout")
    if layout is None:
        return out, None
    if transpose_layout:
        return out, "".join(layout[p] for p in perm)
    return out, layout


def _dims_from_rel(rel, src_shape, name):
    out = []
    for r, s in zip(rel, src_shape):
        if r < 0:
            out.append(-1)
        else:
            # DALI rounds the product to the nearest integer
            out.append(int(math.floor(s * r + 0.5)))
    return out


def reshape(x, *, shape=None, rel_shape=None, layout=None, src_layout=None, src_dims=None):
    """Reinterpret the shape and/or layout of one sample (DALI ``fn.reshape``).

    Parameters
    ----------
    x : numpy.ndarray
        One sample, any dtype.
    shape : int or sequence of int, optional
        New shape; one entry may be negative (wildcard, inferred from the
        element count). Extents of 0 are literal.
    rel_shape : float or sequence of float, optional
        Output extents relative to the input: ``out[i] = in[i] * rel_shape[i]``
        (or ``in[src_dims[i]] * rel_shape[i]``), rounded to nearest; one entry
        may be negative (wildcard). Shorter than ``ndim`` gives fewer
        dimensions; a trailing negative entry may add one dimension.
        Mutually exclusive with ``shape``.
    layout : str, optional
        Output layout (must have one letter per output dimension); ``""``
        clears it. Not given: the input layout is kept when the number of
        dimensions is unchanged, else cleared.
    src_layout : str, optional
        Layout of ``x``.
    src_dims : sequence of int, optional
        Input dimension for each output dimension; -1 inserts an extent-1
        dimension. Without ``shape``/``rel_shape`` the output shape is
        ``[x.shape[d] if d >= 0 else 1 for d in src_dims]``.

    Returns
    -------
    tuple
        ``(array, layout)``; the array is a view of ``x`` when ``x`` is
        contiguous (DALI does not copy either).

    Raises
    ------
    ValueError
        Nothing requested, both ``shape`` and ``rel_shape``, more than one
        wildcard, an element count that does not match, or a layout of the
        wrong length.
    TypeError
        Non-integer ``shape`` entries.
    """
    x = np.asarray(x)
    nd = x.ndim
    src_layout = _check_layout(src_layout, nd, "src_layout")
    if shape is not None and rel_shape is not None:
        raise ValueError(f"shape={shape!r} and rel_shape={rel_shape!r} are mutually exclusive")
    if shape is None and rel_shape is None and src_dims is None and layout is None:
        raise ValueError("reshape: none of shape, rel_shape, src_dims or layout is given; "
                         "expected a new shape and/or layout")
    dims = None
    if src_dims is not None:
        dims = _int_list(src_dims, "src_dims")
        for d in dims:
            if d < -1 or d >= nd:
                raise ValueError(f"src_dims={src_dims!r}: expected indices in [-1, {nd - 1}]")
    if shape is not None:
        target = _int_list(shape, "shape")
    elif rel_shape is not None:
        try:
            rel = [float(v) for v in np.asarray(rel_shape, dtype=np.float64).ravel()]
        except (TypeError, ValueError):
            raise TypeError(f"rel_shape={rel_shape!r}: expected a list of numbers") from None
        if dims is not None:
            if len(rel) != len(dims):
                raise ValueError(f"rel_shape={rel_shape!r} and src_dims={src_dims!r} must "
                                 f"have the same length")
            src_shape = [x.shape[d] if d >= 0 else 1 for d in dims]
        else:
            if len(rel) > nd and not (len(rel) == nd + 1 and rel[-1] < 0):
                raise ValueError(
                    f"rel_shape={rel_shape!r} has more entries than the input has dimensions "
                    f"({nd}); use src_dims to add dimensions")
            src_shape = list(x.shape) + [1]
        target = _dims_from_rel(rel, src_shape, "rel_shape")
    elif dims is not None:
        target = [x.shape[d] if d >= 0 else 1 for d in dims]
    else:
        target = list(x.shape)
    wild = [i for i, v in enumerate(target) if v < 0]
    if len(wild) > 1:
        raise ValueError(f"shape {target}: only one dimension can be negative (inferred)")
    if wild:
        rest = math.prod(v for i, v in enumerate(target) if i != wild[0])
        if rest == 0:
            raise ValueError(f"shape {target}: cannot infer the negative extent when the "
                             f"other extents multiply to 0 (input shape {x.shape})")
        target[wild[0]] = x.size // rest
    if math.prod(target) != x.size:
        raise ValueError(f"cannot reshape an input of shape {x.shape} ({x.size} elements) to "
                         f"{tuple(target)} ({math.prod(target)} elements)")
    out = x.reshape(target)
    if layout is not None:
        out_layout = _check_layout(layout, len(target), "layout")
    elif src_layout is not None and len(target) == nd:
        out_layout = src_layout
    else:
        out_layout = None
    return out, out_layout


# ------------------------------------------------------------------ kernels
@register("copy", "cpu")
@per_sample
def copy_kernel(ctx, ins, a, i):
    """``copy``: a new array of every sample."""
    return np.array(ins[0], copy=True)


@register("transpose", "cpu")
@per_sample
def transpose_kernel(ctx, ins, a, i):
    """``transpose``: the sample's axes permuted by ``perm`` (default: reversed), contiguous."""
    x = ins[0]
    perm = a.get("perm")
    perm = tuple(range(x.ndim - 1, -1, -1)) if perm is None else tuple(perm)
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"perm {perm} is not a permutation of the {x.ndim} axes of the sample")
    return np.ascontiguousarray(np.transpose(x, perm))


@register("reshape", "cpu")
@per_sample
def reshape_kernel(ctx, ins, a, i):
    """``reshape``: :func:`reshape` of every sample (the layout is the node's metadata)."""
    out, _ = reshape(ins[0], shape=a.get("shape"), rel_shape=a.get("rel_shape"),
                     layout=a.get("layout"), src_layout=ctx.in_metas[0].layout or None)
    return out


@register("subscript", "cpu")
@per_sample
def subscript_kernel(ctx, ins, a, i):
    """``subscript``: basic indexing of every sample by the node's ``spec``.

    ``spec`` holds one item per index: ``("ellipsis",)``, ``("new",)``, ``("idx", v)`` or
    ``("slice", lo, hi, step)``; a bound given per sample is ``("t",)`` and its values are the
    tensor arguments ``at_<k>`` / ``lo_<k>`` / ``hi_<k>`` / ``st_<k>`` (the step).
    """
    x = ins[0]
    index = []
    for k, item in enumerate(a["spec"]):
        kind = item[0]
        if kind == "ellipsis":
            index.append(Ellipsis)
        elif kind == "new":
            index.append(None)
        elif kind == "idx":
            v = a[f"at_{k}"] if item[1] == ("t",) else item[1]
            index.append(int(v))
        else:
            lo = a[f"lo_{k}"] if item[1] == ("t",) else item[1]
            hi = a[f"hi_{k}"] if item[2] == ("t",) else item[2]
            step = int(a[f"st_{k}"]) if item[3] == ("t",) else item[3]
            if step == 0:
                raise ValueError(f"sample {i}: slice step cannot be zero")
            index.append(slice(None if lo is None else int(lo), None if hi is None else int(hi),
                               step))
    try:
        out = np.asarray(x[tuple(index)])  # integers on every axis: a 0-d sample (DALI)
        return out if out.flags.c_contiguous else np.ascontiguousarray(out)
    except IndexError as exc:
        raise IndexError(f"sample {i} of shape {x.shape}: {exc}") from None
