"""CPU kernels of the random ops: one numpy generator per sample, seeded by the node.

Sample ``i`` draws from a generator in the state of ``numpy.random.default_rng(seeds[i])``
(:func:`runtime.kernels.params.seeds.sample_rng`), ``seeds`` being the node's per-sample seeds
(``args["_seeds"]``) drawn from the user's RNG when the op was called.
"""
from __future__ import annotations

import numpy as np

from runtime.kernels.params.seeds import first_doubles, sample_rng
from runtime.kernels.registry import per_sample, register

from .cast import cast


def _shape(args, ins):
    if ins:
        return ins[0].shape
    shape = args.get("shape")
    if shape is None:
        return ()
    if isinstance(shape, (int, float)):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"argument 'shape' must not be negative, got {shape}")
    return shape


def _finish(x, dtype, default):
    return cast(np.asarray(x), dtype or default)


def _gen(args, i):
    return sample_rng(args["_seeds"], i)


@register("random.uniform", "cpu")
@per_sample
def uniform(ctx, ins, args, i):
    rng = _gen(args, i)
    shape = _shape(args, ins)
    values = args.get("values")
    if values is not None:
        vals = np.asarray(values, dtype=np.float64)
        if vals.size == 0:
            raise ValueError("argument 'values' must not be empty")
        return _finish(vals[rng.integers(0, vals.size, size=shape)], args.get("dtype"), "float32")
    lo, hi = args.get("range") or (-1.0, 1.0)
    if not lo < hi:
        raise ValueError(f"argument 'range' must be [min, max) with min < max, got ({lo}, {hi})")
    x = rng.uniform(lo, hi, size=shape).astype(np.float32)
    x = np.minimum(x, np.nextafter(np.float32(hi), np.float32(lo)))  # keep [lo, hi) in float32
    return _finish(x, args.get("dtype"), "float32")


@register("random.normal", "cpu")
@per_sample
def normal(ctx, ins, args, i):
    sd = args.get("stddev", 1.0)
    if sd < 0:
        raise ValueError(f"argument 'stddev' must be non-negative, got {sd}")
    x = _gen(args, i).normal(args.get("mean", 0.0), sd, size=_shape(args, ins))
    return _finish(x, args.get("dtype"), "float32")


def _coin_flip_sample(ctx, ins, args, i):
    p = args.get("probability", 0.5)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"argument 'probability' must be in [0, 1], got {p}")
    x = _gen(args, i).random(size=_shape(args, ins)) < p
    return _finish(x.astype(np.int32), args.get("dtype"), "int32")


_coin_flip_per_sample = per_sample(_coin_flip_sample)


@register("random.coin_flip", "cpu")
def coin_flip(ctx, inputs, args):
    """``random.coin_flip``: sample ``i`` is ``default_rng(seeds[i]).random(shape) < p`` as
    int32 (then ``dtype``).  Scalar samples with constant arguments are computed for the
    whole batch in the calling thread (no per-sample task, no generator objects); anything
    else runs per sample."""
    seeds = args.get("_seeds")
    shape = args.get("shape")
    scalar = shape is None or (isinstance(shape, (tuple, list)) and len(shape) == 0)
    if (inputs or ctx.tensor_arg_names or not scalar
            or seeds.__class__ is not tuple or len(seeds) != ctx.batch_size
            or not all(s.__class__ is int and 0 <= s < 1 << 128 for s in seeds)):
        return _coin_flip_per_sample(ctx, inputs, args)
    p = args.get("probability", 0.5)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"argument 'probability' must be in [0, 1], got {p}")
    dtype = args.get("dtype")
    if dtype is None:
        return [[np.array(int(u < p), np.int32) for u in first_doubles(seeds)]]
    return [[_finish(np.array(int(u < p), np.int32), dtype, "int32")
             for u in first_doubles(seeds)]]


@register("random.beta", "cpu")
@per_sample
def beta(ctx, ins, args, i):
    a, b = args.get("alpha", 1.0), args.get("beta", 1.0)
    if a <= 0 or b <= 0:
        raise ValueError(f"arguments 'alpha' and 'beta' must be positive, got {a}, {b}")
    return _finish(_gen(args, i).beta(a, b, size=_shape(args, ins)), args.get("dtype"), "float32")


@register("random.choice", "cpu")
@per_sample
def choice(ctx, ins, args, i):
    a = args["a"]
    if isinstance(a, (int, np.integer)) and not isinstance(a, bool):
        if a < 1:
            raise ValueError(f"argument 'a' must be a positive int or a list, got {a}")
        values = np.arange(a, dtype=np.int32)
    else:
        values = np.asarray(a)
        if values.ndim != 1 or values.size == 0:
            raise ValueError(f"argument 'a' must be a positive int or a non-empty list, got {a!r}")
    p = args.get("p")
    if p is not None:
        p = np.asarray(p, dtype=np.float64)
        if p.shape != values.shape:
            raise ValueError(f"argument 'p' has {p.size} probabilities for {values.size} values")
        if np.any(p < 0) or abs(p.sum() - 1.0) > 1e-6:
            raise ValueError(f"argument 'p' must be non-negative and sum to 1, got {p.tolist()}")
    idx = _gen(args, i).choice(values.size, size=_shape(args, ins), p=p)
    out = values[idx]
    dt = ctx.out_metas[0].dtype
    return out.astype(dt)
