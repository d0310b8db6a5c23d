"""Geometry of the warps (``warp_affine``, ``rotate``, ``warp_perspective``): matrices and
output sizes.

Device-neutral (Python floats, float32 rounding done with numpy scalars; the matrices are handed to a kernel as float32 2 x 3
destination -> source maps in the convention of DALI's ``warp_affine``: pixel ``(x, y)`` of the
output samples the input at ``M @ (x + 0.5, y + 0.5, 1)``, ``(0, 0)`` being the corner of the
first pixel).

The rules were measured on DALI 2.4's CPU operators (see ``tests/ndd/test_oracle_ops_more.py``).
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["affine_matrix", "affine_matrices", "corner_to_center", "invert_affine",
           "invert_perspective", "output_size", "perspective_matrix", "perspective_output_size",
           "rotate_matrix", "rotate_output_size"]


def _flat_numbers(values) -> list[float]:
    flat = []

    def walk(v):
        if isinstance(v, (list, tuple)):
            for x in v:
                walk(x)
        elif hasattr(v, "tolist"):
            walk(v.tolist())
        else:
            flat.append(float(v))
    walk(values)
    return flat


def affine_matrix(values) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """The 2 x 3 matrix of a ``matrix`` argument or ``mtx`` input (6 numbers, row-major, or an
    array of shape (2, 3)).

    Raises
    ------
    ValueError
        Not 6 numbers.
    """
    flat = _flat_numbers(values)
    if len(flat) != 6:
        raise ValueError(f"argument 'matrix' must be a 2 x 3 affine matrix (6 numbers, "
                         f"M11 M12 M13 M21 M22 M23), got {len(flat)} numbers")
    return (tuple(flat[:3]), tuple(flat[3:]))


def affine_matrices(values, frames: int | None):
    """One matrix for every frame: a single 2 x 3 matrix (used for all), or, for a sequence of
    ``frames`` frames, ``frames`` matrices (a per-frame argument, shape ``(F, 2, 3)``).

    Returns
    -------
    tuple
        A matrix (:func:`affine_matrix`), or a list of ``frames`` of them.

    Raises
    ------
    ValueError
        Neither 6 numbers nor 6 per frame.
    """
    flat = _flat_numbers(values)
    if len(flat) == 6:
        return affine_matrix(flat)
    if frames is not None and len(flat) == 6 * frames:
        return [affine_matrix(flat[6 * k:6 * k + 6]) for k in range(frames)]
    per = f" or {6 * frames} (one 2 x 3 matrix per frame)" if frames is not None else ""
    raise ValueError(f"argument 'matrix' must be a 2 x 3 affine matrix (6 numbers){per}, got "
                     f"{len(flat)} numbers")


def invert_affine(m):
    """The inverse of the affine map ``m`` (2 x 3), for ``inverse_map=False``: computed in
    float32 as ``det = M11 M22 - M12 M21``, the linear part's entries divided by ``det`` and the
    translation ``-(A^-1 @ t)`` (DALI 2.4's results, measured bit-exactly).

    Raises
    ------
    ValueError
        A singular matrix.
    """
    f = np.float32
    (a, b, c), (d, e, g) = ((f(v) for v in row) for row in m)
    det = a * e - b * d
    if det == 0:
        raise ValueError(f"argument 'matrix' is not invertible (inverse_map=False): {m}")
    ia, ib, id_, ie = e / det, -b / det, -d / det, a / det
    rows = ((ia, ib, -(ia * c + ib * g)), (id_, ie, -(id_ * c + ie * g)))
    return tuple(tuple(float(v) for v in row) for row in rows)


def output_size(size, in_hw: tuple[int, int]) -> tuple[int, int]:
    """``(height, width)`` of the output from a ``size`` argument (rounded to nearest, halves
    up); an empty or missing ``size`` keeps ``in_hw``.

    Raises
    ------
    ValueError
        Not two extents, or a negative one.
    """
    if size is None:
        return in_hw
    if isinstance(size, (int, float)):
        size = (size,)
    size = tuple(float(s) for s in size)
    if not size:
        return in_hw
    if len(size) != 2:
        raise ValueError(f"argument 'size' must give 2 extents (height, width) for images, "
                         f"got {list(size)}")
    if any(s < 0 for s in size):
        raise ValueError(f"argument 'size' must not be negative, got {list(size)}")
    return int(math.floor(size[0] + 0.5)), int(math.floor(size[1] + 0.5))


def _trig(angle: float) -> tuple[float, float]:
    r = math.radians(angle)
    return math.cos(r), math.sin(r)


def _covering(extent: float, parity: int) -> int:
    """The smallest size of ``parity`` that covers ``extent`` (0.01 of slack, as DALI)."""
    n = math.ceil(extent - 0.01)
    return n if (n - parity) % 2 == 0 else n + 1


def rotate_output_size(in_hw: tuple[int, int], angle: float) -> tuple[int, int]:
    """``(height, width)`` of ``rotate``'s canvas when neither ``size`` nor ``keep_size`` is
    given: the bounding box of the rotated image (``W|cos| + H|sin|`` by ``W|sin| + H|cos|``,
    less 0.01, rounded up), grown by one pixel where needed so that each extent has the parity
    of the input extent it is closest to (height's for the height below 45 degrees, the width's
    above; at exactly 45 degrees the width's when ``cos > 0``). Observed in DALI 2.4, which
    keeps the image centered on whole or half pixels this way."""
    h, w = in_hw
    c, s = _trig(angle)
    ac, as_ = abs(c), abs(s)
    swap = (c > 0) if abs(ac - as_) < 1e-9 else as_ > ac
    ph, pw = (w, h) if swap else (h, w)
    return _covering(w * as_ + h * ac, ph), _covering(w * ac + h * as_, pw)


def rotate_matrix(angle: float, in_hw: tuple[int, int], out_hw: tuple[int, int]):
    """The destination -> source map of a counter-clockwise rotation by ``angle`` degrees
    (image y axis pointing down) that takes the output's center to the input's center.

    Computed in float32 as DALI 2.4 does (measured bit-exactly on its CPU operator): the angle
    in radians is ``float32(angle) * float32(pi / 180)``, its cosine and sine are rounded to
    float32 (from the C library's double ``cos`` / ``sin``: one implementation on every CPU),
    and the translation is ``R @ -out_center + in_center`` in float32 (centers at half the
    extents). The entries are returned as Python floats holding float32 values.
    """
    f = np.float32
    r = f(angle) * f(math.pi / 180)
    c, s = f(math.cos(float(r))), f(math.sin(float(r)))
    (ih, iw), (oh, ow) = in_hw, out_hw
    cix, ciy = f(iw) * f(0.5), f(ih) * f(0.5)
    cox, coy = f(ow) * f(0.5), f(oh) * f(0.5)
    tx = c * -cox + -s * -coy + cix
    ty = s * -cox + c * -coy + ciy
    return ((float(c), float(-s), float(tx)), (float(s), float(c), float(ty)))


# ------------------------------------------------------------ perspective (warp_perspective)
def perspective_matrix(values) -> np.ndarray:
    """The 3 x 3 float32 matrix of a ``matrix`` argument or input (9 numbers, row-major).

    Raises
    ------
    ValueError
        Not 9 numbers.
    """
    if isinstance(values, np.ndarray) and values.dtype.kind in "fiub":
        # the list path's float() conversions, vectorised (float64 first, then float32)
        flat = values.astype(np.float64).reshape(-1)
    else:
        flat = _flat_numbers(values)
    if len(flat) != 9:
        raise ValueError(f"argument 'matrix' must be a 3 x 3 perspective matrix (9 numbers), "
                         f"got {len(flat)} numbers")
    return np.array(flat, dtype=np.float32).reshape(3, 3)


def _matmul_f32(a, b):
    """``a @ b`` of 3 x 3 float32 matrices, every entry summed left to right in float32 from
    0: ``((0 + a[i, 0] b[0, j]) + a[i, 1] b[1, j]) + a[i, 2] b[2, j]``, all nine entries at
    once (element-wise float32 products and sums: the same bits as entry by entry)."""
    p = a[:, :, None] * b[None, :, :]           # p[i, k, j] = a[i, k] * b[k, j], float32
    return ((np.float32(0) + p[:, 0]) + p[:, 1]) + p[:, 2]


_SHIFT = np.array([[1, 0, 0.5], [0, 1, 0.5], [0, 0, 1]], np.float32)
_BACK = np.array([[1, 0, -0.5], [0, 1, -0.5], [0, 0, 1]], np.float32)


def corner_to_center(m: np.ndarray) -> np.ndarray:
    """A destination -> source (or source -> destination) map of ``pixel_origin="corner"``
    re-expressed with ``(0, 0)`` at the center of the first pixel: ``T(-0.5) @ (M @ T(0.5))``,
    in float32 like DALI 2.4's CPU operator (entries summed left to right)."""
    return _matmul_f32(_BACK, _matmul_f32(np.asarray(m, np.float32), _SHIFT))


def invert_perspective(m) -> np.ndarray:
    """The inverse of a 3 x 3 map in float64 by the adjugate over the determinant (a singular
    matrix gives zeros), as OpenCV's ``invert`` of a 3 x 3 matrix, which DALI 2.4 uses for
    ``inverse_map=False``. (Python floats: IEEE double operations one at a time, the bits of
    the same expressions in numpy float64 scalars, without their per-element cost.)"""
    (a, b, c), (d_, e, f), (g, h, k) = np.asarray(m, np.float64).tolist()
    det = (a * (e * k - f * h)
           - b * (d_ * k - f * g)
           + c * (d_ * h - e * g))
    if det == 0:
        return np.zeros((3, 3), np.float64)
    r = 1.0 / det
    return np.array([[(e * k - f * h) * r, (c * h - b * k) * r, (b * f - c * e) * r],
                     [(f * g - d_ * k) * r, (a * k - c * g) * r, (c * d_ - a * f) * r],
                     [(d_ * h - e * g) * r, (b * g - a * h) * r, (a * e - b * d_) * r]],
                    np.float64)


def perspective_output_size(size, in_hw: tuple[int, int]) -> tuple[int, int]:
    """``(height, width)`` of ``warp_perspective``'s output: ``size`` rounded half away from
    zero and at least 1 (DALI 2.4), or ``in_hw`` without ``size``.

    Raises
    ------
    ValueError
        Not two extents.
    """
    if size is None:
        return in_hw
    flat = _flat_numbers(size)
    if not flat:
        return in_hw
    if len(flat) != 2:
        raise ValueError(f"argument 'size' must give 2 extents (height, width), got {flat}")
    r = [max(int(math.copysign(math.floor(abs(float(np.float32(v))) + 0.5), v)), 1)
         for v in flat]
    return r[0], r[1]
