"""Span recorder: when active, every executed node leaves a (start, end) span.

``runtime.executor.run_node`` checks :data:`ACTIVE` (one global read, so zero cost when no
recorder is installed) and calls :meth:`Recorder.span` after the kernel ran. ``ndd graph`` uses
it for the per-lane timeline, ``trace.json`` (Chrome trace / Perfetto) and per-node timings.

    rec = runtime.trace.start()
    ...                      # run ndd code
    runtime.trace.stop()
    rec.spans                # list[Span]
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

ACTIVE: "Recorder | None" = None


@dataclass
class Span:
    """One node execution.

    Attributes
    ----------
    node_id : int
    op : str
    callsite : str
        The user's ``file:line``.
    lane : int | None
        The plan lane (None for nodes run outside a plan, e.g. eager calls).
    thread : str
        Name of the thread that ran the node.
    t0, t1 : float
        ``time.perf_counter()`` seconds at start and end.
    shapes : list[str]
        Per output, the sample shape (``"224x224x3"``) or ragged range (``"(100..480)x(90..640)x3"``).
    """

    node_id: int
    op: str
    callsite: str
    lane: int | None
    thread: str
    t0: float
    t1: float
    shapes: list = field(default_factory=list)

    @property
    def duration(self) -> float:
        return self.t1 - self.t0


def shape_text(data) -> str | None:
    """Shape of the samples of a batch's storage, or the per-dimension range when ragged.

    Parameters
    ----------
    data : sequence of array-like or None
        Per-sample arrays (anything with ``.shape``).

    Returns
    -------
    str or None
        ``"224x224x3"``, ``"(100..480)x(90..640)x3"``; None when unknown or mixed ndim.
    """
    if data is None:
        return None
    try:
        shapes = [tuple(s.shape) for s in data]
    except (TypeError, AttributeError):
        return None
    if not shapes or len({len(s) for s in shapes}) != 1:
        return None
    if len(shapes[0]) == 0:
        return "scalar"
    dims = []
    for d in zip(*shapes):
        lo, hi = min(d), max(d)
        dims.append(str(lo) if lo == hi else f"({lo}..{hi})")
    return "x".join(dims)


class Recorder:
    """Collects spans from any thread (``list.append`` under a lock)."""

    def __init__(self):
        self.spans: list[Span] = []
        self._lock = threading.Lock()
        self.origin = time.perf_counter()

    def span(self, node, t0: float, t1: float) -> None:
        """Record that ``node`` ran from ``t0`` to ``t1`` (perf_counter seconds)."""
        shapes = [shape_text(v.data) for v in node.outputs]
        s = Span(node.id, node.op, node.callsite, node.meta.get("lane"),
                 threading.current_thread().name, t0, t1, shapes)
        with self._lock:
            self.spans.append(s)


def start() -> Recorder:
    """Install a fresh global recorder and return it."""
    global ACTIVE
    ACTIVE = Recorder()
    return ACTIVE


def stop() -> Recorder | None:
    """Uninstall the global recorder; returns it."""
    global ACTIVE
    rec, ACTIVE = ACTIVE, None
    return rec


def active() -> Recorder | None:
    """The installed recorder, or None."""
    return ACTIVE
