"""Runs nodes and plans: looks kernels up, feeds them storage, stores their outputs.

Errors raised by a kernel are re-raised with the op name and the user's ``file:line``
(the errors-point-at-the-user's-line rule of docs/architecture.md), keeping the original exception type when possible.
"""
from __future__ import annotations

import threading
import time

from compiler.ir import Node
from runtime import trace
from runtime.gpu import capture as gpu_capture
from runtime.gpu.runner import (is_gpu_node, load_gpu_kernels, plan_uses_gpu, run_gpu_node,
                                run_gpu_plan)
from runtime.kernels.registry import KernelContext, lookup
from runtime.threadpool import get_pool, hint as pool_hint


class OpError(RuntimeError):
    """An operator failed and the original exception type could not carry the message."""


# An op's ValueError / TypeError / IndexError is also a RuntimeError, what DALI 2.4's operators
# raise when they fail while running (its C++ errors), so DALI code's ``except RuntimeError``
# catches them as ``except ValueError`` does (the decoders' DecodeError does the same).
class OpValueError(ValueError, RuntimeError):
    """A ValueError raised by an operator while running (also a RuntimeError, as DALI's)."""


class OpTypeError(TypeError, RuntimeError):
    """A TypeError raised by an operator while running (also a RuntimeError, as DALI's)."""


class OpIndexError(IndexError, RuntimeError):
    """An IndexError raised by an operator while running (also a RuntimeError, as DALI's)."""


_AS_RUNTIME = {ValueError: OpValueError, TypeError: OpTypeError, IndexError: OpIndexError}
for _builtin, _twin in _AS_RUNTIME.items():
    # type(err).__name__ stays the builtin's ("ValueError: crop (called at ...)" in messages
    # built from it); __qualname__ keeps the class findable (pickle) and printed tracebacks
    # name runtime.executor.OpValueError
    _twin.__name__ = _builtin.__name__


def wrap_error(node: Node, exc: BaseException) -> BaseException:
    """Return an exception of the same type naming the op and the user's call site."""
    if getattr(exc, "_ndd_site", None) is not None:
        return exc
    sites = node.meta.get("fused_sites")
    if sites:
        # A fused node: name the user's op. Codec errors come from the decoding stage.
        decoders = [s for s in sites if s[0].startswith("decoders.")]
        if decoders and type(exc).__name__ == "DecodeError":
            op, site = decoders[0]
            msg = f"{op} (called at {site}): {exc}"
        else:
            chain = " + ".join(f"{op} (called at {site})" for op, site in sites)
            msg = f"{chain}, fused by the compiler: {exc}"
    else:
        msg = f"{node.op} (called at {node.callsite}): {exc}"
    cls = _AS_RUNTIME.get(type(exc), type(exc))
    try:
        new = cls(msg)
    except Exception:
        new = OpError(msg)
    new._ndd_site = node.callsite
    new.__cause__ = exc
    return new


_kernels_loaded = False


def kernel_for(node: Node):
    """The registered kernel of the node's op on its device (the CPU kernel modules, and the
    GPU ones beside them, are imported at the first call)."""
    global _kernels_loaded
    if not _kernels_loaded:
        # lazily: the kernels import torch and nvImageCodec (~1 s), which `import ndd` does
        # not need
        import runtime.kernels.cpu.catalog  # noqa: F401 - registers every CPU kernel
        load_gpu_kernels()      # the GPU catalogue: numpy only, no CUDA touched (compiled at
        _kernels_loaded = True  # a kernel's first launch)
    return lookup(node.op, node.device.kind)


def run_node(node: Node) -> None:
    """Execute one node whose inputs are all materialized; sets ``data`` on its outputs (a GPU
    node: enqueued on its lane's stream by ``runtime/gpu/runner.py``)."""
    if node.device.kind != "cpu" or node.op == "transfer" and is_gpu_node(node):
        run_gpu_node(node, wrap_error)
        return
    kernel = kernel_for(node)
    inputs = []
    for v in node.inputs:
        if v.data is None:
            raise RuntimeError(f"internal error: input %{v.id} of {node.op} is not computed")
        inputs.append(v.data)
    args = dict(node.args)
    for k, v in node.tensor_args.items():
        args[k] = v.data
    ctx = KernelContext(pool=get_pool(), in_metas=[v.meta for v in node.inputs],
                        out_metas=[v.meta for v in node.outputs],
                        tensor_arg_names=set(node.tensor_args),
                        batch_size=node.outputs[0].meta.batch_size if node.outputs else 0,
                        op=node.op)
    rec = trace.ACTIVE
    t0 = time.perf_counter() if rec is not None else 0.0
    pool_hint.op = node.op      # the pool's cost estimates are per op (runtime/threadpool.py)
    try:
        outs = kernel(ctx, inputs, args)
    except Exception as exc:  # noqa: BLE001 - re-raised with the call site
        raise wrap_error(node, exc) from exc
    if len(outs) != len(node.outputs):
        raise RuntimeError(f"internal error: kernel {node.op} returned {len(outs)} outputs, "
                           f"expected {len(node.outputs)}")
    for v, d in zip(node.outputs, outs):
        v.data = d
    if rec is not None:
        rec.span(node, t0, time.perf_counter())
    node.done = True


def release_inputs(node: Node) -> None:
    """Drop a computed node's references to its inputs so their memory can be freed."""
    if all(v.data is not None for v in node.outputs):
        for v in node.outputs:
            v.producer = None


class LaneRunner:
    """Runs a plan's schedule lanes (``compiler/passes/schedule.py``) concurrently: one thread
    per lane, an event per step for the waits between lanes."""

    @staticmethod
    def run(plan) -> None:
        lanes = plan.lanes()
        if len(lanes) <= 1:
            for step in plan.steps:
                run_node(step.node)
            return
        done = {step.node.id: threading.Event() for step in plan.steps}
        errors: list[BaseException] = []

        def run_lane(steps):
            for step in steps:
                for dep in step.waits:
                    done[dep].wait()
                    if errors:
                        return
                try:
                    if not errors:
                        run_node(step.node)
                except BaseException as exc:  # noqa: BLE001
                    errors.append(exc)
                finally:
                    done[step.node.id].set()
            for step in steps:
                done[step.node.id].set()

        threads = [threading.Thread(target=run_lane, args=(steps,), daemon=True,
                                    name=f"ndd-lane-{lane}")
                   for lane, steps in sorted(lanes.items())[1:]]
        for t in threads:
            t.start()
        run_lane(sorted(lanes.items())[0][1])
        for t in threads:
            t.join()
        if errors:
            raise errors[0]


def execute(plan) -> None:
    """Run a compiled plan (``compiler.plan.Plan``): on the CPU lanes' threads, or, when a step
    runs on a GPU, with the lanes as CUDA streams (decided once per plan)."""
    if plan_uses_gpu(plan):
        run_gpu_plan(plan, run_node, wrap_error, graphs=gpu_capture.cache())
        return
    LaneRunner.run(plan)


def run_plan(plan) -> None:
    """Run a compiled plan and settle its values (deferred evaluation and compile mode both
    end a plan here).

    After the steps ran, each value CSE merged away gets the data of the value it was merged
    into (a user's handle may still hold it), and every computed value forgets its producer,
    so no Node <-> Value cycle keeps a batch (and its recycled output buffer) alive until the
    garbage collector runs. A step's error propagates and nothing is settled.
    """
    execute(plan)
    for mine, theirs in plan.aliases:
        if mine.data is None and theirs.data is not None:
            mine.data = theirs.data
    for step in plan.steps:
        release_inputs(step.node)
