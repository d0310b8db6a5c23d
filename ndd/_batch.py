"""``ndd.Batch``: a collection of samples (shapes may differ), lazily computed."""
from __future__ import annotations

import operator

import numpy as np

from compiler.ir import Value, ValueMeta
from ndd._arrays import check_layout, common_base, convert, enum_sample, leaf_value, \
    stack_samples, target_device, to_array
from ndd._device_move import device_samples, export, gpu_value, tensor_samples, to_gpu_value
from ndd._dtypes import dtype as to_dtype
from ndd._evaluate import materialize
from ndd._handle import Handle
from ndd._tensor import Tensor
from runtime.gpu import moves
from runtime.gpu.interop import is_device_array
from runtime.storage import DeviceSamples, is_device_storage


class Batch(Handle):
    """A batch of samples with a common dtype, number of dimensions, layout and device (DALI
    2.4's ``ndd.Batch``); the samples' shapes may differ.

    ``Batch(tensors, dtype=None, device=None, layout=None, copy=False)`` views ``tensors``
    without copying when it can (as :func:`ndd.as_batch`; ``copy=True``: as :func:`ndd.batch`).
    Ops return Batches when given Batches. There is no ``batch[i]``: use ``batch.tensors[i]``
    or ``batch.select(i)`` to pick samples and ``batch.slice[...]`` to index inside every
    sample (DALI semantics). Operators and ``batch.slice[...]`` are attached by
    :mod:`ndd._handle_operators`.

    Parameters
    ----------
    tensors : list of array-likes / ndd.Tensors | ndd.Batch | array-like
        A list (or other iterable) of samples of one dtype and number of dimensions; a Batch
        (shared, still lazy, when no conversion is asked for); or one array-like whose
        leading dimension is the sample dimension.
    dtype : ndd.DType | str | numpy / torch dtype, optional
        Convert every sample to this type (DALI's cast rules). Required for an empty list.
    device : ndd.Device | str, optional
        ``"cpu"`` (default) or ``"gpu[:N]"``.
    layout : str, optional
        The layout of one sample (``"HWC"``; no ``"N"``).
    copy : bool
        Copy the data even when it could be viewed.

    Raises
    ------
    ValueError
        An empty list without ``dtype`` ("Element type must be specified if the list is
        empty"); a 0-d array; samples with different numbers of dimensions; a layout that does
        not fit them.
    TypeError
        Samples of different dtypes, ``None`` or Batch samples, unconvertible data.
    RuntimeError
        ``device="gpu"`` without a CUDA device.

    Internally, ``Batch(value)`` with a ``compiler.ir.Value`` wraps that value (what ops and
    readers return).
    """

    __slots__ = ("_value", "__weakref__")
    # numpy defers to our reflected operators: ``np.float32(0.5) * batch`` is a Batch (as in
    # DALI), not a numpy array built by iterating over the samples
    __array_ufunc__ = None

    def __init__(self, tensors=None, dtype=None, device=None, layout=None, copy: bool = False):
        if isinstance(tensors, Value):
            self._bind(tensors)
            return
        self._bind(batch_value(tensors, dtype, device, layout, copy, "ndd.Batch"))

    def _bind(self, value: Value) -> None:
        self._value = value
        value.set_holder(self)

    def _with_value(self, value: Value) -> "Batch":
        return Batch(value)

    @staticmethod
    def broadcast(sample, batch_size: int, device=None, dtype=None) -> "Batch":
        """A batch of ``batch_size`` copies of one ``sample`` (DALI's ``Batch.broadcast``).

        Parameters
        ----------
        sample : array-like | ndd.Tensor
            Anything :class:`ndd.Tensor` accepts, but not a Batch.
        batch_size : int
        device, dtype : optional
            Where to put the result and its type (default: the sample's).

        Returns
        -------
        Batch
            Equal to ``ndd.as_batch([ndd.tensor(sample, dtype=dtype, device=device)] *
            batch_size)``: a copy of ``sample``, which the samples share (read-only).

        Raises
        ------
        ValueError
            For a Batch ("Cannot broadcast a Batch") or a negative ``batch_size``.
        """
        if isinstance(sample, Batch):
            raise ValueError("Batch.broadcast: Cannot broadcast a Batch; give one sample")
        n = operator.index(batch_size)
        if n < 0:
            raise ValueError(f"Batch.broadcast: batch_size must be >= 0, got {n}")
        t = sample if isinstance(sample, Tensor) else Tensor(sample)
        t = Tensor(t, dtype=dtype)
        arr = np.array(np.asarray(t), copy=True)   # as documented by DALI: a copy of sample
        arr.flags.writeable = False       # one array for all samples: no sample may change it
        b = Batch(leaf_value([arr] * n, t.layout or "", t.ndim, t.dtype.ir_name))
        return b.to_device(device) if device is not None else b

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
        """Compute the batch now (errors of its ops surface here); returns self. A GPU batch is
        computed when its GPU work has finished (the host waits for its ready event)."""
        moves.wait(self._samples())
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

    def select(self, sample_range):
        """Samples of the batch: ``select(i)`` -> Tensor; ``select(slice)`` /
        ``select([i, j, ...])`` -> Batch; ``select(...)`` -> the batch itself (DALI's
        ``Batch.select``; ``batch.tensors[...]`` is the same selection)."""
        if sample_range is Ellipsis:
            return self
        return self.tensors[sample_range]

    def _copy(self) -> "Batch":
        return Batch(self, copy=True)

    def torch(self, copy: bool | None = None, pad: bool = False):
        """The batch as one ``torch.Tensor`` of shape (batch_size, *sample_shape).

        Parameters (in DALI's order: ``batch.torch(True)`` asks for a copy)
        ----------
        copy : bool | None
            None (default): avoid a copy when the samples already lie in one buffer; True:
            always copy; False: never copy (ValueError when the samples are not one buffer),
            unless ``pad`` asks for new data.
        pad : bool
            Zero-pad samples of different shapes to the largest extent in every dimension.
            Without it, a ragged batch raises ValueError.

        Raises
        ------
        ValueError
            A ragged batch without ``pad``; ``copy=False`` (without ``pad``) for samples that
            are not one buffer (DALI's "cannot be converted to a tensor without a copy").
        """
        import torch
        samples = self._samples()
        if is_device_storage(samples):
            return _gpu_torch(samples, copy, pad)
        if copy is False and not pad:
            whole = samples[0][np.newaxis] if len(samples) == 1 else common_base(samples)
            if whole is None:
                raise ValueError("Batch.torch(copy=False): This batch cannot be converted to a "
                                 "tensor without a copy (its samples are separate arrays)")
            return torch.from_numpy(whole)
        arr = stack_samples(samples, pad=pad, what="Batch.torch()", allow_view=copy is not True)
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


def leaf_batch(samples: list, meta: ValueMeta) -> Batch:
    """A computed Batch of ``samples`` with ``meta`` (its batch size set to theirs)."""
    return Batch(Value(meta.with_(batch_size=len(samples)), data=samples))


def _gpu_torch(samples: DeviceSamples, copy, pad: bool):
    """``Batch.torch()`` of a GPU batch: a CUDA tensor ordered after the producing stream (a
    view when the samples lie back to back in one block)."""
    import torch
    arr, stream, ready = moves.stack(samples, pad=pad)
    if copy is False and not pad and arr is not None and len(samples) > 1 and \
            moves.copied(samples, arr):
        raise ValueError("Batch.torch(copy=False): This batch cannot be converted to a tensor "
                         "without a copy (its samples are separate arrays)")
    t = torch.from_dlpack(export(DeviceSamples([arr], samples.device, stream, ready), arr))
    return t.clone() if copy else t


class TensorsView:
    """``batch.tensors``: selects samples (``[i]`` -> Tensor, ``[a:b]`` / ``[list]`` ->
    Batch); ``len``, iteration, ``select``, ``tolist`` and ``as_batch`` as DALI 2.4's."""

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
            if idx == list(range(n)):
                return b
        elif isinstance(index, (list, tuple, np.ndarray)):
            idx = [int(i) for i in index]
            for i in idx:
                if not -n <= i < n:
                    raise IndexError(f"sample index {i} is out of range for a batch of {n}")
        else:
            raise TypeError(f"batch.tensors[...] takes an int, a slice or a list of ints, "
                            f"got {type(index).__name__}")
        samples = b._samples()
        picked = [samples[i] for i in idx]
        if is_device_storage(samples):
            picked = DeviceSamples(picked, samples.device, samples.stream, samples.ready)
        return leaf_batch(picked, b._value.meta)

    def select(self, selection):
        """The same as ``batch.tensors[selection]``."""
        return self[selection]

    def tolist(self) -> list:
        """The samples as a list of Tensors (lazy: nothing is computed)."""
        return list(self)

    def as_batch(self, copy: bool = False) -> Batch:
        """The samples as a Batch (the batch itself; ``copy=True``: a copy of its data)."""
        return Batch(self._batch, copy=copy)

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


def batch_value(data, dtype, device, layout, copy: bool, what: str) -> Value:
    """The Value a Batch constructed from ``data`` wraps (see :class:`Batch`).

    A Batch given without any conversion is shared (its Value, still lazy); anything else is
    converted to a list of numpy arrays (Tensors and Batches are computed first).
    """
    dev = None if device is None else target_device(device, what)
    want = None if dtype is None else to_dtype(dtype)
    hint = None
    enum_types = None                      # per sample: the enum DType its data came as
    if isinstance(data, TensorsView):       # ``Batch(b.tensors)``: the batch itself
        data = data._batch
    if isinstance(data, Batch):
        same = ((want is None or want == data.dtype) and (dev is None or dev == data.device)
                and (layout is None or (layout or None) == data.layout))
        if same and not copy:
            return data._value
        if data.device.kind == "gpu":
            return gpu_value(data._samples(), want, dev, layout, copy, data.layout, what)
        samples = [np.array(s, copy=True) if copy else s for s in data._samples()]
        hint = data.layout
        enum_types = [data.dtype if data.dtype.is_enum else None] * len(samples)
    elif isinstance(data, Tensor) and data.device.kind == "gpu" or is_device_array(data):
        one = tensor_samples(data) if isinstance(data, Tensor) else device_samples([data], what)
        whole = one[0]
        if whole.ndim == 0:
            raise ValueError(f"{what}: Cannot create a batch from a scalar (a 0-d array has no "
                             f"sample dimension); pass a list")
        parts = DeviceSamples([whole[i] for i in range(whole.shape[0])], one.device, one.stream,
                              one.ready)
        hint = data.layout[1:] if isinstance(data, Tensor) and data.layout else None
        return gpu_value(parts, want, dev, layout, copy, hint, what)
    elif isinstance(data, (list, tuple)) and data and any(
            isinstance(d, Tensor) and d.device.kind == "gpu" or is_device_array(d) for d in data):
        return gpu_value(_gpu_items(data, what), want, dev, layout, copy,
                         next((d.layout for d in data if isinstance(d, Tensor) and d.layout),
                              None), what)
    elif isinstance(data, Tensor) or not isinstance(data, (list, tuple)) and (
            hasattr(data, "__array__") or hasattr(data, "__array_interface__")
            or hasattr(data, "__dlpack__")):
        arr = to_array(np.asarray(data) if isinstance(data, Tensor) else data, copy, what)
        if arr.ndim == 0:
            raise ValueError(f"{what}: Cannot create a batch from a scalar (a 0-d array has no "
                             f"sample dimension); pass a list")
        samples = list(arr)
        if isinstance(data, Tensor) and data.dtype.is_enum:
            enum_types = [data.dtype] * len(samples)
    else:
        items = list(data) if not isinstance(data, (list, tuple)) else data
        samples, enum_types = [], []
        for i, d in enumerate(items):
            if isinstance(d, Batch):
                raise TypeError(f"{what}: Unexpected element type Batch at index {i}: a list "
                                f"of Batch objects is not a valid argument type")
            if d is None:
                raise TypeError(f"{what}: Tensors must be array-like types or numbers. Got "
                                f"`None` at index {i}")
            enum = enum_sample(d)
            if enum is not None:
                samples.append(enum[0])
                enum_types.append(enum[1])
                continue
            enum_types.append(None)
            if isinstance(d, Tensor):
                hint = hint or d.layout
                if d.dtype.is_enum:
                    enum_types[-1] = d.dtype
                d = np.asarray(d)
            samples.append(to_array(d, copy, f"{what} (sample {i})"))
    if not samples:
        if want is None:
            raise ValueError(f"{what}: Element type must be specified if the list is empty "
                             f"(pass dtype=)")
        lay = check_layout(layout, len(layout or ""), what)
        return _on_device(leaf_value([], lay, len(lay), want.ir_name), dev)
    if enum_types is None:
        enum_types = [None] * len(samples)
    converted = [convert(s, want, e, what) for s, e in zip(samples, enum_types)]
    samples = [arr for arr, _ in converted]
    names = {name for _, name in converted}
    if len(names) != 1:
        raise TypeError(f"{what}: samples have different dtypes {sorted(names)}")
    ndims = {s.ndim for s in samples}
    if len(ndims) != 1:
        raise ValueError(f"{what}: samples have different numbers of dimensions {sorted(ndims)}")
    nd = ndims.pop()
    lay = check_layout(layout if layout is not None else hint, nd, what)
    return _on_device(leaf_value(samples, lay, nd, names.pop()), dev)


def _on_device(value: Value, dev) -> Value:
    if dev is not None and dev.kind == "gpu":
        if not value.data:
            return Value(value.meta.with_(device=dev), data=DeviceSamples([], dev.index))
        return to_gpu_value(value, dev.index)
    return value


def _gpu_items(items, what: str) -> DeviceSamples:
    """GPU samples given as a list (GPU Tensors, cupy arrays, torch CUDA tensors), one batch.

    Raises
    ------
    TypeError
        A host sample among them (samples of one device only).
    """
    parts, devs = [], set()
    for i, d in enumerate(items):
        if isinstance(d, Tensor) and d.device.kind == "gpu":
            src = tensor_samples(d)
        elif is_device_array(d):
            src = device_samples([d], f"{what} (sample {i})")
        else:
            raise TypeError(f"{what}: sample {i} is host data among GPU samples; give samples of "
                            f"one device")
        parts.append((src[0], src))
        devs.add(src.device)
    if len(devs) > 1:
        raise ValueError(f"{what}: the samples are on different GPUs {sorted(devs)}")
    return moves.joined(parts, devs.pop())
