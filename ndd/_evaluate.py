"""Turning pending values into data: eager futures, synchronous runs, deferred compilation."""
from __future__ import annotations

import threading

from compiler.ir import Graph, Node, Value
from compiler.pipeline import compile_graph
from ndd._capture_state import current_capture
from ndd._errors import raise_stored
from runtime import executor

_deferred_lock = threading.RLock()
_last_plan = threading.local()


def run_now(node: Node) -> None:
    """Run ``node`` in this thread (sync modes and the eager worker)."""
    for v in node.all_inputs():
        if v.data is None:
            materialize(v)
    try:
        executor.run_node(node)
    except BaseException as exc:
        node.error = exc
        raise
    executor.release_inputs(node)


def materialize(value: Value):
    """Return ``value.data``, computing it first if needed.

    Raises the (wrapped) error of the op that failed to produce it; for an op recorded in
    eager or deferred mode, from that error with the stack of the op call
    (``ndd/_errors.py``).
    """
    cap = current_capture()
    if cap is not None:
        cap.consumed(value)
    data = value.data
    if data is not None:
        return data
    node = value.producer
    if node is None:
        # The eager worker may have finished (data set, producer released) since we looked.
        if value.data is not None:
            return value.data
        raise RuntimeError(f"internal error: value %{value.id} has neither data nor producer")
    err = node.error
    if err is not None:
        raise_stored(err)
    try:
        fut = node.future
        if fut is not None:
            fut.result()
            if value.data is None:   # computed by a plan that fused it away
                evaluate([value])
            return value.data
        evaluate([value])
        return value.data
    except Exception as exc:    # noqa: BLE001 - raised again, from the op call's stack
        err = exc
    raise_stored(err)


def wait_pending(value: Value) -> None:
    """If ``value`` is being computed by the eager worker, wait for it (errors surface later)."""
    node = value.producer
    if node is not None and value.data is None and node.future is not None:
        try:
            node.future.result()
        except BaseException:  # noqa: BLE001 - raised again when consumed
            pass


def evaluate(values: list[Value]) -> None:
    """Compile the unevaluated sub-DAG the values need and run it (deferred mode)."""
    with _deferred_lock:
        pending = [v for v in values if v.data is None]
        if not pending:
            return
        graph = Graph.from_outputs(pending)
        for leaf in graph.leaves():
            if leaf.data is None:
                materialize(leaf)
        plan = compile_graph(graph)
        _last_plan.plan = plan
        try:
            executor.run_plan(plan)
        except BaseException as exc:
            # every value the plan did not compute raises this error when consumed
            for step in plan.steps:
                if not step.node.done:
                    step.node.error = exc
            raise


def last_plan():
    return getattr(_last_plan, "plan", None)
