"""CPU kernel of ``transfer``: the device move the compiler's ``place`` pass inserts.

On the CPU a move to the CPU hands the samples on as they are; a move to or from a GPU needs
the GPU runtime (not written yet): it raises a clear error without a GPU and
``NotImplementedError`` with one.
"""
from __future__ import annotations

from runtime.device import require_gpu
from runtime.kernels.registry import register

__all__ = ["transfer"]


@register("transfer", "cpu")
def transfer(ctx, inputs, args):
    """``transfer`` to ``args["device"]``: the same samples when source and target are CPU."""
    if args["device"] != "cpu" or ctx.in_metas[0].device.kind != "cpu":
        require_gpu("transfer")
        raise NotImplementedError("GPU transfers are not implemented yet")
    return [list(inputs[0])]
