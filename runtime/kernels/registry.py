"""The kernel registry: ``(op name, device) -> kernel``.

A kernel is ``fn(ctx, inputs, args) -> list of outputs`` working on a whole batch: ``inputs`` is a
list with one storage per regular input (a list of per-sample arrays), ``args`` holds the node's
constant arguments plus, for every per-sample tensor argument, the list of its per-sample arrays.
Kernels never see ndd handles.

Each kernel module registers its own kernels (``@register(op, device)``) when it is imported;
the registry imports none of them.  ``runtime/kernels/cpu/catalog.py`` imports every CPU kernel
module (the executor imports it before its first op).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from compiler.ir import ValueMeta

KERNELS: dict[tuple[str, str], Callable] = {}


@dataclass
class KernelContext:
    """What a kernel may know besides its data.

    Attributes
    ----------
    pool : runtime.threadpool.ThreadPool
    in_metas : list[ValueMeta]   metadata of the regular inputs
    out_metas : list[ValueMeta]  metadata of the outputs
    tensor_arg_names : set[str]  which entries of ``args`` are per-sample lists
    batch_size : int
    op : str
    """

    pool: Any
    in_metas: list[ValueMeta]
    out_metas: list[ValueMeta]
    tensor_arg_names: set = field(default_factory=set)
    batch_size: int = 0
    op: str = ""


def register(op: str, device: str = "cpu"):
    """Decorator: ``fn`` is the kernel of ``op`` on ``device`` (``"cpu"``, ``"gpu"``).

    Raises
    ------
    ValueError
        A kernel for ``(op, device)`` was registered already.
    """
    def deco(fn):
        key = (op, device)
        if key in KERNELS:
            raise ValueError(f"kernel for {op!r} on {device} registered twice")
        KERNELS[key] = fn
        return fn
    return deco


def lookup(op: str, device: str) -> Callable:
    """The kernel of ``op`` on ``device`` among those registered.

    Raises
    ------
    NotImplementedError
        No kernel module imported so far registered one.
    """
    try:
        return KERNELS[(op, device)]
    except KeyError:
        raise NotImplementedError(f"operator '{op}' has no {device.upper()} implementation") \
            from None


def sample_arg(value) -> Any:
    """Turn one sample of a tensor argument into a Python value (scalar or tuple)."""
    if getattr(value, "ndim", None) == 0:
        return value.item()
    if hasattr(value, "tolist"):
        out = value.tolist()
        return tuple(out) if isinstance(out, list) else out
    return value


def sample_args(ctx: KernelContext, args: dict, i: int) -> dict:
    """The arguments of sample ``i``: constants as they are, tensor arguments resolved."""
    if not ctx.tensor_arg_names:
        return args
    out = dict(args)
    for k in ctx.tensor_arg_names:
        out[k] = sample_arg(args[k][i])
    return out


def given(args: dict, names) -> dict:
    """The arguments among ``names`` that ``args`` gives (not None), as keyword arguments for a
    per-sample function whose own defaults stand for the others."""
    out = {}
    for k in names:
        v = args.get(k)
        if v is not None:
            out[k] = v
    return out


def per_sample(fn: Callable) -> Callable:
    """Adapt ``fn(ctx, sample_inputs: list, args: dict, i: int) -> array | tuple`` to a batch
    kernel. An input with a single sample (a Tensor operand) is broadcast to every sample."""
    def kernel(ctx: KernelContext, inputs: list, args: dict):
        def one(i):
            ins = [inp[i] if len(inp) > 1 else inp[0] for inp in inputs]
            return fn(ctx, ins, sample_args(ctx, args, i), i)
        results = ctx.pool.map(one, ctx.batch_size)
        n_out = len(ctx.out_metas)
        if n_out == 1:
            return [results]
        return [[r[k] for r in results] for k in range(n_out)]
    kernel.__name__ = getattr(fn, "__name__", "kernel")
    kernel.__doc__ = fn.__doc__
    return kernel
