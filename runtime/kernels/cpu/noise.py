"""CPU kernels of the noise ops: ``noise.gaussian``, ``noise.salt_and_pepper``, ``noise.shot``.

Sample ``i`` draws from ``numpy.random.default_rng(seeds[i])`` (:func:`sample_rng`), so the
values are reproducible from the user's RNG but differ from DALI's streams (docs/semantics.md).
What DALI 2.4 does deterministically is matched: integer results round half away from zero and
saturate (``cast``'s rules); gaussian noise is added in float32 (float64 for float64 inputs);
salt / pepper default to the type's maximum / minimum (1.0 / -1.0 for floats); shot noise is
``poisson(max(0, x / factor)) * factor``. Registers the three kernels.
"""
from __future__ import annotations

import numpy as np

from runtime.kernels.params.seeds import sample_rng
from runtime.kernels.registry import per_sample, register

from .cast import cast
from .jit import compiled
from .warp import fill_in_type

__all__ = ["gaussian", "salt_and_pepper", "shot", "salt_pepper_defaults"]


def _work_type(dtype):
    return np.float64 if np.dtype(dtype) == np.float64 else np.float32


def gaussian(x, rng, *, mean=0.0, stddev=1.0):
    """``x + N(mean, stddev)`` in ``x``'s type (see the module docstring).

    Raises
    ------
    ValueError
        A negative ``stddev``.
    """
    if stddev < 0:
        raise ValueError(f"argument 'stddev' must be non-negative, got {stddev}")
    x = np.asarray(x)
    wt = _work_type(x.dtype)
    noise = rng.standard_normal(size=x.shape, dtype=wt) * wt(stddev) + wt(mean)
    return cast(x.astype(wt) + noise, x.dtype)


def salt_pepper_defaults(dtype):
    """``(salt, pepper)`` defaults of a type: its max / min, or 1.0 / -1.0 for floats."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return 1.0, -1.0
    if dt.kind == "b":
        return 1.0, 0.0
    info = np.iinfo(dt)
    return float(info.max), float(info.min)


def _channel_axis(layout, ndim):
    if layout and "C" in layout:
        return layout.index("C")
    return ndim - 1 if ndim else None


def salt_and_pepper(x, rng, *, prob=0.05, salt_vs_pepper=0.5, salt_val=None, pepper_val=None,
                    per_channel=False, layout=""):
    """Replace random values of ``x`` with salt or pepper (see the module docstring).

    A value (or, without ``per_channel``, a whole pixel: all channels of the C axis, the last
    axis when ``layout`` is empty) is salt with probability ``prob * salt_vs_pepper`` and pepper
    with probability ``prob * (1 - salt_vs_pepper)``: one uniform draw ``u`` per value decides
    (``u < prob * salt_vs_pepper``: salt, else ``u < prob``: pepper).

    Raises
    ------
    ValueError
        ``prob`` or ``salt_vs_pepper`` outside [0, 1].
    """
    for name, p in (("prob", prob), ("salt_vs_pepper", salt_vs_pepper)):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"argument '{name}' must be in [0, 1], got {p}")
    x = np.asarray(x)
    d_salt, d_pepper = salt_pepper_defaults(x.dtype)
    salt = fill_in_type(d_salt if salt_val is None else salt_val, x.dtype)
    pepper = fill_in_type(d_pepper if pepper_val is None else pepper_val, x.dtype)
    shape = list(x.shape)
    axis = None if per_channel else _channel_axis(layout, x.ndim)
    if axis is not None and x.ndim > 1:
        shape[axis] = 1      # one draw per pixel, broadcast over the channels
    u = rng.random(size=tuple(shape))
    if x.ndim >= 1 and x.size and x.dtype.kind in "iufb" and x.dtype != np.float16:
        # one compiled pass: u broadcast over the drawn-once axis, the same comparisons
        lead = int(np.prod(x.shape[:axis])) if axis is not None and x.ndim > 1 else x.size
        per = x.shape[axis] if axis is not None and x.ndim > 1 else 1
        trail = int(np.prod(x.shape[axis + 1:])) if axis is not None and x.ndim > 1 else 1
        src = np.ascontiguousarray(x).reshape(lead, per, trail)
        uu = np.ascontiguousarray(u).reshape(lead, 1 if per > 1 else per, trail)
        out = np.empty_like(src)
        _salt_pepper_kernel()(src, uu, float(prob * salt_vs_pepper), float(prob),
                              src.dtype.type(salt), src.dtype.type(pepper), out)
        return out.reshape(x.shape)
    out = x.copy()
    is_salt = np.broadcast_to(u < prob * salt_vs_pepper, x.shape)
    is_pepper = np.broadcast_to((u < prob) & ~(u < prob * salt_vs_pepper), x.shape)
    out[is_salt] = salt
    out[is_pepper] = pepper
    return out


def _build_salt_pepper(njit):
    @njit
    def apply(src, u, p_salt, p_any, salt, pepper, out):
        lead, per, trail = src.shape
        shared = u.shape[1] == 1
        for i in range(lead):
            for j in range(per):
                for k in range(trail):
                    v = u[i, 0 if shared else j, k]
                    if v < p_salt:
                        out[i, j, k] = salt
                    elif v < p_any:
                        out[i, j, k] = pepper
                    else:
                        out[i, j, k] = src[i, j, k]
        return out
    return apply


_salt_pepper_kernel = compiled(_build_salt_pepper)


def shot(x, rng, *, factor=20.0):
    """``poisson(max(0, x / factor)) * factor`` in ``x``'s type; ``factor`` 0 returns a copy.

    Raises
    ------
    ValueError
        A negative ``factor``.
    """
    x = np.asarray(x)
    if factor == 0:
        return x.copy()
    if factor < 0:
        raise ValueError(f"argument 'factor' must be non-negative, got {factor}")
    lam = np.maximum(np.nan_to_num(x.astype(np.float64) / factor), 0.0)
    counts = rng.poisson(lam)
    wt = _work_type(x.dtype)
    return cast(counts.astype(wt) * wt(factor), x.dtype)


def _rng(a, i):
    return sample_rng(a["_seeds"], i)


@register("noise.gaussian", "cpu")
@per_sample
def gaussian_kernel(ctx, ins, a, i):
    """``noise.gaussian`` of sample ``i``."""
    return gaussian(ins[0], _rng(a, i), mean=a.get("mean", 0.0), stddev=a.get("stddev", 1.0))


@register("noise.salt_and_pepper", "cpu")
@per_sample
def salt_and_pepper_kernel(ctx, ins, a, i):
    """``noise.salt_and_pepper`` of sample ``i``."""
    return salt_and_pepper(ins[0], _rng(a, i), prob=a.get("prob", 0.05),
                           salt_vs_pepper=a.get("salt_vs_pepper", 0.5),
                           salt_val=a.get("salt_val"), pepper_val=a.get("pepper_val"),
                           per_channel=a.get("per_channel", False),
                           layout=ctx.in_metas[0].layout or "")


@register("noise.shot", "cpu")
@per_sample
def shot_kernel(ctx, ins, a, i):
    """``noise.shot`` of sample ``i``."""
    return shot(ins[0], _rng(a, i), factor=a.get("factor", 20.0))
