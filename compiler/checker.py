"""IR checker: structural invariants every pass must keep (run after each pass in tests)."""
from __future__ import annotations

from compiler.ir import Graph


class IRError(AssertionError):
    pass


def check_graph(graph: Graph, after: str = "") -> None:
    """Raise :class:`IRError` unless the graph is well formed.

    Checks: nodes are in topological order; every input is produced earlier in the graph or is a
    leaf (materialized or produced outside the graph); each output value points back at its node;
    node ids are unique; every op has a schema; outputs of the graph are produced or leaves.
    """
    from compiler.schema import REGISTRY
    where = f" after pass '{after}'" if after else ""
    produced: dict[int, int] = {}
    ids = set()
    position = {n.id: i for i, n in enumerate(graph.nodes)}
    for i, n in enumerate(graph.nodes):
        if n.id in ids:
            raise IRError(f"node #{n.id} appears twice{where}")
        ids.add(n.id)
        if n.op not in REGISTRY:
            raise IRError(f"node #{n.id} has unknown op {n.op!r}{where}")
        for v in n.all_inputs():
            p = v.producer
            if p is not None and p.id in position and position[p.id] >= i and v.data is None:
                raise IRError(f"node #{n.id} ({n.op}) reads %{v.id} before it is produced{where}")
        for k, v in enumerate(n.outputs):
            if v.producer is not n and v.data is None:
                raise IRError(f"output %{v.id} of #{n.id} does not point back at it{where}")
            produced[v.id] = n.id
    for v in graph.outputs:
        if v.id not in produced and v.data is None and v.producer is not None \
                and v.producer.id not in position:
            raise IRError(f"graph output %{v.id} is neither produced nor a leaf{where}")
