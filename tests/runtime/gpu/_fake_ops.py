"""Test ops with CPU kernels and fake-GPU kernels, registered for one test only.

``gputest.add(x, value=...)`` adds a per-sample value (a constant or a tensor argument: on the GPU
an uploaded per-sample descriptor, as real kernels pass per-sample parameters);
``gputest.sum(a, b)`` adds two batches; ``gputest.scale(x, factor=...)`` multiplies by a factor
passed as a *scalar launch argument* (so a replayed graph with another factor must not be used).
The GPU kernels write one block per batch (``ctx.empty``) and launch once per batch through
``ctx.launch``, with device pointers and descriptors as the launch's arguments, as
``runtime/kernels/gpu/`` kernels do; the fake GPU runs them on the host.
"""
from __future__ import annotations

import contextlib

import numpy as np

from compiler.schema import REGISTRY, ArgSpec, OpSchema, register, same_as_input
from runtime.kernels.registry import KERNELS, register as register_kernel

NAMES = ("gputest.add", "gputest.sum", "gputest.scale")


def _values(ctx, args, n):
    v = args["value"]
    if "value" in ctx.tensor_arg_names:
        return np.array([float(np.asarray(x)) for x in v], np.float32)
    return np.full(n, float(v), np.float32)


def _cpu_add(ctx, inputs, args):
    vals = _values(ctx, args, len(inputs[0]))
    return [[(x + vals[i]).astype(x.dtype) for i, x in enumerate(inputs[0])]]


def _cpu_sum(ctx, inputs, args):
    return [[a + b for a, b in zip(inputs[0], inputs[1])]]


def _cpu_scale(ctx, inputs, args):
    return [[(x * args["factor"]).astype(x.dtype) for x in inputs[0]]]


def _batch_out(ctx, like):
    """One block for the batch, per-sample views of it (as the GPU kernels lay batches out)."""
    n = len(like)
    whole = ctx.empty((n,) + tuple(like[0].shape), like[0].dtype)
    return [whole[i] for i in range(n)], whole


def _add_kernel(grid, block, args):
    out, x, desc = args
    out.host[...] = x.host + desc.host.reshape((-1,) + (1,) * (x.host.ndim - 1))


def _sum_kernel(grid, block, args):
    out, a, b = args
    out.host[...] = a.host + b.host


def _scale_kernel(grid, block, args):
    out, x, factor = args
    out.host[...] = x.host * factor


def _whole(ctx, samples):
    """The samples as one device array (they lie back to back in one block in these tests)."""
    api = ctx.gpu
    first = samples[0]
    return api.array(api.memory_of(first), api.offset_of(first),
                     (len(samples),) + tuple(first.shape), first.dtype)


def _gpu_add(ctx, inputs, args):
    x = inputs[0]
    outs, whole = _batch_out(ctx, x)
    desc = ctx.upload(_values(ctx, args, len(x)))
    src = _whole(ctx, x)
    ctx.launch(_add_kernel, (len(x), 1, 1), (128, 1, 1), (whole, src, desc),
               reads=[src, desc], writes=[whole])
    return [ctx.samples(outs)]


def _gpu_sum(ctx, inputs, args):
    outs, whole = _batch_out(ctx, inputs[0])
    a, b = _whole(ctx, inputs[0]), _whole(ctx, inputs[1])
    ctx.launch(_sum_kernel, (len(outs), 1, 1), (128, 1, 1), (whole, a, b), reads=[a, b],
               writes=[whole])
    return [ctx.samples(outs)]


def _gpu_scale(ctx, inputs, args):
    outs, whole = _batch_out(ctx, inputs[0])
    src = _whole(ctx, inputs[0])
    ctx.launch(_scale_kernel, (len(outs), 1, 1), (128, 1, 1),
               (whole, src, np.float32(args["factor"])), reads=[src], writes=[whole])
    return [ctx.samples(outs)]


@contextlib.contextmanager
def fake_ops():
    """Register the ``gputest.*`` schemas and kernels for the block, remove them after."""
    schemas = [
        OpSchema("gputest.add", ("input",), (ArgSpec("value", "float", 1.0, tensor=True),),
                 same_as_input, devices=("cpu", "gpu")),
        OpSchema("gputest.sum", ("a", "b"), (), same_as_input, devices=("cpu", "gpu")),
        OpSchema("gputest.scale", ("input",), (ArgSpec("factor", "float", 2.0),),
                 same_as_input, devices=("cpu", "gpu")),
    ]
    for s in schemas:
        register(s)
    kernels = {("gputest.add", "cpu"): _cpu_add, ("gputest.add", "gpu"): _gpu_add,
               ("gputest.sum", "cpu"): _cpu_sum, ("gputest.sum", "gpu"): _gpu_sum,
               ("gputest.scale", "cpu"): _cpu_scale, ("gputest.scale", "gpu"): _gpu_scale}
    for (op, dev), fn in kernels.items():
        register_kernel(op, dev)(fn)
    try:
        yield
    finally:
        for s in schemas:
            REGISTRY.pop(s.name, None)
        for key in kernels:
            KERNELS.pop(key, None)
