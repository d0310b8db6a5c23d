"""``ndd graph SCRIPT.py [args...]``: run a script, record its compiled plans and node spans,
write the graph text, pictures, timeline, Chrome trace and an HTML report.

How the script is run: like ``python SCRIPT.py args`` (``runpy.run_path`` with ``sys.argv`` set,
``__name__ == "__main__"``, the script's folder first on ``sys.path``). While it runs,
``compiler.pipeline.OBSERVERS`` receives every compiled plan (deferred evaluations and
compile-mode batches) and ``runtime.trace`` records a span per executed node (eager ones too).

``--iterations N``: every ``ndd.readers.File.next_epoch`` iterator is wrapped so that, once N
batches (or samples) in total were handed to the script, asking for the next one raises a
private ``BaseException`` subclass (so ``except Exception`` in the script does not swallow it);
the wrapped reader iterator is closed (compile-mode prefetching stops) and the CLI catches the
exception and writes the artifacts. Scripts that do not use ``ndd.readers.File`` run to their end.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import runpy
import statistics
import sys
import threading
import traceback

from compiler import pipeline
from compiler.explain import explain_graph
from compiler.export.dot import to_dot
from compiler.export.json import to_json
from compiler.ir import Graph
from compiler.printer import format_graph
from ndd.readers import File
from ndd.tools import render
from runtime import trace
from runtime.trace import shape_text


class StopScript(BaseException):
    """Raised into the user's script when ``--iterations`` batches were delivered."""


class PlanRecord:
    """One distinct compiled plan (first instance kept) and how many times it was compiled."""

    def __init__(self, plan, recorded_graph):
        self.plan = plan
        self.recorded_graph = recorded_graph
        self.count = 1

    @property
    def key(self):
        return plan_key(self.plan)


def plan_key(plan) -> tuple:
    """Structure of a plan independent of value ids: (op, call site, lane) per step."""
    return tuple((s.node.op, s.node.callsite, s.lane) for s in plan.steps)


class Session:
    """Collects plans (from the compiler observer hook) and spans (from ``runtime.trace``)."""

    def __init__(self):
        self.plans: dict[tuple, PlanRecord] = {}
        self._lock = threading.Lock()
        self.recorder = None
        self.batches = 0
        self.stopped_early = False
        self.error: str | None = None

    def observe(self, plan, recorded_graph):
        key = plan_key(plan)
        with self._lock:
            rec = self.plans.get(key)
            if rec is None:
                self.plans[key] = PlanRecord(plan, recorded_graph)
            else:
                rec.count += 1

    @property
    def spans(self):
        return self.recorder.spans if self.recorder is not None else []

    def main_plan(self) -> PlanRecord | None:
        """The most often compiled plan (ties: the larger one)."""
        if not self.plans:
            return None
        return max(self.plans.values(), key=lambda r: (r.count, len(r.plan.steps)))


def _limited(inner, limit: int, session: Session):
    try:
        for item in inner:
            if session.batches >= limit:
                session.stopped_early = True
                raise StopScript(f"--iterations {limit} reached")
            session.batches += 1
            yield item
    finally:
        close = getattr(inner, "close", None)
        if close is not None:
            close()


@contextlib.contextmanager
def _iteration_limit(limit: int | None, session: Session):
    if limit is None:
        yield
        return
    original = File.next_epoch

    @functools.wraps(original)
    def next_epoch(self, *args, **kwargs):
        return _limited(original(self, *args, **kwargs), limit, session)

    File.next_epoch = next_epoch
    try:
        yield
    finally:
        File.next_epoch = original


def run_script(script: str, args: list[str], iterations: int | None = None,
               stdout_to_stderr: bool = False) -> Session:
    """Run ``script`` as ``__main__`` with ``sys.argv = [script, *args]`` while recording.

    Parameters
    ----------
    script : str
        Path of a Python file.
    args : list[str]
        Its command-line arguments.
    iterations : int, optional
        Stop after this many reader batches (see the module docstring).
    stdout_to_stderr : bool
        Send the script's prints to stderr (keeps stdout for ``--format``).

    Returns
    -------
    Session
        Plans and spans; ``session.error`` holds the traceback text if the script failed.
    """
    session = Session()
    old_argv, old_path = sys.argv, list(sys.path)
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    pipeline.OBSERVERS.append(session.observe)
    session.recorder = trace.start()
    redirect = contextlib.redirect_stdout(sys.stderr) if stdout_to_stderr \
        else contextlib.nullcontext()
    try:
        with _iteration_limit(iterations, session), redirect:
            runpy.run_path(script, run_name="__main__")
    except StopScript:
        session.stopped_early = True
    except SystemExit as exc:
        if exc.code not in (None, 0):
            session.error = f"the script exited with status {exc.code}"
    except Exception:  # noqa: BLE001 - reported, artifacts still written
        session.error = traceback.format_exc()
    finally:
        trace.stop()
        pipeline.OBSERVERS.remove(session.observe)
        sys.argv = old_argv
        sys.path[:] = old_path
    return session


# ---------------------------------------------------------------------------- artifacts
def dead_nodes(record: PlanRecord) -> list:
    """Nodes of the recorded graph that dead-code elimination removed."""
    ids = {int(m.group(1)) for name, msg in record.plan.notes if name == "dce"
           for m in [re.search(r"#(\d+)", msg)] if m}
    if record.recorded_graph is None:
        return []
    return [n for n in record.recorded_graph.nodes if n.id in ids]


def value_shapes(spans, graph) -> dict[int, str]:
    """Value id -> shape text, from the spans of the graph's own nodes."""
    by_node = {s.node_id: s for s in spans}
    out = {}
    for v in graph.leaves():
        text = shape_text(v.data)
        if text:
            out[v.id] = text
    for n in graph.nodes:
        s = by_node.get(n.id)
        if s is not None:
            for v, text in zip(n.outputs, s.shapes):
                if text:
                    out[v.id] = text
    return out


def _percentile(xs, q):
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def timing_table(spans) -> str:
    """Per (op, call site): count, median and p90 in milliseconds (linear interpolation)."""
    groups: dict[tuple, list[float]] = {}
    for s in spans:
        groups.setdefault((s.op, s.callsite), []).append(s.duration * 1e3)
    if not groups:
        return "== node times ==\n(no node was executed)"
    rows = [f"{'op':<28s} {'call site':<28s} {'runs':>5s} {'median ms':>10s} {'p90 ms':>9s}"]
    for (op, site), ds in sorted(groups.items(), key=lambda kv: -statistics.median(kv[1])):
        rows.append(f"{op:<28s} {site:<28s} {len(ds):>5d} {statistics.median(ds):>10.3f} "
                    f"{_percentile(ds, 0.9):>9.3f}")
    return "== node times ==\n" + "\n".join(rows)


def graph_text(session: Session, view: str = "both") -> str:
    """graph.txt: every distinct plan (as ``ndd.explain`` prints it), then the node times."""
    parts = []
    if not session.plans:
        parts.append("(no graph was compiled: the script only ran eager / synchronous calls)")
    for k, rec in enumerate(session.plans.values(), 1):
        parts.append(f"#### plan {k} of {len(session.plans)} (compiled {rec.count} time(s))")
        if view == "recorded":
            parts.append(rec.plan.recorded)
        elif view == "compiled":
            parts.append(format_graph(rec.plan.graph))
        else:
            parts.append(explain_graph(rec.plan))
        parts.append("")
    parts.append(timing_table(session.spans))
    return "\n".join(parts) + "\n"


def view_graph(record: PlanRecord, view: str):
    """(graph, dead nodes) to draw for a view."""
    if view == "recorded" and record.recorded_graph is not None:
        return record.recorded_graph, []
    if view == "compiled":
        return record.plan.graph, []
    return record.plan.graph, dead_nodes(record)


def dot_text(session: Session, view: str = "both") -> str:
    rec = session.main_plan()
    if rec is None:
        return 'digraph "ndd" {\n  empty [label="no graph was compiled"];\n}\n'
    graph, dead = view_graph(rec, view)
    return to_dot(graph, dead=dead, shapes=value_shapes(session.spans, rec.plan.graph))


def json_text(session: Session, view: str = "both") -> str:
    docs = []
    for rec in session.plans.values():
        graph, _ = view_graph(rec, view)
        doc = to_json(graph, rec.plan.notes if graph is rec.plan.graph else ())
        doc["compiled_times"] = rec.count
        docs.append(doc)
    return json.dumps({"plans": docs}, indent=1) + "\n"


def chrome_trace(spans) -> dict:
    """Spans as a Chrome trace (``chrome://tracing`` / https://ui.perfetto.dev): complete
    ("X") events in microseconds, one tid per (thread, lane) row, with thread-name metadata."""
    origin = min((s.t0 for s in spans), default=0.0)
    tids: dict[str, int] = {}
    events = []
    for s in spans:
        row = render.timeline_row(s)
        tid = tids.setdefault(row, len(tids) + 1)
        events.append({"name": s.op, "cat": "ndd", "ph": "X", "pid": 1, "tid": tid,
                       "ts": round((s.t0 - origin) * 1e6, 3),
                       "dur": round((s.t1 - s.t0) * 1e6, 3),
                       "args": {"node": s.node_id, "callsite": s.callsite, "lane": s.lane,
                                "shapes": s.shapes}})
    for row, tid in tids.items():
        events.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid,
                       "args": {"name": row}})
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def write_artifacts(session: Session, out_dir: str, view: str = "both") -> dict[str, str]:
    """Write graph.txt, graph.svg, graph.png, timeline.png, trace.json, report.html.

    Returns
    -------
    dict[str, str]
        Artifact name -> path; ``"renderer"`` -> ``"graphviz"`` or ``"matplotlib"``.
    """
    os.makedirs(out_dir, exist_ok=True)
    p = {name: os.path.join(out_dir, name) for name in
         ("graph.txt", "graph.svg", "graph.png", "timeline.png", "trace.json", "report.html")}
    text = graph_text(session, view)
    with open(p["graph.txt"], "w", encoding="utf-8") as f:
        f.write(text)
    rec = session.main_plan()
    if rec is not None:
        graph, dead = view_graph(rec, view)
        shapes = value_shapes(session.spans, rec.plan.graph)
    else:
        graph, dead, shapes = Graph([], []), [], {}
    renderer = render.render_graph(dot_text(session, view), graph, dead, shapes,
                                   p["graph.svg"], p["graph.png"])
    render.render_timeline(session.spans, p["timeline.png"])
    with open(p["trace.json"], "w", encoding="utf-8") as f:
        json.dump(chrome_trace(session.spans), f)
    with open(p["graph.svg"], encoding="utf-8") as f:
        svg = f.read()
    render.write_html(p["report.html"], text, svg, render.png_bytes(p["timeline.png"]))
    p["renderer"] = renderer
    return p
