"""Random generators: ``ndd.random.RNG`` and the thread-local default.

Random ops draw one 63-bit seed per sample from the generator when they are *called* (in every
evaluation mode), so the same seed gives the same values eagerly, deferred or compiled.
"""
from __future__ import annotations

import copy
import operator
import threading

import numpy as np

from ndd._state_strings import (check_rng_values, decode_rng_state, encode_rng_state,
                                rng_state_from_legacy, state_text)


class RNG:
    """A random-number generator (PCG64) whose state can be saved and restored.

    Parameters
    ----------
    seed : int, optional
        Non-negative seed; None draws one from the operating system.
    state : str, optional
        A state from :meth:`get_state` to start from (exclusive with ``seed``, as in DALI).

    Raises
    ------
    ValueError
        A bad seed, both ``seed`` and ``state``, or a state that is not an RNG's.
    """

    def __init__(self, seed: int | None = None, state=None):
        if seed is not None and state is not None:
            raise ValueError("Cannot specify both `seed` and `state`")
        self._seed = _check_seed(seed)
        self._gen = np.random.Generator(np.random.PCG64(seed))
        self._lock = threading.Lock()
        if state is not None:
            self.set_state(state)

    @property
    def seed(self):
        """The seed this generator was started from (None: from the operating system).

        Assigning reseeds the generator in place (DALI's ``rng.seed = value``): every holder of
        this object then draws the new sequence.
        """
        return self._seed

    @seed.setter
    def seed(self, value):
        value = _check_seed(value)
        with self._lock:
            self._gen = np.random.Generator(np.random.PCG64(value))
            self._seed = value

    @property
    def state(self) -> str:
        """:meth:`get_state`; assigning is :meth:`set_state` (DALI's ``state`` property)."""
        return self.get_state()

    @state.setter
    def state(self, value):
        self.set_state(value)

    def clone(self) -> "RNG":
        """An independent generator in the same state (draws the same numbers)."""
        other = RNG.__new__(RNG)
        other._seed = self._seed
        with self._lock:
            other._gen = copy.deepcopy(self._gen)
        other._lock = threading.Lock()
        return other

    def get_state(self, *, cuda_stream=None) -> str:
        """The generator's state as one string (see ``ndd.checkpoint``), e.g.
        ``'ndd.random.RNG/2;bit_generator=PCG64;state=...;crc=...'``.

        Parameters
        ----------
        cuda_stream : optional
            Accepted as DALI's ``get_state(cuda_stream=...)``; not used.

        Returns
        -------
        str
            Plain ASCII: it survives ``str()``, JSON, pickle and ``torch.save`` unchanged and
            :meth:`set_state` (or ``RNG(state=...)``) takes it back.
        """
        with self._lock:
            return encode_rng_state(self._state_dict())

    def _raw_state(self) -> dict:
        with self._lock:
            return self._state_dict()

    def _state_dict(self) -> dict:
        st = self._gen.bit_generator.state
        return {"type": "ndd.random.RNG", "bit_generator": st["bit_generator"],
                "state": {k: int(v) for k, v in st["state"].items()},
                "has_uint32": int(st["has_uint32"]), "uinteger": int(st["uinteger"]),
                "seed": self._seed}

    def _restore(self, state: dict) -> None:
        with self._lock:
            self._set_state_dict(state)

    def _set_state_dict(self, state: dict) -> None:
        self._gen.bit_generator.state = _bit_generator_state(state)

    def set_state(self, state) -> None:
        """Continue from a state of :meth:`get_state` (also as bytes, or the dict that earlier
        ndd versions returned).

        Raises
        ------
        TypeError
            ``state`` is not a str, bytes or dict.
        ValueError
            Not an ndd RNG state: another object's, DALI's, or a truncated/altered string.
        """
        text = state_text(state, "RNG.set_state")
        values = check_rng_values(decode_rng_state(text) if text is not None
                                  else rng_state_from_legacy(state))
        with self._lock:
            self._set_state_dict(values)
            self._seed = values["seed"]

    def draw(self, n: int) -> tuple[int, ...]:
        """n seeds for per-sample generators (advances the state)."""
        with self._lock:
            return self._seeds(n)

    def _draw_raw(self, n: int) -> tuple[int, ...]:
        """:meth:`draw` for the speculation itself (no give-back)."""
        with self._lock:
            return self._seeds(n)

    def _seeds(self, n: int) -> tuple[int, ...]:
        drawn = self._gen.integers(0, 2 ** 63 - 1, size=n, dtype=np.int64)
        return tuple(drawn.tolist())        # Python ints

    def __call__(self) -> int:
        """One random 32-bit integer (DALI's RNG objects are callable)."""
        with self._lock:
            return int(self._gen.integers(0, 2 ** 32, dtype=np.uint64))

    def advance(self, n) -> None:
        """Skip ``n`` draws: the same as ``n`` calls of ``self()`` (DALI's ``RNG.advance``),
        in constant time.

        Parameters
        ----------
        n : int
            Non-negative number of 32-bit draws to skip.

        Raises
        ------
        ValueError
            ``n`` is negative.
        TypeError
            ``n`` is not an integer.
        """
        n = operator.index(n)
        if n < 0:
            raise ValueError("Cannot advance by a negative number")
        if n == 0:
            return
        with self._lock:
            # self() is PCG64's next_uint32: the buffered upper half of the last 64-bit output
            # if there is one, else the lower half of a new output (buffering the upper one)
            bits = self._gen.bit_generator
            state = bits.state
            if state["has_uint32"]:
                state["has_uint32"] = 0
                bits.state = state
                n -= 1
            if n >= 2:
                # whole 64-bit outputs; the last one's upper half stays behind (unused) in
                # the state, as after calls, so the state strings are equal too
                bits.advance(n // 2 - 1)
                last = int(bits.random_raw())
                state = bits.state
                state["has_uint32"], state["uinteger"] = 0, last >> 32
                bits.state = state
            if n % 2:
                self._gen.integers(0, 2 ** 32, dtype=np.uint64)

    def __repr__(self) -> str:
        return f"ndd.random.RNG(seed={self._seed})"


def _check_seed(seed):
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))
                             or seed < 0):
        raise ValueError(f"RNG: seed must be a non-negative integer, got {seed!r}")
    return None if seed is None else int(seed)


def _bit_generator_state(values: dict) -> dict:
    """numpy's ``bit_generator.state`` dict of the flat ``values``."""
    return {"bit_generator": "PCG64", "state": dict(values["state"]),
            "has_uint32": values["has_uint32"], "uinteger": values["uinteger"]}


_local = threading.local()


def get_default_rng() -> RNG:
    """The thread-local default generator (seeded from the OS until ``set_seed``)."""
    r = getattr(_local, "rng", None)
    if r is None:
        r = _local.rng = RNG()
    return r


def set_seed(seed: int) -> None:
    """Reseed this thread's default generator in place (as DALI): handles obtained before
    from :func:`get_default_rng` draw the new sequence too, the same as ``RNG(seed)``'s."""
    get_default_rng().seed = seed


def resolve_rng(rng) -> RNG:
    """The generator a random op draws from: ``rng`` or this thread's default."""
    if rng is None:
        return get_default_rng()
    if not isinstance(rng, RNG):
        # DALI 2.4's words; TypeError as ndd always raised (DALI: ValueError)
        raise TypeError(f"rng must be an instance of ndd.random.RNG, but got "
                        f"{type(rng).__module__}.{type(rng).__qualname__}")
    return rng

