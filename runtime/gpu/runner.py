"""Running GPU nodes and plans on CUDA streams.

A plan's schedule lanes (``compiler/passes/schedule.py``, ``node.meta["lane"]``) become streams:
lane ``k`` on device ``d`` is ``GpuState.lane_stream(d, k)``; decoders (a decoding
``fused.image`` too) run on ``GpuState.decode_stream(d)``. The host enqueues the steps in plan
order on the calling thread (enqueueing is asynchronous; the streams give the device its
concurrency), CPU steps of the same plan run inline at their place. A cross-lane edge becomes an
event: every GPU output carries the event recorded after its kernel (``DeviceSamples.ready``), and
a consumer on another stream waits on it before its kernel is enqueued. Every device array a
kernel touched is noted with that event in the stream-ordered pool, so its block is not reused by
another stream before that stream has passed it.

A GPU kernel is ``fn(ctx, inputs, args) -> outputs`` as on the CPU, with a
:class:`GpuKernelContext`; it allocates only through ``ctx.empty``, uploads descriptors only
through ``ctx.upload`` and launches only through ``ctx.launch`` (on ``ctx.stream``), so the same
kernel runs eagerly, under CUDA-graph capture and under replay (:mod:`runtime.gpu.capture`).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from compiler.ir import Node
from compiler.passes.place import node_reads_on_host
from runtime.gpu import moves   # also registers the GPU ``transfer`` kernel
from runtime.gpu import state as gpu_state
from runtime.kernels.registry import KernelContext, lookup
from runtime.storage import DeviceSamples, is_device_storage
from runtime.threadpool import get_pool

__all__ = ["GpuKernelContext", "run_gpu_node", "run_gpu_plan", "is_gpu_node", "plan_uses_gpu",
           "load_gpu_kernels"]

#: the GPU kernel catalogue (written beside the CPU one); imported at the first GPU node
GPU_CATALOG = "runtime.kernels.gpu.catalog"
_loaded: dict = {}


def load_gpu_kernels() -> bool:
    """Import the GPU kernel catalogue once; False when it does not exist (yet)."""
    if "gpu" not in _loaded:
        try:
            importlib.import_module(GPU_CATALOG)
            _loaded["gpu"] = True
        except ModuleNotFoundError as exc:
            if exc.name not in (GPU_CATALOG, "runtime.kernels.gpu"):
                raise
            _loaded["gpu"] = False
    return _loaded["gpu"]


def is_gpu_node(node: Node) -> bool:
    """Whether ``node`` runs through the GPU runner: it is placed on a GPU, or it is a
    ``transfer`` reading a GPU value."""
    if node.device.kind == "gpu":
        return True
    return node.op == "transfer" and any(v.meta.device.kind == "gpu" for v in node.inputs)


def plan_uses_gpu(plan) -> bool:
    """Whether any step of ``plan`` runs on a GPU (decided once per plan)."""
    return any(is_gpu_node(s.node) for s in plan.steps)


@dataclass
class GpuKernelContext(KernelContext):
    """A :class:`~runtime.kernels.registry.KernelContext` for GPU kernels.

    Attributes
    ----------
    stream : the lane's stream; every launch and copy of the kernel goes there
    gpu : runtime.gpu.api.GpuApi, the device interface
    device : int, the GPU ordinal
    state : runtime.gpu.state.GpuState (pool, staging)
    tape : runtime.gpu.capture.Tape | None, set while a plan is captured or replayed
    touched : device arrays the kernel allocated (noted in the pool with the step's event)
    """

    stream: Any = None
    gpu: Any = None
    device: int = 0
    state: Any = None
    tape: Any = None
    touched: list = field(default_factory=list)

    def empty(self, shape, dtype):
        """An uninitialised device array (stream-ordered pool; reserved blocks under capture)."""
        arr = self.state.pool.empty(shape, dtype, self.stream, self.device)
        self.touched.append(arr)
        return arr

    def upload(self, host):
        """A device copy of host array ``host`` (through pinned staging, async on the stream).
        Under replay the graph does the copy: only the pinned buffer is refilled."""
        host = np.require(host, requirements="C")
        dst = self.empty(host.shape, host.dtype)
        if self.tape is not None:
            self.tape.upload(host, dst, self.stream)
        else:
            self.state.staging.upload(host, dst, self.stream)
        return dst

    def upload_packed(self, samples, offsets, total: int):
        """One uint8 device array of ``total`` bytes holding host ``samples`` at byte
        ``offsets``: written straight into the pinned buffer, sent with one H2D copy (a batch's
        transfer; no intermediate host copy)."""
        dst = self.empty((total,), np.uint8)

        def write(buf):
            for s, off in zip(samples, offsets):
                buf[off:off + s.nbytes] = s.reshape(-1).view(np.uint8)
        if self.tape is not None:
            self.tape.fill(write, total, dst, self.stream)
        else:
            self.state.staging.fill(write, total, dst, self.stream)
        return dst

    def copy(self, dst, src) -> None:
        """Device-to-device copy on the stream."""
        if self.tape is not None:
            self.tape.copy(dst, src, self.stream)
        else:
            self.gpu.copy_d2d(dst, src, self.stream)

    def launch(self, kernel, grid, block, args, shared_mem: int = 0, *, reads=(), writes=()):
        """Launch ``kernel`` on the lane's stream (checked against the capture under replay)."""
        if self.tape is not None:
            self.tape.launch(kernel, grid, block, args, self.stream, shared_mem, reads, writes)
        else:
            self.gpu.launch(kernel, grid, block, args, self.stream, shared_mem,
                            reads=reads, writes=writes)

    def samples(self, arrays) -> DeviceSamples:
        """Per-sample device arrays as this kernel's output storage."""
        return DeviceSamples(arrays, self.device, self.stream)


def _order_inputs(api, stream, data, tape) -> None:
    """Make ``stream`` wait for the event of a GPU input produced on another stream."""
    if is_device_storage(data) and data.ready is not None and data.stream is not stream:
        if tape is not None:
            tape.wait(stream, data.ready)
        else:
            api.wait_event(stream, data.ready)


def _device_arrays(data):
    return list(data) if is_device_storage(data) else []


def run_gpu_node(node: Node, wrap_error, stream=None, tape=None) -> None:
    """Enqueue one GPU node on ``stream`` (default: its lane's stream); sets its outputs' data
    (``DeviceSamples`` that know their ready event). ``wrap_error(node, exc)`` names the op and
    the user's call site in a kernel's error (``runtime.executor.wrap_error``)."""
    load_gpu_kernels()
    st = gpu_state.current()
    api = st.api
    dev = node.device.index if node.device.kind == "gpu" else node.inputs[0].meta.device.index
    on_host = node_reads_on_host(node)      # a decoder: encoded files in host memory
    if stream is None:
        # a decoder runs on the decode stream, overlapping the previous batch's kernels
        stream = (st.decode_stream(dev) if on_host and node.device.kind == "gpu"
                  else st.lane_stream(dev, node.meta.get("lane", 0)))
    kernel = lookup(node.op, "gpu")
    inputs = []
    moving = node.op != "transfer" and node.device.kind == "gpu" and not on_host
    for v in node.inputs:
        data = v.data
        if data is None:
            raise RuntimeError(f"internal error: input %{v.id} of {node.op} is not computed")
        if on_host and is_device_storage(data):
            data = moves.to_host(data)
        elif moving and (not is_device_storage(data) or data.device != dev):
            # an eager call (no place pass): the input goes to the node's GPU first
            data = moves.to_device(moves.to_host(data) if is_device_storage(data) else data,
                                   dev, stream)
        _order_inputs(api, stream, data, tape)
        inputs.append(data)
    args = dict(node.args)
    for k, v in node.tensor_args.items():
        # per-sample arguments are read on the host (descriptors), as the place pass puts them
        args[k] = moves.to_host(v.data) if is_device_storage(v.data) else v.data
    ctx = GpuKernelContext(pool=get_pool(), in_metas=[v.meta for v in node.inputs],
                           out_metas=[v.meta for v in node.outputs],
                           tensor_arg_names=set(node.tensor_args),
                           batch_size=node.outputs[0].meta.batch_size if node.outputs else 0,
                           op=node.op, stream=stream, gpu=api, device=dev, state=st, tape=tape)
    try:
        outs = kernel(ctx, inputs, args)
    except Exception as exc:  # noqa: BLE001 - re-raised with the call site
        raise wrap_error(node, exc) from exc
    if len(outs) != len(node.outputs):
        raise RuntimeError(f"internal error: kernel {node.op} returned {len(outs)} outputs, "
                           f"expected {len(node.outputs)}")
    ev = tape.record(stream) if tape is not None else api.record_event(stream)
    used = list(ctx.touched)
    for data in inputs:
        used += _device_arrays(data)
    for v, data in zip(node.outputs, outs):
        if not is_device_storage(data) and node.device.kind == "gpu":
            data = DeviceSamples(data, dev)
        if is_device_storage(data):
            data.stream, data.ready = stream, ev
            used += list(data)
        v.data = data
    if tape is None or tape.eager:
        st.pool.note_use(used, stream, ev)
    else:                   # noted with the graph's end event once it is launched
        tape.used += used
    node.done = True


def run_gpu_plan(plan, run_cpu_node, wrap_error, graphs=None) -> None:
    """Run a plan with GPU steps: GPU steps enqueued on their lanes' streams, CPU steps run
    inline, in plan order. ``graphs`` (a :class:`runtime.gpu.capture.GraphCache`) captures and
    replays the plan's GPU part as a CUDA graph."""
    if graphs is not None and graphs.run(plan, run_cpu_node, wrap_error):
        return
    for step in plan.steps:
        node = step.node
        if is_gpu_node(node):
            run_gpu_node(node, wrap_error)
        else:
            run_cpu_node(node)
