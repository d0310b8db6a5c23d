"""Per-sample random generators from a node's seeds (every device draws on the host).

A random op draws one seed per sample when it is called (``args["_seeds"]``, from the user's
``RNG``); sample ``i`` then draws from ``numpy.random.default_rng(seeds[i])`` (PCG64 seeded
through ``SeedSequence``).  Building that generator costs ~13 us, mostly Python-level work
inside numpy, all of it holding the GIL; :func:`sample_rng` gives a generator in exactly the
same state for less: the ``SeedSequence`` hash of a whole batch of seeds is computed at once in
numpy (:func:`pcg64_states`, cached per seed tuple), and a per-thread ``Generator`` gets its
state set.  The streams are identical (the tests compare them with ``default_rng``).
"""
from __future__ import annotations

import functools
import threading

import numpy as np

__all__ = ["sample_rng", "pcg64_states", "first_doubles", "sample_doubles", "SampleDoubles",
           "seed_states"]

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


def _words(seeds: tuple) -> np.ndarray:
    """The seeds as ``(4, n)`` little-endian uint32 words, zero padded (each < 2**128)."""
    try:
        wide = np.array(seeds, np.uint64)   # the usual case, all < 2**64: one conversion
    except (OverflowError, TypeError, ValueError):
        return np.array([[(s >> (32 * j)) & _M32 for s in seeds] for j in range(_POOL)],
                        np.uint32)
    words = np.zeros((_POOL, len(seeds)), np.uint32)
    words[0] = wide & np.uint64(_M32)
    words[1] = wide >> _U32
    return words


# mix_entropy's rounds: (source row, destination rows, their 3 hash steps' constants)
_ROUNDS = [(src, np.array(_OTHERS[src], np.intp), _HASH_A[0][k:k + _POOL - 1],
            _HASH_A[1][k:k + _POOL - 1])
           for src, k in zip(range(_POOL), range(_POOL, _POOL * _POOL, _POOL - 1))]
_CYCLE_IDX = np.array(_CYCLE, np.intp)


def pcg64_states(seeds: tuple) -> list[tuple[int, int]]:
    """``(state, inc)`` of ``PCG64(seed)`` for each seed (each ``0 <= seed < 2**128``).

    The ``SeedSequence`` hash runs vectorised over the seeds (uint32 rows, one column per
    seed; in place where it can, ~45 small numpy calls); the 128-bit seeding arithmetic on
    Python ints.
    """
    pool = _hashmix(_words(seeds), _HASH_A, 0, _POOL)
    for src, dst, xs, ms in _ROUNDS:            # pool[src] is left unchanged by its round
        y = pool[src] ^ xs                      # hashmix of the source, once per destination
        y *= ms
        y ^= y >> _U16
        y *= _MIX_R32
        r = pool[dst]                           # mix(destination, y)
        r *= _MIX_L32
        r -= y
        r ^= r >> _U16
        pool[dst] = r
    out = _hashmix(pool[_CYCLE_IDX], _HASH_B, 0, 2 * _POOL).astype(np.uint64)
    w = (out[0::2] | (out[1::2] << _U32)).tolist()      # 4 uint64 words per seed
    states = []
    for s_hi, s_lo, i_hi, i_lo in zip(*w):
        inc = (((i_hi << 64) | i_lo) << 1 | 1) & _M128
        st = ((inc + ((s_hi << 64) | s_lo)) * _PCG_MULT + inc) & _M128  # step, add, step
        states.append((st, inc))
    return states


@functools.lru_cache(maxsize=64)
def _cached_states(seeds: tuple) -> list:
    return pcg64_states(seeds)


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


def first_doubles(seeds: tuple) -> list[float]:
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


# ------------------------------------------------------------------ doubles by index
_M64 = (1 << 64) - 1
_TO_DOUBLE = 1.0 / 9007199254740992.0
# (A_k, C_k): k PCG64 steps take a state s to (A_k * s + C_k * inc) mod 2**128
_JUMPS = [(1, 0)]
_jumps_lock = threading.Lock()


def _jump(k: int) -> tuple[int, int]:
    if k >= len(_JUMPS):
        with _jumps_lock:
            while len(_JUMPS) <= k:
                a, c = _JUMPS[-1]
                _JUMPS.append(((a * _PCG_MULT) & _M128, (c * _PCG_MULT + 1) & _M128))
    return _JUMPS[k]


_jump(64)


class SampleDoubles:
    """The numbers ``numpy.random.default_rng(seed).random()`` draws, by index: ``u[j]`` is
    the ``j``-th (from 0) of ``default_rng(seed).random(n)``, for any ``n > j``.

    PCG64 on Python ints (a step, then the XSL-RR output, scaled as numpy's ``next_double``;
    :func:`first_doubles` is its first number), computed when read: the next index by one
    step, any other by a jump from the seeded state.  Cheaper than setting a ``Generator``'s
    state when a few numbers of the stream are needed (a random window reads 4-6).  Not
    shared between threads (each read moves its position).
    """

    __slots__ = ("_s0", "_inc", "_st", "_k")

    def __init__(self, state: int, inc: int):
        self._s0 = self._st = state     # _st: the state after _k steps
        self._inc = inc
        self._k = 0

    def __getitem__(self, j: int) -> float:
        if j == self._k:
            st = (self._st * _PCG_MULT + self._inc) & _M128
        else:
            a, c = _jump(j + 1)
            st = (a * self._s0 + c * self._inc) & _M128
        self._st, self._k = st, j + 1
        x = ((st >> 64) ^ st) & _M64
        rot = st >> 122
        return ((((x >> rot) | (x << (64 - rot))) & _M64) >> 11) * _TO_DOUBLE


def sample_doubles(seeds, i: int) -> SampleDoubles | None:
    """The :class:`SampleDoubles` of ``default_rng(seeds[i])``, or None where
    :func:`sample_rng` would not take its fast path either (``seeds`` not a tuple, or the
    seed not an int in ``[0, 2**128)``)."""
    seed = seeds[i]
    if seeds.__class__ is not tuple or seed.__class__ is not int or not 0 <= seed < 1 << 128:
        return None
    state, inc = _cached_states(seeds)[i]
    return SampleDoubles(state, inc)


def seed_states(seeds) -> list | None:
    """``(state, inc)`` of each seed of ``seeds`` (``SampleDoubles(*states[i])`` is
    :func:`sample_doubles` ``(seeds, i)``), or None unless every seed takes that fast path."""
    if seeds.__class__ is not tuple or any(s.__class__ is not int or not 0 <= s < 1 << 128
                                           for s in seeds):
        return None
    return _cached_states(seeds)
