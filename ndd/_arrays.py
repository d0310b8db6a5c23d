"""User data -> numpy arrays for the handle constructors (``Tensor(...)``, ``Batch(...)``,
``ndd.tensor`` / ``as_tensor`` / ``batch`` / ``as_batch``).

Everything here is plain numpy: no handle class is imported (the constructors in
:mod:`ndd._tensor` and :mod:`ndd._batch` hand over what they already unwrapped).
"""
from __future__ import annotations

import numpy as np

from compiler.ir import Value, ValueMeta
from compiler.types import CPU, ENUM_DTYPES, Device, parse_device
from ndd._dtypes import from_dali, from_numpy, to_numpy
from ndd.types import DALIDataType, DALIImageType, DALIInterpType
from runtime.device import require_device, require_gpu
from runtime.kernels.cpu.cast import cast
from runtime.storage import DeviceSamples


def check_layout(layout, ndim: int, what: str) -> str:
    """``layout`` checked against ``ndim`` ("" for None).

    Raises
    ------
    ValueError
        When ``layout`` is not a string (DALI's type: "Layout must be a string") or its length
        differs from ``ndim``.
    """
    if layout is None:
        return ""
    if not isinstance(layout, str):
        raise ValueError(f"{what}: Layout must be a string such as 'HWC', got "
                         f"{type(layout).__name__} {layout!r}")
    if layout and len(layout) != ndim:
        raise ValueError(f"{what}: layout {layout!r} has {len(layout)} letters but the data has "
                         f"{ndim} dimensions")
    return layout


def to_array(data, copy: bool, what: str) -> np.ndarray:
    """One array-like (numpy array, torch tensor, DLPack / array-interface object, scalar or
    nested list) as a numpy array; a copy when ``copy``.

    Python data follows DALI's defaults: float -> float32, int -> int32, bool -> bool.

    Raises
    ------
    TypeError
        For data that is not numeric or cannot be converted.
    ValueError
        For ragged nested lists.
    RuntimeError
        For a GPU torch tensor without a CUDA device.
    TypeError
        For GPU data with one (the constructors take GPU data before calling this: here it
        would be a GPU sample mixed with host samples).
    """
    if isinstance(data, np.ndarray):
        arr = data
    elif type(data).__module__.startswith("torch"):
        if data.device.type != "cpu":
            require_gpu(f"{what} of a {data.device.type} torch tensor")
            raise TypeError(f"{what}: a {data.device.type} torch tensor among host data; give "
                            f"samples of one device")
        if str(data.dtype) == "torch.bfloat16":
            raise TypeError(f"{what}: bfloat16 torch tensors are not supported on the CPU yet")
        arr = data.detach().numpy()
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
    elif data is None:
        raise TypeError(f"{what}: got None; expected an array-like, a number or a (nested) list")
    else:
        raise TypeError(f"{what}: cannot convert {type(data).__name__} to a tensor; expected a "
                        f"numpy array, torch tensor, ndd.Tensor, scalar or (nested) list")
    if arr.dtype == object:
        raise TypeError(f"{what}: the data is ragged or not numeric (numpy made an object array)")
    if copy:
        arr = np.array(arr, copy=True)
    return arr


_ENUM_OF = {DALIInterpType: ENUM_DTYPES["InterpType"], DALIImageType: ENUM_DTYPES["ImageType"],
            DALIDataType: ENUM_DTYPES["DataType"]}


def enum_sample(data):
    """``(0-d int32 array, enum DType)`` for an enum member (``ndd.types.INTERP_CUBIC`` or DALI's
    own ``nvidia.dali.types.INTERP_CUBIC``, ``YCbCr``, ``INT32``...), else None.

    As in DALI 2.4, a tensor made of an enum value has the enum's type (``ndd.InterpType``,
    ``ndd.ImageType``, ``ndd.DataType``); ndd stores the value as int32.
    """
    ours = from_dali(data)
    member = data if ours is None else ours
    dt = _ENUM_OF.get(type(member))
    if dt is None:
        return None
    return np.asarray(int(member), dtype=np.int32), dt


def convert(arr: np.ndarray, want, enum_type, what: str) -> tuple[np.ndarray, str]:
    """``arr`` as the type ``want`` (None: its own, or ``enum_type`` when the data were enum
    values) -> ``(array, ir_name of its DType)``.

    Raises
    ------
    TypeError
        An enum type asked for non-integer data.
    """
    if want is None:
        return arr, (enum_type.ir_name if enum_type is not None else from_numpy(arr.dtype))
    if want.is_enum:
        if enum_type is None and arr.dtype.kind not in "iu":
            raise TypeError(f"{what}: dtype={want.name} needs integer enum values, got "
                            f"{arr.dtype} data")
        return arr.astype(np.int32, copy=False), want.ir_name
    arr = apply_dtype(arr, want)
    return arr, from_numpy(arr.dtype)


def apply_dtype(arr: np.ndarray, dtype) -> np.ndarray:
    """``arr`` converted to ``dtype`` (None: unchanged) with DALI's cast rules (float -> int
    rounds half away from zero and saturates)."""
    if dtype is None:
        return arr
    target = to_numpy(dtype)
    if arr.dtype != target:
        arr = cast(arr, target.name if target != np.bool_ else "bool")
    return arr


def target_device(device, what: str):
    """The ``Device`` a constructor's ``device=`` names (None: the CPU).

    Raises
    ------
    RuntimeError
        For a GPU when no CUDA device is available.
    """
    if device is None:
        return CPU
    dev = parse_device(device)
    if dev.kind == "gpu":
        require_device(what, dev.index)
    return dev


def leaf_value(samples: list, layout: str, ndim: int | None = None, dtype_name=None) -> Value:
    """A computed Value holding ``samples`` (CPU arrays of one dtype and ndim)."""
    if dtype_name is None:
        dtype_name = from_numpy(samples[0].dtype)
    if ndim is None:
        ndim = samples[0].ndim
    meta = ValueMeta(dtype=dtype_name, ndim=ndim, layout=layout, device=CPU,
                     batch_size=len(samples))
    return Value(meta, data=samples)


def device_value(samples: DeviceSamples, layout: str, ndim: int | None = None,
                 dtype_name=None) -> Value:
    """A computed Value holding GPU ``samples`` (device arrays of one dtype and ndim)."""
    if dtype_name is None:
        dtype_name = from_numpy(np.dtype(samples[0].dtype))
    if ndim is None:
        ndim = samples[0].ndim
    meta = ValueMeta(dtype=dtype_name, ndim=ndim, layout=layout,
                     device=Device("gpu", samples.device), batch_size=len(samples))
    return Value(meta, data=samples)


def stack_samples(samples: list, pad: bool, what: str, allow_view: bool = True) -> np.ndarray:
    """Stack per-sample arrays into one array with a leading batch dimension.

    Returns the shared base array without copying when the samples are consecutive views of it.

    Raises
    ------
    ValueError
        For an empty list, samples of different numbers of dimensions, or of different shapes
        without ``pad``.
    """
    if not samples:
        raise ValueError(f"{what}: the batch is empty")
    if allow_view:
        base = common_base(samples)
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


def common_base(samples):
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
