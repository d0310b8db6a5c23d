"""The pass pipeline, in one visible place.

``compile_graph`` runs the passes in order on a graph cut out of the pending computation and
returns a :class:`compiler.plan.Plan`. Passes can be disabled by name (to bisect a problem):
``compile_graph(g, disable={"fuse"})`` or the ``NDD_DISABLE_PASSES=fuse,cse`` environment variable.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Callable

from compiler.ir import Graph
from compiler.passes.cse import cse
from compiler.passes.dce import dce
from compiler.passes.fuse import fuse, replay
from compiler.passes.place import place
from compiler.passes.schedule import schedule
from compiler.plan import Plan

# name -> Graph -> Graph; in the order they run.  ``schedule`` turns the graph into a plan.
PASSES: list[tuple[str, Callable[[Graph], Graph]]] = [
    ("dce", dce),
    ("cse", cse),
    ("fuse", fuse),
    ("place", place),
]

_options = {"disable": set(), "max_lanes": 2, "check": False}

# Plan cache: graph signature -> (fusion decisions, notes of the first compile). Bounded LRU.
PLAN_CACHE_SIZE = 64
_cache: "OrderedDict[tuple, tuple]" = OrderedDict()
_cache_lock = threading.Lock()
cache_stats = {"hits": 0, "misses": 0}


def clear_plan_cache() -> None:
    with _cache_lock:
        _cache.clear()
        cache_stats.update(hits=0, misses=0)

# Callables ``observer(plan, recorded_graph)`` told about every compiled plan (``ndd graph``);
# ``recorded_graph`` is a copy of the graph before the passes. Empty list: no cost.
OBSERVERS: list[Callable] = []


def set_options(*, disable=None, max_lanes=None, check=None) -> None:
    """Configure the pipeline globally (``ndd.compiler_options`` forwards here)."""
    if disable is not None:
        _options["disable"] = set(disable)
    if max_lanes is not None:
        if not isinstance(max_lanes, int) or max_lanes < 1:
            raise ValueError(f"max_lanes must be a positive integer, got {max_lanes!r}")
        _options["max_lanes"] = max_lanes
    if check is not None:
        _options["check"] = bool(check)


def disabled_passes() -> set[str]:
    env = os.environ.get("NDD_DISABLE_PASSES", "")
    return set(_options["disable"]) | {p.strip() for p in env.split(",") if p.strip()}


def compile_graph(graph: Graph, disable=None, max_lanes=None, dry_run: bool = False) -> Plan:
    """Optimize ``graph`` and schedule it into a plan.

    ``dry_run=True`` works on a copy (for ``explain``): the pending nodes are left untouched.
    """
    from compiler.ir import clone_graph
    from compiler.printer import format_graph
    from compiler.signature import graph_signature
    if dry_run:
        graph = clone_graph(graph)
    snapshot = clone_graph(graph) if OBSERVERS and not dry_run else None
    off = disabled_passes() | set(disable or ())
    lanes = max_lanes or _options["max_lanes"]
    key = None
    cached = None
    if not dry_run:     # explain always compiles afresh, so its text is exact
        key = (graph_signature(graph), frozenset(off), lanes)
        with _cache_lock:
            cached = _cache.get(key)
            if cached is not None:
                _cache.move_to_end(key)
                cache_stats["hits"] += 1
            else:
                cache_stats["misses"] += 1
    recorded = cached[2] if cached is not None else format_graph(graph, show_lane=False)
    for name, fn in PASSES:
        if name in off:
            graph.notes.append((name, "disabled"))
            continue
        if name == "fuse" and cached is not None:
            graph = replay(graph, cached[0])
        else:
            graph = fn(graph)
        if _options["check"]:
            from compiler.checker import check_graph
            check_graph(graph, after=name)
    if cached is not None:
        graph.notes = list(cached[1]) + [("cache", "plan reused from the plan cache (same "
                                                   "graph signature); notes are from the "
                                                   "first compile")]
    elif key is not None:
        with _cache_lock:
            _cache[key] = (list(getattr(graph, "decisions", [])), list(graph.notes), recorded)
            while len(_cache) > PLAN_CACHE_SIZE:
                _cache.popitem(last=False)
    plan = schedule(graph, max_lanes=lanes)
    plan.recorded = recorded
    for observer in (list(OBSERVERS) if snapshot is not None else ()):
        observer(plan, snapshot)
    return plan
