"""CPU kernels of the random ops: one numpy generator per sample, seeded by the node.

Sample ``i`` draws from ``numpy.random.default_rng(seeds[i])`` (PCG64 seeded through
``SeedSequence``).  Building that generator costs ~13 us, mostly Python-level work inside
numpy, all of it holding the GIL; :func:`sample_rng` gives a generator in exactly the same
state for less: the ``SeedSequence`` hash of a whole batch of seeds is computed at once in
numpy (:func:`_pcg64_states`, cached per seed tuple), and a per-thread ``Generator`` gets its
state set.  The streams are identical (the tests compare them with ``default_rng``).
"""
from __future__ import annotations

import functools
import threading

import numpy as np

from runtime.kernels.registry import per_sample, register

# ------------------------------------------------------------------ fast per-sample generators
# numpy's SeedSequence (the hash of M. E. O'Neill's randutils seed_seq_fe, pool of 4 words,
# 32-bit arithmetic) and PCG64's seeding (pcg_setseq_128_srandom_r), for seeds < 2**128.
_M32 = 0xFFFFFFFF
_M128 = (1 << 128) - 1
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645
_POOL = 4


def _hash_consts(init: int, mult: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(xor, multiplier)`` constants, ``(n, 1)`` uint32 each, of ``n`` successive hash steps
    (the multiplier evolves independently of the data, so the whole sequence is fixed)."""
    xs, ms, h = [], [], init
    for _ in range(n):
        nxt = (h * mult) & _M32
        xs.append(h)
        ms.append(nxt)
        h = nxt
    return np.array(xs, np.uint32)[:, None], np.array(ms, np.uint32)[:, None]


# mix_entropy makes 4 + 4 * 3 hashmix calls; generate_state(4, uint64) makes 8 steps
_HASH_A = _hash_consts(_INIT_A, _MULT_A, _POOL + _POOL * (_POOL - 1))
_HASH_B = _hash_consts(_INIT_B, _MULT_B, 2 * _POOL)
_U16, _U32 = np.uint32(16), np.uint64(32)
_MIX_L32, _MIX_R32 = np.uint32(_MIX_L), np.uint32(_MIX_R)
_OTHERS = [[d for d in range(_POOL) if d != s] for s in range(_POOL)]
_CYCLE = [j % _POOL for j in range(2 * _POOL)]


def _hashmix(v: np.ndarray, consts, lo: int, hi: int) -> np.ndarray:
    """The hash steps ``lo..hi-1`` applied to the rows of ``v`` (uint32, wrapping)."""
    v = v ^ consts[0][lo:hi]
    v *= consts[1][lo:hi]
    v ^= v >> _U16
    return v


def _pcg64_states(seeds: tuple) -> list[tuple[int, int]]:
    """``(state, inc)`` of ``PCG64(seed)`` for each seed (each ``0 <= seed < 2**128``).

    The ``SeedSequence`` hash runs vectorised over the seeds (uint32 rows, one column per
    seed); the 128-bit seeding arithmetic on Python ints.
    """
    words = np.array([[(s >> (32 * j)) & _M32 for s in seeds] for j in range(_POOL)],
                     np.uint32)                 # little-endian 32-bit words, zero padded
    pool = _hashmix(words, _HASH_A, 0, _POOL)
    k = _POOL
    for src in range(_POOL):                    # pool[src] is left unchanged by its round
        dst = _OTHERS[src]
        y = _hashmix(pool[src][None, :], _HASH_A, k, k + _POOL - 1)
        k += _POOL - 1
        r = pool[dst] * _MIX_L32
        r -= y * _MIX_R32
        r ^= r >> _U16
        pool[dst] = r
    out = _hashmix(pool[_CYCLE], _HASH_B, 0, 2 * _POOL).astype(np.uint64)
    w = (out[0::2] | (out[1::2] << _U32)).tolist()      # 4 uint64 words per seed
    states = []
    for s_hi, s_lo, i_hi, i_lo in zip(*w):
        inc = (((i_hi << 64) | i_lo) << 1 | 1) & _M128
        st = ((inc + ((s_hi << 64) | s_lo)) * _PCG_MULT + inc) & _M128  # step, add, step
        states.append((st, inc))
    return states


@functools.lru_cache(maxsize=64)
def _cached_states(seeds: tuple) -> list:
    return _pcg64_states(seeds)


_local = threading.local()


def sample_rng(seeds, i: int) -> np.random.Generator:
    """A generator in the state of ``numpy.random.default_rng(seeds[i])``.

    Parameters
    ----------
    seeds : tuple of int
        The node's per-sample seeds (``args["_seeds"]``), non-negative.
    i : int
        Sample index.

    Returns
    -------
    numpy.random.Generator
        The calling thread's reusable generator, reseeded: valid until the thread's next
        :func:`sample_rng` call (use it, then drop it).  Draws exactly what
        ``default_rng(seeds[i])`` would.
    """
    seed = seeds[i]
    if seeds.__class__ is not tuple or seed.__class__ is not int or not 0 <= seed < 1 << 128:
        return np.random.default_rng(seed)
    state, inc = _cached_states(seeds)[i]
    gen = getattr(_local, "gen", None)
    if gen is None:
        gen = _local.gen = np.random.Generator(np.random.PCG64(0))
    gen.bit_generator.state = {"bit_generator": "PCG64", "state": {"state": state, "inc": inc},
                               "has_uint32": 0, "uinteger": 0}
    return gen


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
    from runtime.kernels.cpu.cast import cast
    return cast(np.asarray(x), dtype or default)


def _gen(args, i):
    return sample_rng(args["_seeds"], i)


@register("random.uniform")
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


@register("random.normal")
@per_sample
def normal(ctx, ins, args, i):
    sd = args.get("stddev", 1.0)
    if sd < 0:
        raise ValueError(f"argument 'stddev' must be non-negative, got {sd}")
    x = _gen(args, i).normal(args.get("mean", 0.0), sd, size=_shape(args, ins))
    return _finish(x, args.get("dtype"), "float32")


def _first_doubles(seeds: tuple) -> list[float]:
    """``default_rng(seed).random()`` of each seed (all < 2**128): PCG64's first output
    (step, then XSL-RR of the 128-bit state), scaled as numpy's ``next_double``."""
    out = []
    for st, inc in _cached_states(seeds):
        st = (st * _PCG_MULT + inc) & _M128
        x = ((st >> 64) ^ st) & 0xFFFFFFFFFFFFFFFF
        rot = st >> 122
        x = ((x >> rot) | (x << (64 - rot))) & 0xFFFFFFFFFFFFFFFF
        out.append((x >> 11) * (1.0 / 9007199254740992.0))
    return out


def _coin_flip_sample(ctx, ins, args, i):
    p = args.get("probability", 0.5)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"argument 'probability' must be in [0, 1], got {p}")
    x = _gen(args, i).random(size=_shape(args, ins)) < p
    return _finish(x.astype(np.int32), args.get("dtype"), "int32")


_coin_flip_per_sample = per_sample(_coin_flip_sample)


@register("random.coin_flip")
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
        return [[np.array(int(u < p), np.int32) for u in _first_doubles(seeds)]]
    return [[_finish(np.array(int(u < p), np.int32), dtype, "int32")
             for u in _first_doubles(seeds)]]


@register("random.beta")
@per_sample
def beta(ctx, ins, args, i):
    a, b = args.get("alpha", 1.0), args.get("beta", 1.0)
    if a <= 0 or b <= 0:
        raise ValueError(f"arguments 'alpha' and 'beta' must be positive, got {a}, {b}")
    return _finish(_gen(args, i).beta(a, b, size=_shape(args, ins)), args.get("dtype"), "float32")


@register("random.choice")
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
