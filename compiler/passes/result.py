"""What a pass returns: the graph and what it did, as declared fields (torch.fx's ``PassResult``).

Every pass is ``pass(graph) -> PassResult``; the pipeline (``compiler/pipeline.py``) reads the
fields and puts what the executor needs (``aliases``) and what ``explain`` shows (``notes``)
into the :class:`compiler.plan.Plan`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from compiler.ir import Graph, Value


class Alias(NamedTuple):
    """A value CSE removed and the identical one it kept: when the plan has run, ``removed``
    (which a user may still hold) gets ``kept``'s data."""

    removed: Value
    kept: Value


class FusionDecision(NamedTuple):
    """One applied fusion: the rule's name and the positions of producer and consumer in the
    node list as it was when the rewrite ran (the plan cache replays these on an equal graph)."""

    rule: str
    producer: int
    consumer: int


@dataclass
class PassResult:
    """The outcome of one pass.

    Attributes
    ----------
    graph : Graph
        The rewritten graph (passes rewrite in place and return the same object).
    modified : bool
        Whether the pass changed anything.
    notes : list[tuple[str, str]]
        ``(pass name, message)`` lines for ``explain`` (fusions applied and refused with the
        reason, nodes removed or merged, copies inserted).
    aliases : tuple[Alias, ...]
        CSE: outputs merged away, to be given the kept node's data after the run.
    decisions : tuple[FusionDecision, ...]
        fuse: the rewrites applied, in order.
    """

    graph: Graph
    modified: bool = False
    notes: list[tuple[str, str]] = field(default_factory=list)
    aliases: tuple[Alias, ...] = ()
    decisions: tuple[FusionDecision, ...] = ()
