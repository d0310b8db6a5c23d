"""The compiled form of a graph: ordered steps, each on a lane, with cross-lane waits."""
from __future__ import annotations

from dataclasses import dataclass, field

from compiler.ir import Graph, Node


@dataclass
class Step:
    """Run ``node`` on ``lane`` after the nodes listed in ``waits`` (other lanes) finished."""

    node: Node
    lane: int = 0
    waits: list[int] = field(default_factory=list)


@dataclass
class Plan:
    """Steps in a valid sequential order; ``graph`` is the optimized graph they came from."""

    steps: list[Step]
    graph: Graph
    recorded: str = ""      # text of the graph before optimization (for explain)
    signature: tuple | None = None

    def lanes(self) -> dict[int, list[Step]]:
        out: dict[int, list[Step]] = {}
        for s in self.steps:
            out.setdefault(s.lane, []).append(s)
        return out

    @property
    def num_lanes(self) -> int:
        return len({s.lane for s in self.steps}) or 1
