"""``ndd.tensor`` / ``as_tensor`` / ``batch`` / ``as_batch``: handles from user data; batches
of encoded files (readers, ``ndd.imread``)."""
from __future__ import annotations

import numpy as np

from compiler.ir import Value, ValueMeta
from compiler.types import CPU, parse_device
from ndd._batch import Batch, stack_samples
from ndd._dtypes import from_numpy, to_numpy
from ndd._tensor import Tensor
from runtime.device import require_gpu
from runtime.kernels.cpu.cast import cast
from runtime.storage import SampleList

#: The metadata of one encoded file: its bytes as a 1-D uint8 array.
ENCODED = ValueMeta(dtype="uint8", ndim=1, layout="")


def _check_layout(layout, ndim, what):
    if layout is None:
        return ""
    if not isinstance(layout, str):
        raise TypeError(f"{what}: layout must be a string such as 'HWC', got {layout!r}")
    if layout and len(layout) != ndim:
        raise ValueError(f"{what}: layout {layout!r} has {len(layout)} letters but the data has "
                         f"{ndim} dimensions")
    return layout


def _to_numpy(data, copy: bool, what: str):
    """Convert one array-like to numpy; returns (array, layout_hint)."""
    layout = None
    if isinstance(data, Tensor):
        arr = np.asarray(data)
        layout = data.layout
    elif isinstance(data, np.ndarray):
        arr = data
    elif type(data).__module__.startswith("torch"):
        if data.device.type != "cpu":
            raise NotImplementedError(f"{what}: GPU torch tensors need a GPU build of ndd; "
                                      f"move it with .cpu() first")
        arr = data.detach().numpy() if data.dtype.__repr__() != "torch.bfloat16" else None
        if arr is None:
            raise TypeError(f"{what}: bfloat16 torch tensors are not supported on the CPU yet")
    elif hasattr(data, "__array_interface__") or hasattr(data, "__array__"):
        arr = np.asarray(data)
    elif isinstance(data, (int, float, bool, list, tuple, np.generic)):
        try:
            arr = np.asarray(data)
        except ValueError:
            raise ValueError(f"{what}: the nested lists are ragged (sub-lists of different "
                             f"lengths); give a Batch of samples instead") from None
        if arr.dtype == np.float64 and not isinstance(data, np.float64):
            arr = arr.astype(np.float32)
        elif arr.dtype == np.int64 and not isinstance(data, np.int64):
            arr = arr.astype(np.int32)
        copy = False
    else:
        raise TypeError(f"{what}: cannot convert {type(data).__name__} to a tensor; expected a "
                        f"numpy array, torch tensor, ndd.Tensor, scalar or (nested) list")
    if arr.dtype == object:
        raise TypeError(f"{what}: the data is ragged or not numeric (numpy made an object array)")
    if copy:
        arr = np.array(arr, copy=True)
    return arr, layout


def _leaf(samples: list, dtype_name: str, ndim: int, layout: str, device=CPU) -> Value:
    meta = ValueMeta(dtype=dtype_name, ndim=ndim, layout=layout, device=device,
                     batch_size=len(samples))
    return Value(meta, data=samples)


def encoded_batch(encoded: list, files: list) -> Batch:
    """A Batch of encoded files (1-D uint8 samples) that knows each sample's file name (for
    decoders' error messages)."""
    return Batch(Value(ENCODED.with_(batch_size=len(encoded)), data=SampleList(encoded, files)))


def _apply_dtype(arr, dtype, what):
    if dtype is None:
        return arr
    target = to_numpy(dtype)
    if arr.dtype != target:
        arr = cast(arr, target.name if target != np.bool_ else "bool")
    return arr


def _device(device, what):
    if device is None:
        return CPU
    dev = parse_device(device)
    if dev.kind == "gpu":
        require_gpu(what)
    return dev


def tensor(data, dtype=None, device=None, layout=None, pad: bool = False) -> Tensor:
    """Create a Tensor holding a copy of ``data``.

    Parameters
    ----------
    data : array-like (numpy array, torch tensor, ndd.Tensor, scalar, nested list)
    dtype : ndd.DType | str | numpy/torch dtype, optional
        Convert to this type (float -> int rounds half away from zero and saturates, as DALI).
    device : "cpu" | "gpu" | "gpu:N", optional
    layout : str, optional
        One letter per dimension (e.g. ``"HWC"``).

    pad : bool
        For a Batch: zero-pad ragged samples to a common shape (else ValueError).

    A ``Batch`` is stacked into one tensor with a leading sample dimension (layout ``"N" +
    layout``), as in DALI.
    """
    if isinstance(data, Batch):
        return _batch_as_tensor(data, dtype, device, layout, pad, copy=True, what="ndd.tensor")
    return _make_tensor(data, dtype, device, layout, copy=True, what="ndd.tensor")


def as_tensor(data, dtype=None, device=None, layout=None, pad: bool = False) -> Tensor:
    """Wrap ``data`` as a Tensor without copying when possible.

    A ``Batch`` is stacked into one tensor with a leading sample dimension (layout ``"N" +
    layout``); ragged batches need ``pad=True`` (zero padding), else ValueError.
    """
    if isinstance(data, Batch):
        return _batch_as_tensor(data, dtype, device, layout, pad, copy=False,
                                what="ndd.as_tensor")
    if isinstance(data, Tensor) and dtype is None and layout is None and device is None:
        return data
    return _make_tensor(data, dtype, device, layout, copy=False, what="ndd.as_tensor")


def _batch_as_tensor(data, dtype, device, layout, pad, copy, what) -> Tensor:
    """A Batch stacked into one tensor with a leading sample dimension (layout "N" + the
    batch's, unless ``layout`` is given)."""
    arr = stack_samples(data._samples(), pad=pad, what=f"{what}(batch)")
    lay = ("N" + data.layout) if data.layout else ""
    return _make_tensor(arr, dtype, device, layout if layout is not None else lay,
                        copy=copy, what=what)


def _make_tensor(data, dtype, device, layout, copy, what) -> Tensor:
    dev = _device(device, what)
    arr, hint = _to_numpy(data, copy, what)
    arr = _apply_dtype(arr, dtype, what)
    lay = _check_layout(layout if layout is not None else hint, arr.ndim, what)
    value = _leaf([arr], from_numpy(arr.dtype), arr.ndim, lay)
    t = Tensor(value, 0)
    if dev.kind == "gpu":
        t = t.gpu(dev.index)
    return t


def batch(data, dtype=None, device=None, layout=None) -> Batch:
    """Create a Batch holding copies of the samples in ``data``.

    Parameters
    ----------
    data : list of array-likes | Batch | array-like with a leading sample dimension
    dtype, device, layout : as in :func:`tensor` (layout describes one sample)

    Raises
    ------
    ValueError / TypeError
        For samples of different dtypes or numbers of dimensions, or unconvertible data.
    """
    return _make_batch(data, dtype, device, layout, copy=True, what="ndd.batch")


def as_batch(data, dtype=None, device=None, layout=None) -> Batch:
    """Wrap ``data`` as a Batch without copying when possible (see :func:`batch`)."""
    if isinstance(data, Batch) and dtype is None and layout is None and device is None:
        return data
    return _make_batch(data, dtype, device, layout, copy=False, what="ndd.as_batch")


def _make_batch(data, dtype, device, layout, copy, what) -> Batch:
    dev = _device(device, what)
    hint = None
    if isinstance(data, Batch):
        samples = [np.array(s, copy=True) if copy else s for s in data._samples()]
        hint = data.layout
    elif isinstance(data, (list, tuple)):
        if len(data) == 0:
            raise ValueError(f"{what}: cannot make a batch of zero samples")
        samples = []
        for i, d in enumerate(data):
            arr, h = _to_numpy(d, copy, f"{what} (sample {i})")
            samples.append(arr)
            hint = hint or h
    else:
        arr, _ = _to_numpy(data, copy, what)
        if arr.ndim == 0:
            raise ValueError(f"{what}: a 0-d array has no sample dimension; pass a list")
        samples = list(arr)
    samples = [_apply_dtype(s, dtype, what) for s in samples]
    dtypes = {s.dtype for s in samples}
    if len(dtypes) != 1:
        raise TypeError(f"{what}: samples have different dtypes {sorted(map(str, dtypes))}")
    ndims = {s.ndim for s in samples}
    if len(ndims) != 1:
        raise ValueError(f"{what}: samples have different numbers of dimensions {sorted(ndims)}")
    nd = ndims.pop()
    lay = _check_layout(layout if layout is not None else hint, nd, what)
    b = Batch(_leaf(samples, from_numpy(dtypes.pop()), nd, lay))
    if dev.kind == "gpu":
        b = b.gpu(dev.index)
    return b
