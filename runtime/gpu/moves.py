"""Host <-> device moves of whole batches, the GPU ``transfer`` kernel, GPU batch stacking.

A batch goes to the device as **one** block: the samples are packed back to back (256-byte
aligned between shapes that differ) into one pinned staging buffer and sent with one async H2D
copy; the device samples are views of that block. The way back is one D2H copy per sample into
one pinned buffer, then the host waits for the copy's event and copies out into a fresh numpy
array whose per-sample views lie back to back (so ``Batch.torch()`` needs no further copy).
"""
from __future__ import annotations

import numpy as np

from runtime.gpu import state as gpu_state
from runtime.gpu.memory import round_up
from runtime.kernels.registry import register
from runtime.storage import DeviceSamples, SampleList, is_device_storage

__all__ = ["to_device", "to_host", "stack", "copy", "joined", "transfer", "wait"]


def _layout(samples) -> tuple[list[int], int]:
    """Byte offsets of the samples packed in one block, and its size: back to back when all
    samples have one shape (so the batch is one array), else each 256-byte aligned."""
    shapes = {s.shape for s in samples}
    offsets, pos = [], 0
    for s in samples:
        offsets.append(pos)
        pos += s.nbytes if len(shapes) == 1 else round_up(s.nbytes)
    return offsets, pos


def to_device(samples, device: int = 0, stream=None) -> DeviceSamples:
    """A CPU batch (list of numpy arrays) on GPU ``device``, queued on ``stream`` (default: lane
    0's stream of that device); the result's ``ready`` event follows the copy."""
    st = gpu_state.current()
    api = st.api
    stream = stream if stream is not None else st.lane_stream(device, 0)
    samples = [np.require(s, requirements="C") for s in samples]
    info = getattr(samples, "source_info", None)
    if not samples:
        return DeviceSamples([], device, None, None, info)
    offsets, total = _layout(samples)
    blk = st.pool.block(total, stream, device)
    host, slot = st.staging.take(total)
    for s, off in zip(samples, offsets):
        host[off:off + s.nbytes] = s.reshape(-1).view(np.uint8)
    whole = api.array(blk.mem, 0, (total,), np.uint8)
    api.copy_h2d(whole, host, stream)
    ev = api.record_event(stream)
    st.staging.sent(slot, ev)
    out = [api.array(blk.mem, off, s.shape, s.dtype) for s, off in zip(samples, offsets)]
    st.pool.note_use([whole], stream, ev)
    return DeviceSamples(out, device, stream, ev, info)


def to_host(samples) -> list:
    """A GPU batch (:class:`DeviceSamples`) as numpy arrays (blocks until they are copied)."""
    st = gpu_state.current()
    api = st.api
    if not samples:
        return SampleList([], getattr(samples, "source_info", None))
    stream = samples.stream if samples.stream is not None else st.lane_stream(samples.device, 0)
    offsets, total = _layout(samples)
    host, slot = st.staging.take(total)
    for s, off in zip(samples, offsets):
        api.copy_d2h(host[off:off + s.nbytes].view(s.dtype).reshape(s.shape), s, stream)
    ev = api.record_event(stream)
    st.staging.sent(slot, ev)
    st.pool.note_use(list(samples), stream, ev)
    api.sync_event(ev)
    api.host_access(host)
    base = np.empty(max(total, 1), np.uint8)
    base[:total] = host
    out = [base[off:off + s.nbytes].view(s.dtype).reshape(s.shape)
           for s, off in zip(samples, offsets)]
    return SampleList(out, getattr(samples, "source_info", None))


def stack(samples, pad: bool = False, what: str = "Batch.torch()"):
    """One device array ``(N, *shape)`` of a GPU batch, and the stream and event it is ready
    after: a view when the samples lie back to back in one block (as :func:`to_device` and
    whole-batch kernels leave them), else a copy on the batch's stream.

    Raises
    ------
    ValueError
        An empty batch; samples of different shapes without ``pad``.
    """
    st = gpu_state.current()
    api = st.api
    if not samples:
        raise ValueError(f"{what}: the batch is empty")
    first = samples[0]
    mem, step = api.memory_of(first), first.nbytes
    shapes = {s.shape for s in samples}
    if len(shapes) == 1 and mem is not None and all(
            api.memory_of(s) is mem and s.dtype == first.dtype
            and api.offset_of(s) == api.offset_of(first) + i * step
            for i, s in enumerate(samples)):
        arr = api.array(mem, api.offset_of(first), (len(samples),) + first.shape, first.dtype)
        return arr, samples.stream, samples.ready
    if len(shapes) != 1:
        if not pad:
            some = sorted(shapes)[:3]
            raise ValueError(f"{what}: samples have different shapes (e.g. {some}); pass "
                             f"pad=True to zero-pad them to a common shape")
        host = to_host(samples)
        full = tuple(max(s[d] for s in shapes) for d in range(first.ndim))
        padded = np.zeros((len(host),) + full, first.dtype)
        for i, s in enumerate(host):
            padded[(i,) + tuple(slice(0, e) for e in s.shape)] = s
        moved = to_device([padded], samples.device)
        return moved[0], moved.stream, moved.ready
    stream = samples.stream if samples.stream is not None else st.lane_stream(samples.device, 0)
    out = st.pool.empty((len(samples),) + first.shape, first.dtype, stream, samples.device)
    for i, s in enumerate(samples):
        api.copy_d2d(out[i], s, stream)
    ev = api.record_event(stream)
    st.pool.note_use([out, *samples], stream, ev)
    return out, stream, ev


@register("transfer", "gpu")
def transfer(ctx, inputs, args):
    """``transfer`` (the ``place`` pass's copy) when a GPU is involved: host -> device with one
    H2D copy on the lane's stream, device -> host, or device -> device through the host when
    the devices differ."""
    data = inputs[0]
    target = args["device"]
    if not target.startswith("gpu"):
        return [to_host(data)]
    index = int(target.partition(":")[2] or 0)
    if is_device_storage(data):
        if data.device == index:
            return [data]
        data = to_host(data)
    samples = [np.require(s, requirements="C") for s in data]
    if not samples:
        return [DeviceSamples([], index, source_info=getattr(data, "source_info", None))]
    offsets, total = _layout(samples)
    whole = ctx.upload_packed(samples, offsets, total)     # one H2D copy (captured / replayed)
    api, mem, base = ctx.gpu, ctx.gpu.memory_of(whole), ctx.gpu.offset_of(whole)
    out = [api.array(mem, base + off, s.shape, s.dtype) for s, off in zip(samples, offsets)]
    return [DeviceSamples(out, index, source_info=getattr(data, "source_info", None))]


def copy(samples) -> DeviceSamples:
    """A copy of a GPU batch in a new block (one device-to-device copy per sample, on the
    batch's stream)."""
    st = gpu_state.current()
    api = st.api
    if not samples:
        return DeviceSamples([], samples.device, None, None, samples.source_info)
    stream = samples.stream if samples.stream is not None else st.lane_stream(samples.device, 0)
    offsets, total = _layout(samples)
    blk = st.pool.block(total, stream, samples.device)
    out = [api.array(blk.mem, off, s.shape, s.dtype) for s, off in zip(samples, offsets)]
    for d, s in zip(out, samples):
        api.copy_d2d(d, s, stream)
    ev = api.record_event(stream)
    st.pool.note_use([*out, *samples], stream, ev)
    return DeviceSamples(out, samples.device, stream, ev, samples.source_info)


def joined(parts, device: int) -> DeviceSamples:
    """One GPU batch of samples taken from several batches (``parts``: ``(array, its
    DeviceSamples)`` pairs): ready once all their producers are (lane 0's stream waits on each
    distinct producer event and records one event after)."""
    st = gpu_state.current()
    api = st.api
    events = {}
    for _, src in parts:
        if src.ready is not None:
            events[id(src.ready)] = src
    if len(events) <= 1:
        src = next(iter(events.values()), None)
        return DeviceSamples([a for a, _ in parts], device, src.stream if src else None,
                             src.ready if src else None)
    stream = st.lane_stream(device, 0)
    for src in events.values():
        if src.stream is not stream:
            api.wait_event(stream, src.ready)
    return DeviceSamples([a for a, _ in parts], device, stream, api.record_event(stream))


def wait(samples) -> None:
    """Block the host until the GPU work that produced ``samples`` has finished (their
    ``ready`` event: the producer's stream up to that point, and what it waited on). Host
    storage and empty batches have nothing to wait for. ``EvalMode.sync_full`` after each call
    and ``evaluate()`` end here."""
    if is_device_storage(samples) and samples.ready is not None:
        gpu_state.current().api.sync_event(samples.ready)


def stream_handle(stream) -> int:
    """The raw handle of a runtime stream (``__cuda_array_interface__``'s ``stream``)."""
    return gpu_state.current().api.stream_handle(stream)


def copied(samples, arr) -> bool:
    """Whether ``arr`` (from :func:`stack`) is a copy rather than a view of ``samples``."""
    api = gpu_state.current().api
    return api.memory_of(arr) is not api.memory_of(samples[0])
