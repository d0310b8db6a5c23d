"""The pass pipeline, in one visible place.

``compile_graph`` runs the passes in order on a graph cut out of the pending computation and
returns a :class:`compiler.plan.Plan`. Passes can be disabled by name (to bisect a problem):
``compile_graph(g, disable={"fuse"})`` or the ``NDD_DISABLE_PASSES=fuse,cse`` environment variable.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Callable, NamedTuple

from compiler.checker import check_graph
from compiler.ir import Graph, clone_graph
from compiler.passes.cse import cse
from compiler.passes.dce import dce
from compiler.passes.fuse import fuse, replay
from compiler.passes.place import place
from compiler.passes.result import FusionDecision, PassResult
from compiler.passes.schedule import schedule
from compiler.plan import Plan
from compiler.printer import format_graph
from compiler.signature import graph_signature

# name -> Graph -> PassResult; in the order they run.  ``schedule`` turns the graph into a plan.
PASSES: list[tuple[str, Callable[[Graph], PassResult]]] = [
    ("dce", dce),
    ("cse", cse),
    ("fuse", fuse),
    ("place", place),
]

_options = {"disable": set(), "max_lanes": 2, "check": False}


class CacheEntry(NamedTuple):
    """What a later compile of an equal graph reuses: the fusion decisions, the notes and the
    recorded text of the first compile."""

    decisions: tuple[FusionDecision, ...]
    notes: tuple[tuple[str, str], ...]
    recorded: str


# Plan cache: (graph signature, disabled passes, lanes) -> CacheEntry. Bounded LRU.
PLAN_CACHE_SIZE = 64
_cache: "OrderedDict[tuple, CacheEntry]" = OrderedDict()
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
    """Configure the pipeline globally (for every later compile in this process).

    ``check=True`` runs the IR checker (:func:`compiler.checker.check_graph`) after every pass
    (the test suite turns it on)."""
    if disable is not None:
        _options["disable"] = set(disable)
    if max_lanes is not None:
        if not isinstance(max_lanes, int) or max_lanes < 1:
            raise ValueError(f"max_lanes must be a positive integer, got {max_lanes!r}")
        _options["max_lanes"] = max_lanes
    if check is not None:
        _options["check"] = bool(check)


def options() -> dict:
    """A copy of the global options (:func:`set_options`): ``disable``, ``max_lanes``,
    ``check``."""
    return {"disable": set(_options["disable"]), "max_lanes": _options["max_lanes"],
            "check": _options["check"]}


def disabled_passes() -> set[str]:
    env = os.environ.get("NDD_DISABLE_PASSES", "")
    return set(_options["disable"]) | {p.strip() for p in env.split(",") if p.strip()}


def compile_graph(graph: Graph, disable=None, max_lanes=None, dry_run: bool = False) -> Plan:
    """Optimize ``graph`` and schedule it into a plan.

    ``dry_run=True`` works on a copy (for ``explain``): the pending nodes are left untouched.
    """
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
    recorded = cached.recorded if cached is not None else format_graph(graph, show_lane=False)
    notes: list[tuple[str, str]] = []
    aliases = []
    decisions: tuple[FusionDecision, ...] = ()
    for name, fn in PASSES:
        if name in off:
            notes.append((name, "disabled"))
            continue
        if name == "fuse" and cached is not None:
            result = replay(graph, cached.decisions)
        else:
            result = fn(graph)
        graph = result.graph
        notes += result.notes
        aliases += result.aliases
        decisions += result.decisions
        if _options["check"]:
            check_graph(graph, after=name)
    if cached is not None:
        notes = list(cached.notes) + [("cache", "plan reused from the plan cache (same graph "
                                                "signature); notes are from the first compile")]
    elif key is not None:
        with _cache_lock:
            _cache[key] = CacheEntry(decisions, tuple(notes), recorded)
            while len(_cache) > PLAN_CACHE_SIZE:
                _cache.popitem(last=False)
    plan = schedule(graph, max_lanes=lanes)
    plan.recorded = recorded
    plan.notes = notes
    plan.aliases = tuple(aliases)
    if _options["check"]:
        check_graph(plan.graph, after="schedule")
    for observer in (list(OBSERVERS) if snapshot is not None else ()):
        observer(plan, snapshot)
    return plan
