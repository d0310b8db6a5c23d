"""``ndd.Tensor``: one sample, lazily computed, with numpy/torch/DLPack interop."""
from __future__ import annotations

import math
import operator

import numpy as np

from compiler.ir import Value
from ndd._arrays import check_layout, convert, enum_sample, leaf_value, stack_samples, \
    target_device, to_array
from ndd._device_move import device_samples, export, gpu_value, tensor_samples, to_gpu_value
from ndd._dtypes import dtype as to_dtype
from ndd._evaluate import materialize
from ndd._handle import Handle
from runtime.gpu import moves
from runtime.gpu.interop import is_device_array
from runtime.storage import DeviceSamples


class Tensor(Handle):
    """A single sample (one array with a layout) on a device (DALI 2.4's ``ndd.Tensor``).

    ``Tensor(data, dtype=None, device=None, layout=None, batch=None, index_in_batch=None,
    copy=False)`` wraps ``data`` without copying when it can (as :func:`ndd.as_tensor`;
    ``copy=True``: as :func:`ndd.tensor`), or names sample ``index_in_batch`` of ``batch``.
    Ops return Tensors when given Tensors; ``batch.tensors[i]`` picks one sample. Data is
    computed on first consumption (``np.asarray``, ``.torch()``, ``.shape``...). Indexing
    (``t[1:3, 0]``) and operators are attached by :mod:`ndd._handle_operators`.

    Parameters
    ----------
    data : array-like | ndd.Tensor | ndd.Batch, optional
        numpy array, torch tensor (CPU), object with ``__array__`` / ``__array_interface__``,
        Python number or (nested) list (float -> float32, int -> int32), another Tensor
        (shared, still lazy when no conversion is asked for), or a Batch (stacked along a new
        leading dimension; layout ``"N"`` + its layout).
    dtype : ndd.DType | str | numpy / torch dtype, optional
        Convert to this type (DALI's cast: float -> int rounds half away from zero and
        saturates).
    device : ndd.Device | str, optional
        ``"cpu"`` (default) or ``"gpu[:N]"``.
    layout : str, optional
        One letter per dimension (``"HWC"``); replaces the data's own layout.
    batch : ndd.Batch, optional
        With ``index_in_batch``: that sample of ``batch`` (shares its data; lazy).
    copy : bool
        Copy the data even when it could be wrapped.

    Raises
    ------
    ValueError
        Neither ``data`` nor ``batch`` given; ``batch`` not a Batch; a layout that is not a
        string or does not match the number of dimensions; ragged nested lists.
    TypeError
        Data that is not numeric or cannot be converted.
    IndexError
        ``index_in_batch`` out of range.
    RuntimeError
        ``device="gpu"`` without a CUDA device.

    Internally, ``Tensor(value, index)`` with a ``compiler.ir.Value`` names sample ``index`` of
    that value (what ops and readers return).
    """

    __slots__ = ("_value", "_index", "__weakref__")

    def __init__(self, data=None, dtype=None, device=None, layout=None, batch=None,
                 index_in_batch=None, copy: bool = False):
        if isinstance(data, Value):
            self._bind(data, 0 if dtype is None else int(dtype))
            return
        what = "ndd.Tensor"
        if batch is not None:
            if not isinstance(batch, Handle) or isinstance(batch, Tensor):
                raise ValueError(f"{what}: The `batch` argument must be a `Batch`, got "
                                 f"{type(batch).__name__}")
            n = batch.batch_size
            i = 0 if index_in_batch is None else operator.index(index_in_batch)
            if not -n <= i < n:
                raise IndexError(f"{what}: index_in_batch {i} is out of range for a batch of "
                                 f"{n}")
            if data is None:
                data = Tensor(batch._value, i % n)
        if data is None:
            raise ValueError(f"{what}: Either data, expression or batch and index must be "
                             f"provided")
        value, index = tensor_value(data, dtype, device, layout, copy, what)
        self._bind(value, index)

    def _bind(self, value: Value, index: int) -> None:
        self._value = value
        self._index = index
        if index == 0 and value.meta.batch_size == 1 and not value.is_live:
            value.set_holder(self)

    def _with_value(self, value: Value) -> "Tensor":
        return Tensor(value, 0)

    # ------------------------------------------------------------------ metadata
    @property
    def ndim(self) -> int:
        nd = self._value.meta.ndim
        return nd if nd is not None else self._array().ndim

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the sample (evaluates it)."""
        return tuple(self._array().shape)

    @property
    def size(self) -> int:
        """Number of elements (the product of ``shape``; evaluates the tensor)."""
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of the data (``size * itemsize``; evaluates the tensor)."""
        return self.size * self.itemsize

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TypeError("len() of a 0-d ndd.Tensor")
        return shape[0]

    # ------------------------------------------------------------------ data
    def _array(self):
        x = materialize(self._value)[self._index]
        # a kernel's 0-d result may be a numpy scalar (e.g. ``x < p``): numpy's
        # ``__array__`` protocol and the callers want an ndarray
        return np.asarray(x) if isinstance(x, np.generic) else x

    def _host_array(self) -> np.ndarray:
        """The sample as a numpy array (a GPU sample copied to the host, in stream order)."""
        if self.device.kind == "cpu":
            return self._array()
        return np.asarray(moves.to_host(tensor_samples(self))[0])

    def evaluate(self) -> "Tensor":
        """Compute the tensor now (errors of its ops surface here); returns self. A GPU tensor
        is computed when its GPU work has finished (the host waits for its ready event)."""
        self._array()
        moves.wait(self._value.data)
        return self

    def _copy(self) -> "Tensor":
        return Tensor(self, copy=True)

    def __array__(self, dtype=None, copy=None):
        """numpy's array protocol: the tensor's own array (``copy=None`` / ``False``), a copy
        (``copy=True``), or converted to ``dtype``.

        Raises
        ------
        TypeError
            For a GPU tensor (DALI: "This is not a CPU tensor").
        ValueError
            ``copy=False`` with a ``dtype`` that needs a conversion (numpy's rule).
        """
        if self.device.kind != "cpu":
            raise TypeError("This is not a CPU tensor. Use `.cpu()` to get the array interface.")
        arr = self._array()
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            if copy is False:
                raise ValueError(f"ndd.Tensor: converting {arr.dtype} to {np.dtype(dtype)} "
                                 f"needs a copy, but copy=False")
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def torch(self, copy: bool = False):
        """A ``torch.Tensor`` sharing memory with this tensor (``copy=False``, default)."""
        import torch
        arr = self._array()
        if self.device.kind != "cpu":
            # ordered after the producing stream: torch passes its current stream to
            # ``__dlpack__``, which waits on the sample's ready event
            t = torch.from_dlpack(export(tensor_samples(self), arr))
        else:
            if not arr.flags.writeable:
                arr = arr.copy() if not copy else arr
                copy = False
            t = torch.from_numpy(np.ascontiguousarray(arr) if not arr.flags.c_contiguous
                                 and not arr.flags.f_contiguous else arr)
        return t.clone() if copy else t

    @property
    def __cuda_array_interface__(self):
        """Only GPU tensors have it (so ``hasattr`` tells a CPU tensor apart, as in DALI)."""
        if self.device.kind == "cpu":
            raise AttributeError("This is not a GPU tensor. Use `.gpu()` to get the CUDA array "
                                 "interface.")
        samples = tensor_samples(self)
        cai = dict(samples[0].__cuda_array_interface__)
        if samples.stream is not None:      # CAI v3: consumers synchronise with this stream
            cai["stream"] = moves.stream_handle(samples.stream) or None
        return cai

    def __dlpack__(self, stream=None, **kwargs):
        if self.device.kind == "cpu":
            return self.torch().__dlpack__(**({} if not kwargs else kwargs))
        samples = tensor_samples(self)
        return export(samples, samples[0]).__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self):
        if self.device.kind == "cpu":
            return (1, 0)
        return (2, self.device.index)

    def item(self):
        """The value of a single-element tensor as a Python scalar.

        Raises
        ------
        ValueError
            When the tensor does not have exactly one element (DALI's words).
        """
        arr = self._host_array()
        if arr.size != 1:
            raise ValueError(f"Tensor has {arr.size} elements, expected 1")
        return arr.item()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if not self.dtype.is_integer:
            raise TypeError(f"only integer tensors can be used as an index, not {self.dtype}")
        return int(self.item())

    def __bool__(self):
        arr = self._host_array()
        if arr.size != 1:
            raise ValueError("the truth value of an ndd.Tensor with more than one element is "
                             "ambiguous")
        return bool(arr.item())

    def __iter__(self):
        n = len(self)
        for i in range(n):
            yield self[i]

    def __repr__(self) -> str:
        try:
            body = np.array2string(self._host_array(), threshold=20, edgeitems=2,
                                   prefix="    ")
        except Exception as exc:  # noqa: BLE001 - repr must not raise
            body = f"<error: {exc}>"
        lay = f", layout=\"{self.layout}\"" if self.layout else ""
        return f"Tensor(\n    {body},\n    dtype={self.dtype}{lay}, device={self.device})"


def tensor_value(data, dtype, device, layout, copy: bool, what: str) -> tuple[Value, int]:
    """The (Value, sample index) a Tensor constructed from ``data`` names (see :class:`Tensor`).

    A Tensor given without any conversion is shared (its Value, still lazy); anything else is
    converted to one numpy array (a Tensor or Batch is computed first).
    """
    dev = None if device is None else target_device(device, what)
    want = None if dtype is None else to_dtype(dtype)
    enum_type = None
    if isinstance(data, Handle):
        if isinstance(data, Tensor):
            same = ((want is None or want == data.dtype) and (dev is None or dev == data.device)
                    and (layout is None or (layout or None) == data.layout))
            if same and not copy:
                return data._value, data._index
            if data.device.kind == "gpu":
                return gpu_value(tensor_samples(data), want, dev, layout, copy, data.layout,
                                 what), 0
            arr = to_array(np.asarray(data), copy, what)
            hint = data.layout
        elif data.device.kind == "gpu":     # a GPU Batch: its samples stacked on the GPU
            arr, stream, ready = moves.stack(materialize(data._value), what=f"{what}(batch)")
            one = DeviceSamples([arr], data.device.index, stream, ready)
            hint = ("N" + data.layout) if data.layout else None
            return gpu_value(one, want, dev, layout, copy, hint, what), 0
        else:                             # a Batch: its samples stacked
            arr = stack_samples(materialize(data._value), pad=False, what=f"{what}(batch)")
            if copy:
                arr = np.array(arr, copy=True)
            hint = ("N" + data.layout) if data.layout else None
        enum_type = data.dtype if data.dtype.is_enum else None
    elif is_device_array(data):           # cupy, torch CUDA, __cuda_array_interface__: a view
        return gpu_value(device_samples([data], what), want, dev, layout, copy, None, what), 0
    else:
        enum = enum_sample(data)
        arr, enum_type = enum if enum is not None else (to_array(data, copy, what), None)
        hint = None
    arr, name = convert(arr, want, enum_type, what)
    lay = check_layout(layout if layout is not None else hint, arr.ndim, what)
    value = leaf_value([arr], lay, dtype_name=name)
    if dev is not None and dev.kind == "gpu":
        return to_gpu_value(value, dev.index), 0
    return value, 0
