"""``ndd.Tensor``: one sample, lazily computed, with numpy/torch/DLPack interop."""
from __future__ import annotations

import math

import numpy as np

from compiler.ir import Value
from ndd._device_move import to_cpu, to_gpu
from ndd._evaluate import materialize
from ndd._handle import Handle


class Tensor(Handle):
    """A single sample (one array with a layout) on a device.

    Create with :func:`ndd.tensor` (copy) or :func:`ndd.as_tensor` (wrap, no copy when possible),
    or obtain from ``batch.tensors[i]``. Data is computed on first consumption (``np.asarray``,
    ``.torch()``, ``.shape``...). Indexing (``t[1:3, 0]``) and operators are attached by
    :mod:`ndd._handle_operators`.
    """

    __slots__ = ("_value", "_index", "__weakref__")

    def __init__(self, value: Value, index: int = 0):
        self._value = value
        self._index = index
        if index == 0 and value.meta.batch_size == 1 and value.holder is None:
            value.set_holder(self)

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

    def evaluate(self) -> "Tensor":
        """Compute the tensor now (errors of its ops surface here); returns self."""
        self._array()
        return self

    def cpu(self) -> "Tensor":
        """This tensor in host memory (itself when already on the CPU)."""
        if self.device.kind == "cpu":
            return self
        return to_cpu(self)

    def gpu(self, device_id: int | None = None) -> "Tensor":
        """This tensor in GPU memory.

        Raises
        ------
        RuntimeError
            When no CUDA device is available.
        """
        return to_gpu(self, device_id)

    def __array__(self, dtype=None, copy=None):
        if self.device.kind != "cpu":
            raise TypeError("a GPU ndd.Tensor cannot be converted to numpy; call .cpu() first")
        arr = self._array()
        if dtype is not None:
            arr = arr.astype(dtype, copy=False)
        if copy:
            arr = arr.copy()
        return arr

    def torch(self, copy: bool = False):
        """A ``torch.Tensor`` sharing memory with this tensor (``copy=False``, default)."""
        import torch
        arr = self._array()
        if self.device.kind != "cpu":
            t = torch.from_dlpack(arr)
        else:
            if not arr.flags.writeable:
                arr = arr.copy() if not copy else arr
                copy = False
            t = torch.from_numpy(np.ascontiguousarray(arr) if not arr.flags.c_contiguous
                                 and not arr.flags.f_contiguous else arr)
        return t.clone() if copy else t

    def __dlpack__(self, stream=None, **kwargs):
        arr = self._array()
        if self.device.kind == "cpu":
            return self.torch().__dlpack__(**({} if not kwargs else kwargs))
        return arr.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        if self.device.kind == "cpu":
            return (1, 0)
        return (2, self.device.index)

    def item(self):
        """The value of a single-element tensor as a Python scalar."""
        return self._array().item()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if not self.dtype.is_integer:
            raise TypeError(f"only integer tensors can be used as an index, not {self.dtype}")
        return int(self.item())

    def __bool__(self):
        arr = self._array()
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
            body = np.array2string(np.asarray(self._array()), threshold=20, edgeitems=2,
                                   prefix="    ")
        except Exception as exc:  # noqa: BLE001 - repr must not raise
            body = f"<error: {exc}>"
        lay = f", layout=\"{self.layout}\"" if self.layout else ""
        return f"Tensor(\n    {body},\n    dtype={self.dtype}{lay}, device={self.device})"
