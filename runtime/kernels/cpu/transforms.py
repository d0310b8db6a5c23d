"""CPU kernels of ``transforms.*``: affine matrices (float32, ``ndim x (ndim + 1)``).

Semantics follow DALI 2.4 (observed): a rotation's angle becomes radians in float32
(``float32(angle) * float32(pi / 180)``) and its cosine and sine are the C library's, rounded
to float32 (bit-exact with DALI in the tested angles); shear angles give ``tanf`` of the
same radians; ``crop`` maps ``[from_start, from_end]`` onto ``[to_start, to_end]`` per axis.
Compositions (a center, an input matrix, ``combine``) are products of the homogeneous matrices
in float32 arithmetic, summed in index order (IEEE operations on scalars: the same bits on
every CPU). A 3-D rotation's matrix (Rodrigues' formula in float32) may differ from DALI's
in the last bit of its diagonal.
Registers ``transforms.translation`` / ``scale`` / ``rotation`` / ``shear`` / ``crop`` /
``combine`` and ``coord_transform``.
"""
from __future__ import annotations

import math

import numpy as np

from runtime.kernels.cpu import libm
from runtime.kernels.cpu.cast import cast
from runtime.kernels.registry import register, sample_args

__all__ = ["translation", "scaling", "rotation", "shear", "crop_transform", "compose",
           "coord_transform"]

_DEG = float(np.float32(math.pi / 180))


def _vec(v):
    return [float(np.float32(e)) for e in np.asarray(v, np.float64).ravel().tolist()]


def _f32(rows):
    return np.array(rows, np.float32)


def _dims(name, values, ndim):
    """``values`` repeated to ``ndim`` entries when it has one; else it must have ``ndim``."""
    if len(values) == 1 and ndim > 1:
        return values * ndim
    if len(values) != ndim:
        raise ValueError(f"argument {name!r} has {len(values)} values; a {ndim}-D transform "
                         f"needs {ndim} (or one)")
    return values


def _affine(lin, offset):
    n = len(lin)
    return _f32([[*lin[r], offset[r]] for r in range(n)])


def _with_center(lin, center):
    """The matrix of ``lin`` about ``center``: ``T(c) @ L @ T(-c)`` in float32 arithmetic."""
    n = len(lin)
    m = _affine(lin, [0.0] * n)
    if center is None:
        return m
    c = _dims("center", _vec(center), n)
    return compose(translation(c), compose(m, translation([-v for v in c])))


def translation(offset):
    """``[I | offset]``."""
    off = _vec(offset)
    n = len(off)
    return _affine([[1.0 if r == k else 0.0 for k in range(n)] for r in range(n)], off)


def scaling(scale, center=None, ndim=None):
    """``diag(scale)`` about ``center``."""
    s = _vec(scale)
    n = ndim or len(s)          # DALI: a scalar scale is 1-D unless ndim (or an input) says
    s = _dims("scale", s, n)
    lin = [[s[r] if r == k else 0.0 for k in range(n)] for r in range(n)]
    if center is None:
        return _affine(lin, [0.0] * n)
    c = _dims("center", _vec(center), n)
    f = np.float32
    return _affine(lin, [float(f(c[r]) * (f(1) - f(s[r]))) for r in range(n)])  # DALI's form


def _cos_sin(angle):
    rad = float(np.float32(np.float32(angle) * np.float32(_DEG)))
    return float(np.float32(math.cos(rad))), float(np.float32(math.sin(rad)))


def rotation(angle, axis=None, center=None):
    """A 2-D rotation by ``angle`` degrees, or a 3-D one about ``axis``, about ``center``.

    Raises
    ------
    ValueError
        An axis of zero length or not 3 values.
    """
    c, s = _cos_sin(angle)
    if axis is None:
        return _with_center([[c, -s], [s, c]], center)
    a = _vec(axis)
    if len(a) != 3:
        raise ValueError(f"argument 'axis' must have 3 values (a 3-D rotation axis), got {a}")
    norm = math.sqrt(sum(e * e for e in a))
    if norm == 0:
        raise ValueError("argument 'axis' must have a non-zero length")
    f = np.float32
    x, y, z = (f(e) / f(norm) for e in a)
    c, s = f(c), f(s)
    t = f(1) - c
    lin = [[c + x * x * t, x * y * t - z * s, x * z * t + y * s],       # float32 arithmetic
           [y * x * t + z * s, c + y * y * t, y * z * t - x * s],
           [z * x * t - y * s, z * y * t + x * s, c + z * z * t]]
    return _with_center([[float(v) for v in row] for row in lin], center)


def shear(shear_factors=None, angles=None, center=None):
    """Shear by factors (2: x, y; 6: xy, xz, yx, yz, zx, zy) or by angles (their tangents)."""
    if angles is not None:
        rad = np.float32(np.asarray(_vec(angles), np.float32) * np.float32(_DEG))
        f = [float(v) for v in libm.unary("tan", rad, np.float32).tolist()]      # tanf
        name = "angles"
    else:
        f = _vec(shear_factors)
        name = "shear"
    if len(f) == 2:
        lin = [[1.0, f[0]], [f[1], 1.0]]
    elif len(f) == 6:
        lin = [[1.0, f[0], f[1]], [f[2], 1.0, f[3]], [f[4], f[5], 1.0]]
    else:
        raise ValueError(f"argument {name!r} must have 2 (2-D) or 6 (3-D) values, got {len(f)}")
    return _with_center(lin, center)


def crop_transform(from_start=(0.0,), from_end=(1.0,), to_start=(0.0,), to_end=(1.0,),
                   absolute=False):
    """The per-axis map of ``[from_start, from_end]`` onto ``[to_start, to_end]``."""
    vals = [_vec(v) for v in (from_start, from_end, to_start, to_end)]
    n = max(len(v) for v in vals)
    names = ("from_start", "from_end", "to_start", "to_end")
    fs, fe, ts, te = (_dims(nm, v, n) for nm, v in zip(names, vals))
    if absolute:
        fs, fe = [min(a, b) for a, b in zip(fs, fe)], [max(a, b) for a, b in zip(fs, fe)]
        ts, te = [min(a, b) for a, b in zip(ts, te)], [max(a, b) for a, b in zip(ts, te)]
    lin, off = [], []
    for k in range(n):
        sc = float(np.float32((te[k] - ts[k]) / (fe[k] - fs[k]))) if fe[k] != fs[k] else 0.0
        lin.append([sc if r == k else 0.0 for r in range(n)])
        off.append(ts[k] - fs[k] * sc)
    return _affine(lin, off)


def compose(outer, inner):
    """``outer`` after ``inner``: the homogeneous product in float32 arithmetic (each product
    rounded, the sum over ``k = 0 .. ndim`` accumulated in that order), as DALI multiplies.

    Raises
    ------
    ValueError
        Matrices of different dimensionality.
    """
    a, b = np.asarray(outer, np.float32), np.asarray(inner, np.float32)
    n = a.shape[0]
    if b.shape != (n, n + 1):
        raise ValueError(f"The input describes a {b.shape[0]}D transform but other arguments "
                         f"suggest a {n}D transform")
    f = np.float32
    ha = [[f(v) for v in row] for row in a.tolist()] + [[f(0)] * n + [f(1)]]
    hb = [[f(v) for v in row] for row in b.tolist()] + [[f(0)] * n + [f(1)]]
    out = []
    for r in range(n):
        row = []
        for c in range(n + 1):
            acc = ha[r][0] * hb[0][c]
            for k in range(1, n + 1):
                acc = f(acc + ha[r][k] * hb[k][c])
            row.append(acc)
        out.append(row)
    return _f32(out)


def _check_input(m):
    m = np.asarray(m)
    if m.ndim != 2 or m.shape[1] != m.shape[0] + 1:
        raise ValueError(f"The input, if provided, is expected to be a 2D tensor with "
                         f"dimensions (ndim, ndim+1) representing an affine transform. Got: "
                         f"{m.shape}")
    return m


def _make(fn):
    def kernel(ctx, inputs, args):
        n = ctx.batch_size
        ins = inputs[0] if inputs else None
        out = []
        for i in range(n):
            for name in ctx.tensor_arg_names:
                v = np.asarray(args[name][i])
                if v.ndim > 1:
                    raise ValueError(f"{ctx.op}: argument {name!r} has shape {v.shape} in "
                                     f"sample {i}: per-frame arguments are not supported; give "
                                     f"one value (vector) per sample")
            a = sample_args(ctx, args, i)
            m_in = None
            if ins is not None:
                m_in = _check_input(ins[i] if len(ins) > 1 else ins[0])
            mat = fn(a, None if m_in is None else m_in.shape[0])
            if m_in is not None:
                mat = compose(m_in, mat) if a.get("reverse_order") else compose(mat, m_in)
            out.append(mat)
        return [out]
    kernel.__name__ = fn.__name__ + "_kernel"
    kernel.__doc__ = fn.__doc__
    return kernel


def _translation(a, nd):
    off = _vec(a["offset"])
    return translation(off * nd if nd and len(off) == 1 else off)


def _scale(a, nd):
    return scaling(a["scale"], a.get("center"), a.get("ndim") or nd)


def _rotation(a, nd):
    return rotation(a["angle"], a.get("axis") if a.get("axis") is not None
                    else None, a.get("center"))


def _shear(a, nd):
    if (a.get("shear") is None) == (a.get("angles") is None):
        raise ValueError("One and only one of the following arguments is expected: ``shear`` "
                         "or ``angles``")
    return shear(a.get("shear"), a.get("angles"), a.get("center"))


def _crop(a, nd):
    vals = {k: a.get(k) for k in ("from_start", "from_end", "to_start", "to_end")}
    vals = {k: (v if v is not None else ((0.0,) if "start" in k else (1.0,)))
            for k, v in vals.items()}
    if nd and all(len(_vec(v)) == 1 for v in vals.values()):
        vals = {k: _vec(v) * nd for k, v in vals.items()}
    return crop_transform(**vals, absolute=bool(a.get("absolute")))


for _name, _fn in (("translation", _translation), ("scale", _scale), ("rotation", _rotation),
                   ("shear", _shear), ("crop", _crop)):
    register(f"transforms.{_name}", "cpu")(_make(_fn))


@register("transforms.combine", "cpu")
def combine_kernel(ctx, inputs, args):
    """``transforms.combine``: the inputs' matrices composed in order (reversed with
    ``reverse_order``)."""
    out = []
    for i in range(ctx.batch_size):
        mats = [_check_input(inp[i] if len(inp) > 1 else inp[0]) for inp in inputs]
        if args.get("reverse_order"):
            mats = mats[::-1]
        acc = mats[0]
        for m in mats[1:]:
            acc = compose(m, acc)
        out.append(acc)
    return [out]


def _matrix(values, cols, name):
    v = np.asarray(values, np.float32).ravel()
    if v.size == 1:
        return None, float(v[0])
    if v.size % cols:
        raise ValueError(f"Cannot form a matrix with {v.size} elements and {cols} columns "
                         f"(argument {name!r})")
    return v.reshape((-1, cols)), None


def coord_transform(x, M=None, T=None, MT=None, dtype="float32"):
    """``out = M @ v + T`` for each vector ``v`` along the last axis of ``x``.

    float32 arithmetic per output component, in DALI's order: ``M[r, 0] * v[0]``, then
    ``+ M[r, k] * v[k]`` for ``k = 1 .. n - 1``, then ``+ T[r]`` (bit-exact with DALI).

    Raises
    ------
    ValueError
        ``M`` / ``MT`` values that do not form rows of the input's components (plus one), or a
        ``T`` of another length than ``M``'s rows.
    """
    x = np.asarray(x)
    n = x.shape[-1]
    if MT is not None:
        mat, diag = _matrix(MT, n + 1, "MT")
        if mat is None:
            mat = np.eye(n, dtype=np.float32) * np.float32(diag)
            tr = np.zeros(n, np.float32)
        else:
            mat, tr = mat[:, :n], mat[:, n]
    else:
        if M is None:
            mat = np.eye(n, dtype=np.float32)
        else:
            mat, diag = _matrix(M, n, "M")
            if mat is None:
                mat = np.eye(n, dtype=np.float32) * np.float32(diag)
        m = mat.shape[0]
        if T is None:
            tr = np.zeros(m, np.float32)
        else:
            tr = np.asarray(T, np.float32).ravel()
            if tr.size == 1:
                tr = np.full(m, tr[0], np.float32)
            elif tr.size != m:
                raise ValueError(f"argument 'T' has {tr.size} components; M has {m} rows")
    v = x.astype(np.float32)
    rows = []
    for r in range(mat.shape[0]):
        acc = mat[r, 0] * v[..., 0]
        for k in range(1, n):
            acc = acc + mat[r, k] * v[..., k]
        rows.append(acc + tr[r])
    out = np.stack(rows, axis=-1) if rows else np.zeros(x.shape[:-1] + (0,), np.float32)
    return cast(out, dtype) if np.dtype(dtype) != np.float32 else out.astype(np.float32)


@register("coord_transform", "cpu")
def coord_transform_kernel(ctx, inputs, args):
    """``coord_transform`` of each sample (per-sample ``M`` / ``T`` / ``MT``)."""
    out = []
    for i, x in enumerate(inputs[0]):
        a = sample_args(ctx, args, i)
        out.append(coord_transform(x, a.get("M"), a.get("T"), a.get("MT"),
                                   ctx.out_metas[0].dtype or "float32"))
    return [out]
