"""``ndd.Batch``: a collection of samples (shapes may differ), lazily computed."""
from __future__ import annotations

import numpy as np

from compiler.ir import Value, ValueMeta
from ndd._device_move import to_cpu, to_gpu
from ndd._evaluate import materialize
from ndd._handle import Handle
from ndd._tensor import Tensor


class Batch(Handle):
    """A batch of samples with a common dtype, number of dimensions, layout and device.

    Create with :func:`ndd.batch` (copy) or :func:`ndd.as_batch` (wrap); ops return Batches when
    given Batches. There is no ``batch[i]``: use ``batch.tensors[i]`` to pick samples and
    ``batch.slice[...]`` to index inside every sample (DALI semantics). Operators and
    ``batch.slice[...]`` are attached by :mod:`ndd._handle_operators`.
    """

    __slots__ = ("_value", "__weakref__")
    # numpy defers to our reflected operators: ``np.float32(0.5) * batch`` is a Batch (as in
    # DALI), not a numpy array built by iterating over the samples
    __array_ufunc__ = None

    def __init__(self, value: Value):
        self._value = value
        value.set_holder(self)

    # ------------------------------------------------------------------ metadata
    @property
    def batch_size(self) -> int:
        """Number of samples."""
        return self._value.meta.batch_size

    def __len__(self) -> int:
        return self.batch_size

    @property
    def ndim(self) -> int:
        nd = self._value.meta.ndim
        if nd is None:
            data = self._samples()
            nd = data[0].ndim if data else 0
        return nd

    @property
    def shape(self) -> list[tuple[int, ...]]:
        """The shape of every sample, as a list of tuples (evaluates the batch)."""
        return [tuple(s.shape) for s in self._samples()]

    # ------------------------------------------------------------------ data
    def _samples(self) -> list:
        return materialize(self._value)

    def evaluate(self) -> "Batch":
        """Compute the batch now (errors of its ops surface here); returns self."""
        self._samples()
        return self

    @property
    def tensors(self) -> "TensorsView":
        """Sample selection: ``batch.tensors[i]`` -> Tensor, ``[a:b]`` / ``[list]`` -> Batch."""
        return TensorsView(self)

    @property
    def slice(self) -> "SliceView":
        """Per-sample indexing: ``batch.slice[0]``, ``batch.slice[:, 1:3]``, or with per-sample
        indices given as Batches (``batch.slice[start_batch:stop_batch]``)."""
        return SliceView(self)

    def __getitem__(self, index):
        raise TypeError(
            "ndd.Batch does not support indexing with []: it is ambiguous. Use "
            "batch.tensors[i] to select samples, or batch.slice[...] to index inside each sample.")

    def __iter__(self):
        for i in range(self.batch_size):
            yield Tensor(self._value, i)

    def cpu(self) -> "Batch":
        if self.device.kind == "cpu":
            return self
        return to_cpu(self)

    def gpu(self, device_id: int | None = None) -> "Batch":
        return to_gpu(self, device_id)

    def torch(self, copy: bool | None = None, pad: bool = False):
        """The batch as one ``torch.Tensor`` of shape (batch_size, *sample_shape).

        Parameters (in DALI's order: ``batch.torch(True)`` asks for a copy)
        ----------
        copy : bool | None
            None (default): avoid a copy when the samples already lie in one buffer.
        pad : bool
            Zero-pad samples of different shapes to the largest extent in every dimension.
            Without it, a ragged batch raises ValueError.
        """
        import torch
        arr = stack_samples(self._samples(), pad=pad, what="Batch.torch()",
                            allow_view=copy is not True)
        if arr.dtype == np.bool_ or arr.flags.writeable:
            return torch.from_numpy(arr)
        return torch.from_numpy(arr.copy())

    def __repr__(self) -> str:
        try:
            shapes = self.shape
            uniq = sorted(set(shapes))
            shape_txt = str(uniq[0]) if len(uniq) == 1 else f"{len(uniq)} shapes, e.g. {uniq[0]}"
        except Exception as exc:  # noqa: BLE001 - repr must not raise
            shape_txt = f"<error: {exc}>"
        lay = f", layout=\"{self.layout}\"" if self.layout else ""
        return (f"Batch(batch_size={self.batch_size}, dtype={self.dtype}, shape={shape_txt}"
                f"{lay}, device={self.device})")


def stack_samples(samples: list, pad: bool, what: str, allow_view: bool = True) -> np.ndarray:
    """Stack per-sample arrays into one array with a leading batch dimension.

    Returns the shared base array without copying when the samples are consecutive views of it.
    """
    if not samples:
        raise ValueError(f"{what}: the batch is empty")
    if allow_view:
        base = _common_base(samples)
        if base is not None:
            return base
    shapes = {s.shape for s in samples}
    if len(shapes) == 1:
        return np.stack(samples)
    ndims = {len(s) for s in shapes}
    if len(ndims) != 1:
        raise ValueError(f"{what}: samples have different numbers of dimensions {sorted(ndims)}")
    if not pad:
        some = sorted(shapes)[:3]
        raise ValueError(f"{what}: samples have different shapes (e.g. {some}); pass pad=True "
                         f"to zero-pad them to a common shape")
    full = tuple(max(s[d] for s in shapes) for d in range(ndims.pop()))
    out = np.zeros((len(samples),) + full, dtype=samples[0].dtype)
    for i, s in enumerate(samples):
        out[(i,) + tuple(slice(0, e) for e in s.shape)] = s
    return out


def _common_base(samples):
    """A view covering all samples when they lie back to back (same shape, dtype, C order) in
    one numpy buffer; else None. numpy collapses ``.base`` chains to the owning array, so the
    owner may have any shape: the view is rebuilt from the byte offset of the first sample."""
    first = samples[0]
    base = first.base
    if not isinstance(base, np.ndarray) or not base.flags.c_contiguous \
            or not first.flags.c_contiguous:
        return None
    step = first.nbytes
    start = first.__array_interface__["data"][0]
    for i, s in enumerate(samples):
        if s.base is not base or s.shape != first.shape or s.dtype != first.dtype \
                or not s.flags.c_contiguous or s.__array_interface__["data"][0] != start + i * step:
            return None
    base_start = base.__array_interface__["data"][0]
    if start < base_start or start + step * len(samples) > base_start + base.nbytes:
        return None
    view = np.ndarray((len(samples),) + first.shape, dtype=first.dtype, buffer=base,
                      offset=start - base_start)
    if view.flags.writeable and not all(s.flags.writeable for s in samples):
        view.flags.writeable = False
    return view


def leaf_batch(samples: list, meta: ValueMeta) -> Batch:
    """A computed Batch of ``samples`` with ``meta`` (its batch size set to theirs)."""
    return Batch(Value(meta.with_(batch_size=len(samples)), data=samples))


class TensorsView:
    """``batch.tensors``: selects samples (``[i]`` -> Tensor, ``[a:b]`` / ``[list]`` ->
    Batch)."""

    __slots__ = ("_batch",)

    def __init__(self, batch: Batch):
        self._batch = batch

    def __getitem__(self, index):
        b = self._batch
        n = b.batch_size
        if isinstance(index, (int, np.integer)) and not isinstance(index, bool):
            i = int(index)
            if not -n <= i < n:
                raise IndexError(f"sample index {i} is out of range for a batch of {n}")
            return Tensor(b._value, i % n)
        if isinstance(index, slice):
            idx = list(range(n))[index]
        elif isinstance(index, (list, tuple, np.ndarray)):
            idx = [int(i) for i in index]
            for i in idx:
                if not -n <= i < n:
                    raise IndexError(f"sample index {i} is out of range for a batch of {n}")
        else:
            raise TypeError(f"batch.tensors[...] takes an int, a slice or a list of ints, "
                            f"got {type(index).__name__}")
        samples = b._samples()
        return leaf_batch([samples[i] for i in idx], b._value.meta)

    def __len__(self):
        return self._batch.batch_size

    def __iter__(self):
        return iter(self._batch)


class SliceView:
    """``batch.slice``: per-sample indexing; its ``[...]`` is attached by
    :mod:`ndd._handle_operators`."""

    __slots__ = ("_batch",)

    def __init__(self, batch: Batch):
        self._batch = batch
