"""Caches of the kernels: a least-recently-used cache bounded by the bytes of its values, and
``functools.lru_cache`` for arguments that may be unhashable.

The resize kernels cache tap tables per (window length, output size, ...): random windows
(``random_resized_crop``) and per-image sizes (``resize_shorter``) make thousands of keys of
tens of KB each, so an entry-count bound either thrashes or lets memory grow epoch after
epoch as new keys keep arriving.  A byte budget keeps memory flat once it is reached.

Kernels memoise what they derive from a node's constant arguments (folded normalization,
validated window ranges, filter supports); an argument given as a list (unhashable) is still
valid and is computed without the cache (:func:`call_cached`).
"""
from __future__ import annotations

import collections
import functools
import threading

__all__ = ["ByteLRU", "byte_lru_cache", "call_cached"]


class ByteLRU:
    """Thread-safe least-recently-used map bounded by the bytes of its values.

    ``functools.lru_cache`` bounds the entry count; the tap tables of ``resize_shorter``
    differ per image size (tens of KB each), and a dataset with a thousand or so distinct
    sizes needs that many entries to hit from its second epoch without an unbounded count.
    """

    def __init__(self, budget: int):
        self.budget = budget
        self.used = 0
        self.hits = self.misses = 0
        self._data = collections.OrderedDict()     # key -> (value, nbytes)
        self._lock = threading.Lock()

    def get(self, key, default=None):
        """The value stored under ``key`` (now most recently used), or ``default``."""
        with self._lock:
            item = self._data.get(key)
            if item is None:
                self.misses += 1
                return default
            self._data.move_to_end(key)
            self.hits += 1
            return item[0]

    def put(self, key, value, nbytes: int):
        """Store ``value`` (``nbytes`` bytes), evicting the least recently used entries."""
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self.used -= old[1]
            self._data[key] = (value, nbytes)
            self.used += nbytes
            while self.used > self.budget and len(self._data) > 1:
                _, (_, n) = self._data.popitem(last=False)
                self.used -= n

    def clear(self):
        with self._lock:
            self._data.clear()
            self.used = self.hits = self.misses = 0


def byte_lru_cache(budget: int, nbytes_of):
    """Decorator: memoise a function of hashable arguments in a :class:`ByteLRU` of
    ``budget`` bytes, each result costing ``nbytes_of(result)`` bytes.  The wrapper has
    ``cache`` (the ByteLRU) and ``__wrapped__``."""
    def wrap(fn):
        cache = ByteLRU(budget)
        missing = object()

        @functools.wraps(fn)
        def cached(*args):
            value = cache.get(args, missing)
            if value is missing:
                value = fn(*args)
                cache.put(args, value, nbytes_of(value))
            return value
        cached.cache = cache
        return cached
    return wrap


def call_cached(cached, *args):
    """``cached(*args)`` for a ``functools.lru_cache``-wrapped function, or, when an argument
    is unhashable (e.g. a list), the function itself without the cache (same result)."""
    try:
        return cached(*args)
    except TypeError as exc:
        if "unhashable" not in str(exc):
            raise
    return cached.__wrapped__(*args)
