"""``ndd.ExternalSource``: batches from user code (a callable or an iterable), with the same
``next_epoch`` interface as the readers, including ``compile=True``.

Example::

    src = ndd.ExternalSource(lambda info: load_sample(info.idx_in_epoch), batch=False,
                             num_outputs=2, epoch_size=1000)
    for images, labels in src.next_epoch(batch_size=32, compile=True):
        ...
"""
from __future__ import annotations

import inspect
import weakref
from dataclasses import dataclass

from ndd._batch import Batch
from ndd._construct import as_batch, as_tensor, batch
from ndd._epoch_rules import start_epoch
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


class ExternalSource:
    """A source of data written in Python.

    Parameters
    ----------
    source : callable | iterable
        * iterable: iterated once per epoch (give a re-iterable object such as a list; an
          iterator is exhausted after its first epoch);
        * callable: called with a :class:`SampleInfo` (``batch=False``) or :class:`BatchInfo`
          (``batch=True``) until it raises ``StopIteration`` (or, per sample, until
          ``epoch_size`` samples were produced).
        Each item is one output (array-like / Tensor / Batch) or a tuple of ``num_outputs``.
    num_outputs : int, optional
        Number of outputs per item (default 1: items are not tuples).
    batch : bool, default True
        Items are whole batches (lists of samples or arrays with a leading sample dimension);
        with ``False`` they are samples, grouped by ``next_epoch(batch_size=N)``.
    layout : str | tuple of str, optional
        Layout of each output's samples.
    dtype : ndd.DType | tuple, optional
        Convert each output to this type.
    epoch_size : int, optional
        Samples per epoch for a per-sample callable that never raises StopIteration.
    name : str, optional

    Raises
    ------
    TypeError / ValueError
        For a source that is neither callable nor iterable, items with the wrong number of
        outputs, or batches whose size differs from ``batch_size`` in compile mode.
    """

    def __init__(self, source, *, num_outputs: int | None = None, batch: bool = True,
                 layout=None, dtype=None, epoch_size: int | None = None,
                 name: str | None = None):
        if not callable(source) and not hasattr(source, "__iter__"):
            raise TypeError(f"ExternalSource: source must be callable or iterable, got "
                            f"{type(source).__name__}")
        if num_outputs is not None and (not isinstance(num_outputs, int) or num_outputs < 1):
            raise ValueError(f"ExternalSource: num_outputs must be a positive int, got "
                             f"{num_outputs!r}")
        if epoch_size is not None and (not isinstance(epoch_size, int) or epoch_size < 1):
            raise ValueError(f"ExternalSource: epoch_size must be a positive int, got "
                             f"{epoch_size!r}")
        self.source = source
        self.num_outputs = num_outputs
        self.batch = bool(batch)
        self.layout = layout
        self.dtype = dtype
        self.epoch_size = epoch_size
        self.name = name
        self.enable_checkpointing = False
        self._compiled = None
        self._epoch = 0
        self._batch_size = None
        self._active = False
        self._ahead = False     # compile mode: the source is called ahead of the body
        self._compiled_it = None    # weakref to the last compiled epoch's iterator
        #: compile mode's traced per-batch template (``ndd.compile``), set by the first compiled
        #: epoch and replayed by the later ones (False: that epoch made no replayable calls)
        self.compile_template = None

    # ------------------------------------------------------------------ items
    def _items(self):
        """Raw items of one epoch."""
        src = self.source
        if callable(src):
            k = 0
            while self.epoch_size is None or k < self.epoch_size:
                info = (BatchInfo(k, self._epoch) if self.batch else
                        SampleInfo(k, k % (self._batch_size or 1), k // (self._batch_size or 1),
                                   self._epoch))
                try:
                    item = src(info)
                except StopIteration:
                    return
                yield item
                k += 1
            return
        yield from iter(src)

    def _split(self, item):
        n = self.num_outputs
        if n is None:
            return (item,)
        if not isinstance(item, (tuple, list)) or len(item) != n:
            raise ValueError(f"ExternalSource{self._label()}: expected a tuple of {n} outputs "
                             f"per item, got {type(item).__name__}"
                             + (f" of {len(item)}" if isinstance(item, (tuple, list)) else ""))
        return tuple(item)

    def _per_output(self, value, k):
        if isinstance(value, (tuple, list)) and not isinstance(value, str):
            return value[k]
        return value

    def _to_batch(self, data, k) -> Batch:
        # compile mode calls the source ahead of the loop body (on the prefetch thread): a
        # source that refills one buffer would overwrite batches not yet used, so they are
        # copied there (the body's view of its batch then never changes)
        make = batch if self._ahead else as_batch
        return make(data, dtype=self._per_output(self.dtype, k),
                    layout=self._per_output(self.layout, k))

    def _label(self):
        return f" {self.name!r}" if self.name else ""

    # ------------------------------------------------------------------ epochs
    def _batches(self, batch_size):
        if self.batch:
            for item in self._items():
                outs = tuple(self._to_batch(x, k) for k, x in enumerate(self._split(item)))
                sizes = {b.batch_size for b in outs}
                if len(sizes) != 1:
                    raise ValueError(f"ExternalSource{self._label()}: outputs of one item have "
                                     f"different batch sizes {sorted(sizes)}")
                if batch_size is not None and sizes.pop() > batch_size:
                    raise ValueError(f"ExternalSource{self._label()}: the source gave a batch "
                                     f"of {outs[0].batch_size} samples, more than "
                                     f"batch_size={batch_size}")
                yield outs if self.num_outputs is not None else outs[0]
            return
        pending: list[tuple] = []
        for item in self._items():
            pending.append(self._split(item))
            if len(pending) == batch_size:
                yield self._group(pending)
                pending = []
        if pending:
            yield self._group(pending)

    def _group(self, samples):
        outs = tuple(self._to_batch([s[k] for s in samples], k) for k in range(len(samples[0])))
        return outs if self.num_outputs is not None else outs[0]

    def _samples(self):
        if self.batch:
            raise ValueError(f"ExternalSource{self._label()}: a batch source needs "
                             f"next_epoch(batch_size=...)")
        for item in self._items():
            outs = tuple(as_tensor(x, dtype=self._per_output(self.dtype, k),
                                   layout=self._per_output(self.layout, k))
                         for k, x in enumerate(self._split(item)))
            yield outs if self.num_outputs is not None else outs[0]

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

        Raises
        ------
        RuntimeError
            If the previous epoch is still being iterated, or compiled and non-compiled
            iteration are mixed.
        ValueError
            ``compile=True`` without ``batch_size``; a bad ``batch_size``; a batch size other
            than the first epoch's (as DALI).
        """
        what = f"ExternalSource{self._label()}"
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
            self._batch_size = batch_size
        compiled = start_epoch(self, batch_size, compile, capture, what)
        self._ahead = bool(compiled)
        if batch_size is None:
            return self._run(self._samples())
        gen = self._run(self._batches(batch_size))
        if compiled:
            tuples = ((b if isinstance(b, tuple) else (b,)) for b in gen)
            single = self.num_outputs is None
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


__all__ = ["ExternalSource", "SampleInfo", "BatchInfo"]
