"""DALI's resampling filters (used by the tap tables of :mod:`.resize_taps`).

Filter semantics (DALI 2.4 CPU ``resize``) are documented in :mod:`runtime.kernels.cpu.resize`.
Tables are built once and read-only; :func:`make_filter` is cached, so the functions here are
thread-safe.
"""
from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["Filter", "make_filter", "FILTER_TABLES"]

_f32 = np.float32


# --------------------------------------------------------------------------------------------
# Filter lookup tables (built once, read-only)
# --------------------------------------------------------------------------------------------

def _cubic_window(x: np.ndarray) -> np.ndarray:
    ax = np.abs(x).astype(np.float32)
    x2 = ax * ax
    x3 = x2 * ax
    near = _f32(1.5) * x3 - _f32(2.5) * x2 + _f32(1.0)
    far = _f32(-0.5) * x3 + _f32(2.5) * x2 - _f32(4.0) * ax + _f32(2.0)
    return np.where(ax >= 2, _f32(0), np.where(ax > 1, far, near)).astype(np.float32)


def _sinc(t: float) -> float:
    return 1.0 if t == 0.0 else math.sin(math.pi * t) / (math.pi * t)


def _lanczos_window(x: np.ndarray, a: float) -> np.ndarray:
    # in float64 with the C library's sin (math.sin): numpy's vectorised sin differs per CPU
    return np.array([_sinc(t) * _sinc(t / a) if abs(t) < a else 0.0
                     for t in x.astype(np.float64).tolist()]).astype(np.float32)


def _gaussian_window(x: np.ndarray) -> np.ndarray:
    # DALI: expf(-x * x) in float32. math.exp (the C library's exp) of that float32 value,
    # rounded to float32, equals expf on all 65 entries (checked with ctypes) and, unlike
    # numpy's float32 exp, is the same on every CPU (tests/test_cpu_independence.py).
    neg_sq = (-(x * x)).astype(np.float32)
    return np.array([math.exp(v) for v in neg_sq.astype(np.float64).tolist()]).astype(np.float32)


def _lut_x(n: int, half_range: float) -> np.ndarray:
    i = np.arange(n, dtype=np.float32)
    return (_f32(2 * half_range) * (i - _f32((n - 1) * 0.5)) / _f32(n - 1)).astype(np.float32)


#: name -> (table, initial support width the table is defined over)
FILTER_TABLES = {
    "triangular": (np.array([0.0, 1.0, 0.0], np.float32), None),
    "gaussian": (_gaussian_window(_lut_x(65, 2.0)), None),
    "lanczos3": (_lanczos_window(_lut_x(193, 3.0), 3.0), 6.0),
    "cubic": (_cubic_window(_lut_x(129, 2.0)), 4.0),
}
for _table, _ in FILTER_TABLES.values():
    _table.setflags(write=False)


class Filter:
    """A lookup-table filter stretched to a given width (DALI's ResamplingFilter).

    ``values``/``slopes`` are the table (then zeros) and its forward differences, so that the
    filter at table coordinate ``p >= 0`` is ``values[i] + (p - i) * slopes[i]``, ``i =
    floor(p)`` (clamped into the zero tail): DALI's linear interpolation of the table, zero
    beyond it.  ``taps`` is ``arange(support)`` as float32.
    """

    __slots__ = ("values", "slopes", "cap", "scale", "anchor", "support", "taps", "tent")

    def __init__(self, name: str, width: float):
        table, first_width = FILTER_TABLES[name]
        n = table.shape[0]
        scale = _f32((n - 1) * 0.5)
        anchor = _f32(1.0)
        for w in ((first_width,) if first_width else ()) + (width,):
            new_scale = _f32(_f32(n - 1) / _f32(w))
            anchor = _f32(_f32(anchor * scale) / new_scale)
            scale = new_scale
        self.values, self.slopes = _TAILS[name]
        self.cap = self.values.shape[0] - 1
        self.scale = scale
        self.anchor = anchor
        self.support = int(math.ceil(_f32(_f32(n - 1) / scale)))
        self.taps = np.arange(self.support, dtype=np.float32)
        self.tent = name == "triangular"

    def __call__(self, pos: np.ndarray) -> np.ndarray:
        """Evaluate at non-negative table coordinates ``pos`` (float32 array, may be reused).

        The table ``[0, 1, 0]`` (triangular) is ``max(0, min(p, 2 - p))``: bit for bit the
        interpolated table (``p - 1`` and ``2 - p`` are exact for ``1 <= p < 2``).
        """
        if self.tent:
            d = np.subtract(_f32(2), pos)
            np.minimum(pos, d, out=d)
            return np.maximum(d, _f32(0), out=d)
        fl = np.floor(pos)
        d = pos - fl
        i0 = fl.astype(np.intp)
        np.minimum(i0, self.cap, out=i0)
        d *= self.slopes.take(i0)
        d += self.values.take(i0)
        return d


def _tails(table: np.ndarray):
    values = np.concatenate([table, np.zeros(2, np.float32)]).astype(np.float32)
    slopes = np.zeros_like(values)
    slopes[:-1] = values[1:] - values[:-1]
    values.setflags(write=False)
    slopes.setflags(write=False)
    return values, slopes


_TAILS = {name: _tails(table) for name, (table, _) in FILTER_TABLES.items()}


@functools.lru_cache(maxsize=4096)
def make_filter(kind: str, antialias: bool, in_size: float, out_size: int) -> Filter | None:
    """DALI's filter choice for one axis; ``None`` means nearest neighbour (cached)."""
    aa = bool(antialias) and in_size > out_size
    ratio = _f32(_f32(in_size) / _f32(out_size)) if out_size else _f32(1)
    if kind == "nn":
        return None
    if kind == "linear":
        if aa:
            return Filter("triangular", max(_f32(1), _f32(2) * ratio))
        return Filter("triangular", _f32(2))
    if kind == "triangular":
        radius = ratio if aa else _f32(1)
        return Filter("triangular", max(_f32(1), _f32(2) * radius))
    if kind == "gaussian":
        radius = ratio if aa else _f32(1)
        sigma = _f32(float(radius * _f32(0.5)) / math.sqrt(2.0))
        return Filter("gaussian", max(_f32(1), _f32(_f32(4 * math.sqrt(2.0)) * sigma)))
    if kind == "cubic":
        radius = _f32(2) * ratio if aa else _f32(2)
        return Filter("cubic", _f32(2) * max(_f32(2), _f32(radius)))
    if kind == "lanczos3":
        radius = _f32(3) * ratio if aa else _f32(3)
        return Filter("lanczos3", _f32(2) * max(_f32(3), _f32(radius)))
    raise ValueError(f"resize: unknown interpolation {kind!r}")
