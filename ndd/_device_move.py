"""Moving handles between devices (``.gpu()``, ``.cpu()``, ``to_device``) and wrapping GPU data.

A move runs at once (in every mode): the handle's data is computed, then copied with one H2D
(or D2H) copy of the whole batch (``runtime/gpu/moves.py``). Without a GPU every path raises the
one error of ``runtime.device.require_gpu``.
"""
from __future__ import annotations

import numpy as np

from compiler.ir import Value
from compiler.types import CPU, Device
from ndd._arrays import check_layout, convert, device_value, leaf_value
from ndd._dtypes import to_numpy
from ndd._evaluate import materialize
from runtime.device import require_device, require_gpu
from runtime.gpu import interop, moves
from runtime.storage import DeviceSamples, is_device_storage


def _samples(handle) -> list:
    data = materialize(handle._value)
    index = getattr(handle, "_index", None)
    if index is None:
        return data
    one = [data[index]]
    if is_device_storage(data):
        return DeviceSamples(one, data.device, data.stream, data.ready)
    return one


def to_gpu(handle, device_id=None):
    """``handle`` (Tensor or Batch) copied to GPU ``device_id`` (0 by default).

    Raises
    ------
    RuntimeError
        Without a CUDA device, or for an ordinal that does not exist.
    """
    index = 0 if device_id is None else int(device_id)
    require_device(f"{type(handle).__name__}.gpu()", index)
    data = _samples(handle)
    if is_device_storage(data):
        data = moves.to_host(data)          # another GPU: through the host
    moved = moves.to_device(data, index)
    meta = handle._value.meta.with_(device=Device("gpu", index), batch_size=len(moved))
    return handle._with_value(Value(meta, data=moved))


def to_cpu(handle):
    """``handle`` (on a GPU) copied to host memory (waits for the copy)."""
    require_gpu(f"{type(handle).__name__}.cpu()")
    data = moves.to_host(_samples(handle))
    meta = handle._value.meta.with_(device=CPU, batch_size=len(data))
    return handle._with_value(Value(meta, data=data))


def gpu_value(samples: DeviceSamples, want, target, layout, copy: bool, hint, what: str) -> Value:
    """The Value a constructor makes of GPU ``samples``: on ``target`` (None: their own GPU),
    converted to DType ``want`` (None: their own), with ``layout`` (None: ``hint``), copied when
    ``copy``. A conversion of type or device goes through the host (DALI's cast rules there).

    Raises
    ------
    TypeError
        Samples of different dtypes.
    ValueError
        Samples of different numbers of dimensions; a layout that does not fit.
    """
    if target is None:
        target = Device("gpu", samples.device)
    dtypes = {np.dtype(s.dtype) for s in samples}
    ndims = {s.ndim for s in samples}
    if len(dtypes) > 1:
        raise TypeError(f"{what}: samples have different dtypes {sorted(map(str, dtypes))}")
    if len(ndims) > 1:
        raise ValueError(f"{what}: samples have different numbers of dimensions {sorted(ndims)}")
    cast = want is not None and (want.is_enum or to_numpy(want) != dtypes.pop())
    if cast or target.kind == "cpu" or target.index != samples.device:
        host = moves.to_host(samples)
        pairs = [convert(h, want, None, what) for h in host]
        arrays = [a for a, _ in pairs]
        name = pairs[0][1]
        lay = check_layout(layout if layout is not None else hint, arrays[0].ndim, what)
        if target.kind == "cpu":
            return leaf_value(arrays, lay, arrays[0].ndim, name)
        moved = moves.to_device(arrays, target.index)
        return device_value(moved, lay, arrays[0].ndim, name)
    if copy:
        samples = moves.copy(samples)
    lay = check_layout(layout if layout is not None else hint, samples[0].ndim, what)
    return device_value(samples, lay)


def to_gpu_value(value: Value, index: int) -> Value:
    """A computed CPU Value copied to GPU ``index``."""
    moved = moves.to_device(value.data, index)
    return Value(value.meta.with_(device=Device("gpu", index)), data=moved)


def stacked_value(samples: DeviceSamples, pad: bool, layout: str, what: str) -> Value:
    """A GPU batch's samples stacked into one sample (``(N, *shape)``, zero-padded when
    ``pad``), as a one-sample GPU Value with layout ``layout``.

    Raises
    ------
    ValueError
        Ragged samples without ``pad`` (the CPU's words); an empty batch.
    """
    arr, stream, ready = moves.stack(samples, pad=pad, what=what)
    one = DeviceSamples([arr], samples.device, stream, ready)
    return device_value(one, layout or "")


def tensor_samples(tensor) -> DeviceSamples:
    """A GPU Tensor's one sample as a one-sample GPU batch."""
    return _samples(tensor)


def device_samples(arrays, what: str) -> DeviceSamples:
    """Foreign device arrays (cupy, torch CUDA, ``__cuda_array_interface__``) as one batch's
    storage, viewed without copies, ordered after their producers' streams.

    Raises
    ------
    RuntimeError
        Without a CUDA device.
    ValueError
        Arrays on different GPUs.
    """
    require_gpu(what)
    out, devs, ready = [], set(), None
    stream = None
    for a in arrays:
        arr, dev, stream, ready = interop.adopt(a)
        out.append(arr)
        devs.add(dev)
    if len(devs) > 1:
        raise ValueError(f"{what}: the samples are on different GPUs {sorted(devs)}")
    return DeviceSamples(out, devs.pop() if devs else 0, stream, ready)


def export(handle_samples, arr):
    """An :class:`runtime.gpu.interop.Export` of device array ``arr`` of a GPU batch (DLPack
    consumers are ordered after the batch's ready event)."""
    return interop.Export(arr, handle_samples.ready, handle_samples.device)
