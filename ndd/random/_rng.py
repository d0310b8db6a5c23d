"""Random generators: ``ndd.random.RNG`` and the thread-local default.

Random ops draw one 63-bit seed per sample from the generator when they are *called* (in every
evaluation mode), so the same seed gives the same values eagerly, deferred or compiled.
"""
from __future__ import annotations

import contextlib
import copy
import threading

import numpy as np


class RNG:
    """A random-number generator (PCG64) whose state can be saved and restored.

    Parameters
    ----------
    seed : int, optional
        Non-negative seed; None draws one from the operating system.
    """

    def __init__(self, seed: int | None = None):
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))
                                 or seed < 0):
            raise ValueError(f"RNG: seed must be a non-negative integer, got {seed!r}")
        self._seed = seed
        self._gen = np.random.Generator(np.random.PCG64(seed))
        self._lock = threading.Lock()
        self._spec = None   # compile mode's early draws from this generator (ndd._speculation)

    @contextlib.contextmanager
    def _alone(self):
        """Hold ``_lock`` with no compile-mode speculation on this generator: any use but a
        compiled loop's prefetcher gives its early draws back first, so the generator is where
        eager execution would have it.  A speculation that attaches meanwhile is given back
        too (retry); one attaching while the lock is held records its first state only after
        this use, so a use is never undone by a later give-back."""
        while True:
            spec = self._spec
            if spec is not None:
                spec.foreign(self)
            self._lock.acquire()
            if self._spec is None:
                break
            self._lock.release()
        try:
            yield
        finally:
            self._lock.release()

    @property
    def seed(self):
        return self._seed

    def clone(self) -> "RNG":
        """An independent generator in the same state (draws the same numbers)."""
        other = RNG.__new__(RNG)
        other._seed = self._seed
        with self._alone():
            other._gen = copy.deepcopy(self._gen)
        other._lock = threading.Lock()
        other._spec = None
        return other

    def get_state(self) -> dict:
        """A JSON-serialisable snapshot of the state."""
        with self._alone():
            return self._state_dict()

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
        self._gen.bit_generator.state = {
            "bit_generator": state["bit_generator"], "state": dict(state["state"]),
            "has_uint32": state["has_uint32"], "uinteger": state["uinteger"]}

    def set_state(self, state: dict) -> None:
        """Restore a state from :meth:`get_state`.

        Raises
        ------
        ValueError
            When ``state`` is not an ndd RNG state.
        """
        if not isinstance(state, dict) or state.get("type") != "ndd.random.RNG":
            raise ValueError(f"RNG.set_state: not an ndd.random.RNG state: {state!r:.80}")
        with self._alone():
            self._set_state_dict(state)
            self._seed = state.get("seed")

    def draw(self, n: int) -> tuple[int, ...]:
        """n seeds for per-sample generators (advances the state)."""
        with self._alone():
            return self._seeds(n)

    def _draw_raw(self, n: int) -> tuple[int, ...]:
        """:meth:`draw` for the speculation itself (no give-back)."""
        with self._lock:
            return self._seeds(n)

    def _seeds(self, n: int) -> tuple[int, ...]:
        drawn = self._gen.integers(0, 2 ** 63 - 1, size=n, dtype=np.int64)
        return tuple(int(x) for x in drawn)

    def __call__(self) -> int:
        """One random 32-bit integer (DALI's RNG objects are callable)."""
        with self._alone():
            return int(self._gen.integers(0, 2 ** 32, dtype=np.uint64))

    def __repr__(self) -> str:
        return f"ndd.random.RNG(seed={self._seed})"


_local = threading.local()


def get_default_rng() -> RNG:
    """The thread-local default generator (seeded from the OS until ``set_seed``)."""
    r = getattr(_local, "rng", None)
    if r is None:
        r = _local.rng = RNG()
    return r


def set_seed(seed: int) -> None:
    """Reseed this thread's default generator."""
    _local.rng = RNG(seed)


def resolve_rng(rng) -> RNG:
    """The generator a random op draws from: ``rng`` or this thread's default."""
    if rng is None:
        return get_default_rng()
    if not isinstance(rng, RNG):
        raise TypeError(f"rng must be an ndd.random.RNG, got {type(rng).__name__}")
    return rng


def draw_seeds(rng, n: int) -> tuple[int, ...]:
    return resolve_rng(rng).draw(n)
