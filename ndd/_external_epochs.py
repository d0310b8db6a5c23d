"""ndd's epochs of an ``ndd.ExternalSource``: ``next_epoch(batch_size=N, compile=...)`` with
the readers' rules (``ndd._epoch_rules``), per-batch and per-sample sources, and callables told
a :class:`SampleInfo` / :class:`BatchInfo` (DALI's pipeline-mode ``external_source`` fields).
"""
from __future__ import annotations

import inspect
import weakref
from dataclasses import dataclass

from ndd._batch import Batch
from ndd._construct import as_batch, as_tensor, batch
from ndd._epoch_rules import start_epoch
from ndd._external_capture import Role
from ndd.compile import compiled_epoch


@dataclass(frozen=True)
class SampleInfo:
    """What a per-sample callable is told (DALI's ``SampleInfo`` fields)."""

    idx_in_epoch: int
    idx_in_batch: int
    iteration: int
    epoch_idx: int


@dataclass(frozen=True)
class BatchInfo:
    """What a per-batch callable is told (DALI's ``BatchInfo`` fields)."""

    iteration: int
    epoch_idx: int


class EpochsMixin:
    """``next_epoch`` for :class:`ndd.ExternalSource` (which provides the source, its
    conversions and the attributes used here)."""

    def _items(self):
        """Raw items of one epoch (one pass over an iterable; a callable until StopIteration
        or ``epoch_size`` items)."""
        src = self.source
        if self.kind != "callable":
            it = iter(src()) if self.kind == "generator" else iter(src)
            for k, item in enumerate(it):
                if self.epoch_size is not None and k >= self.epoch_size:
                    return
                yield item
            return
        k = 0
        while self.epoch_size is None or k < self.epoch_size:
            args = ()
            if self.takes_info:
                n = self._batch_size or 1
                args = ((BatchInfo(k, self._epoch) if self.batch else
                         SampleInfo(k, k % n, k // n, self._epoch)),)
            try:
                item = src(*args)
            except StopIteration:
                return
            yield item
            k += 1

    def _to_batch(self, data, k) -> Batch:
        # compile mode calls the source ahead of the loop body (on the prefetch thread): a
        # source that refills one buffer would overwrite batches not yet used, so they are
        # copied there (the body's view of its batch then never changes)
        make = batch if self._ahead else as_batch
        return make(data, dtype=self.dtypes[k], layout=self.layouts[k], device=self.device)

    def _batches(self, batch_size):
        if self.batch:
            for item in self._items():
                outs = tuple(self._to_batch(x, k) for k, x in enumerate(self.outputs_of(item)))
                sizes = {b.batch_size for b in outs}
                if len(sizes) != 1:
                    raise ValueError(f"{self.what()}: outputs of one item have different "
                                     f"batch sizes {sorted(sizes)}")
                if batch_size is not None and sizes.pop() > batch_size:
                    raise ValueError(f"{self.what()}: the source gave a batch of "
                                     f"{outs[0].batch_size} samples, more than "
                                     f"batch_size={batch_size}")
                yield self.shape(outs)
            return
        pending: list[tuple] = []
        for item in self._items():
            pending.append(self.outputs_of(item))
            if len(pending) == batch_size:
                yield self._group(pending)
                pending = []
        if pending:
            yield self._group(pending)

    def _group(self, samples):
        return self.shape(tuple(self._to_batch([s[k] for s in samples], k)
                                for k in range(self.num_outputs)))

    def _samples(self):
        if self.batch:
            raise ValueError(f"{self.what()}: a batch source needs next_epoch(batch_size=...)")
        for item in self._items():
            yield self.shape(tuple(
                as_tensor(x, dtype=self.dtypes[k], layout=self.layouts[k], device=self.device)
                for k, x in enumerate(self.outputs_of(item))))

    def _run(self, gen):
        self._active = True
        try:
            yield from gen
        finally:
            self._active = False
            self._epoch += 1

    def next_epoch(self, batch_size: int | None = None, *, compile: bool = False,
                   capture: bool | None = None, queue_depth: int | None = None):
        """Iterate over one epoch of the source (same rules as ``readers.File.next_epoch``).

        An epoch is one pass over an iterable (a generator function is called again for
        each epoch) or a callable's items until it raises StopIteration or ``epoch_size``
        items were produced; ``cycle`` does not apply.

        Raises
        ------
        RuntimeError
            If the previous epoch is still being iterated, or compiled and non-compiled
            iteration are mixed, or the instance is called or captured (DALI's API).
        ValueError
            ``compile=True`` without ``batch_size``; a bad ``batch_size``; a batch size other
            than the first epoch's (as DALI).
        """
        what = self.what()
        if self.role in (Role.FEEDER, Role.ROOT, Role.EAGER):
            raise RuntimeError(f"{what} is used through __call__ / .captured(); it cannot "
                               f"also be iterated with next_epoch")
        if self._active or self._compiled_epoch_open():
            raise RuntimeError(f"{what}: the previous epoch's iterator must be consumed (or "
                               f"closed) before next_epoch is called again")
        if batch_size is not None:
            if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
                raise ValueError(f"{what}: batch_size must be a positive integer, got "
                                 f"{batch_size!r}")
            if self._batch_size is not None and batch_size != self._batch_size:
                raise ValueError(f"{what}: the batch size cannot change (was "
                                   f"{self._batch_size}, got {batch_size})")
        compiled = start_epoch(self, batch_size, compile, capture, what)
        if batch_size is not None:
            self._batch_size = batch_size
        self.role = Role.EPOCHS
        self._ahead = bool(compiled)
        if batch_size is None:
            return self._run(self._samples())
        gen = self._run(self._batches(batch_size))
        if compiled:
            tuples = ((b if isinstance(b, tuple) else (b,)) for b in gen)
            single = self.num_outputs == 1
            inner = compiled_epoch(self, tuples, queue_depth)
            self._compiled_it = weakref.ref(inner)
            return _unwrap(inner) if single else inner
        return gen

    def _compiled_epoch_open(self) -> bool:
        """A compiled epoch whose body has not got every batch yet, and that was neither
        closed nor dropped (its prefetcher may have drawn the source to its end)."""
        it = self._compiled_it() if self._compiled_it is not None else None
        return it is not None and inspect.getgeneratorstate(it._gen) == inspect.GEN_SUSPENDED


def _unwrap(inner):
    """Yield the single output of each compiled item; closing this closes ``inner``."""
    try:
        for handles in inner:
            yield handles[0]
    finally:
        inner.close()


__all__ = ["BatchInfo", "EpochsMixin", "SampleInfo"]
