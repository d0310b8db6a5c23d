"""The compiled form of a graph: ordered steps, each on a lane, with cross-lane waits."""
from __future__ import annotations

from dataclasses import dataclass, field

from compiler.ir import Graph, Node
from compiler.passes.result import Alias


@dataclass
class Step:
    """Run ``node`` on ``lane`` after the nodes listed in ``waits`` (other lanes) finished."""

    node: Node
    lane: int = 0
    waits: list[int] = field(default_factory=list)


@dataclass
class Plan:
    """Steps in a valid sequential order and what running them needs besides.

    Attributes
    ----------
    steps : list[Step]
    graph : Graph
        The optimized graph the steps came from.
    recorded : str
        Text of the graph before optimization (for ``explain``).
    notes : list[tuple[str, str]]
        ``(pass, message)`` lines of the passes (for ``explain`` and ``ndd graph``).
    aliases : tuple[Alias, ...]
        Values CSE merged away: after the run, each ``removed`` value gets ``kept``'s data
        (a user may still hold it).
    """

    steps: list[Step]
    graph: Graph
    recorded: str = ""
    notes: list[tuple[str, str]] = field(default_factory=list)
    aliases: tuple[Alias, ...] = ()

    def lanes(self) -> dict[int, list[Step]]:
        out: dict[int, list[Step]] = {}
        for s in self.steps:
            out.setdefault(s.lane, []).append(s)
        return out

    @property
    def num_lanes(self) -> int:
        return len({s.lane for s in self.steps}) or 1
