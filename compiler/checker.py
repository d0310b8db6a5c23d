"""IR checker: structural invariants every pass must keep (run after each pass in tests)."""
from __future__ import annotations

from compiler.ir import META_KEYS, Graph, Node, Stage, stages_of
from compiler.schema import REGISTRY


class IRError(AssertionError):
    pass


def check_graph(graph: Graph, after: str = "") -> None:
    """Raise :class:`IRError` unless the graph is well formed.

    Checks: node ids are unique and the graph's membership index matches its node list; every
    op has a schema; nodes are in topological order; no input has a stale producer link (a
    value that is not computed must be produced by a node of the graph, or be a leaf without a
    producer); each output value points back at its node; users agree with inputs (every node
    is a user of what it reads, every user of a value of the graph reads it); ``meta`` holds
    only the pass keys of :data:`compiler.ir.META_KEYS`; fused stages are well formed; outputs
    of the graph are produced or leaves.
    """
    where = f" after pass '{after}'" if after else ""
    if not graph.membership_is_current():
        raise IRError(f"the graph's node list was edited in place (membership index stale){where}")
    position: dict[int, int] = {}
    for i, n in enumerate(graph.nodes):
        if n.id in position:
            raise IRError(f"node #{n.id} appears twice{where}")
        position[n.id] = i
    for i, n in enumerate(graph.nodes):
        if n.op not in REGISTRY:
            raise IRError(f"node #{n.id} has unknown op {n.op!r}{where}")
        for v in n.all_inputs():
            p = v.producer
            if v.data is None and p is not None:
                if p not in graph:
                    raise IRError(f"node #{n.id} ({n.op}) reads %{v.id}, produced by #{p.id} "
                                  f"({p.op}) outside the graph and not computed (stale "
                                  f"producer link){where}")
                if position[p.id] >= i:
                    raise IRError(f"node #{n.id} ({n.op}) reads %{v.id} before it is "
                                  f"produced{where}")
            if not any(u is n for u in v.users):
                raise IRError(f"node #{n.id} ({n.op}) reads %{v.id} but is not among its "
                              f"users{where}")
        for v in n.outputs:
            if v.producer is not n and v.data is None:
                raise IRError(f"output %{v.id} of #{n.id} does not point back at it{where}")
            for u in graph.users(v):
                if not any(w is v for w in u.all_inputs()):
                    raise IRError(f"#{u.id} ({u.op}) is listed as a user of %{v.id} but does "
                                  f"not read it{where}")
        _check_meta(n, where)
        _check_stages(n, where)
    for v in graph.outputs:
        if v.data is None and v.producer is not None and v.producer not in graph:
            raise IRError(f"graph output %{v.id} is neither produced nor a leaf{where}")


def _check_meta(n: Node, where: str) -> None:
    unknown = sorted(set(n.meta) - set(META_KEYS))
    if unknown:
        raise IRError(f"node #{n.id} ({n.op}) has meta keys {unknown} that are not pass "
                      f"metadata (compiler.ir.META_KEYS; run state has its own slots){where}")
    sites = n.meta.get("fused_sites")
    if sites is not None and len(sites) != len(n.meta.get("fused_from") or ()):
        raise IRError(f"node #{n.id} ({n.op}): fused_sites and fused_from differ in "
                      f"length{where}")


def _check_stages(n: Node, where: str) -> None:
    if n.op not in ("fused.image", "fused.color", "fused.window", "fused.audio"):
        return
    stages = stages_of(n)
    if not stages or not all(isinstance(s, Stage) for s in n.args["stages"]):
        raise IRError(f"fused node #{n.id} has no Stage records in args['stages']{where}")
    extra = sorted(set(n.args) - {"stages", "_seeds"})
    if extra:
        raise IRError(f"fused node #{n.id} has arguments {extra} outside its stages{where}")
    if list(n.meta.get("fused_from") or ()) != [s.op for s in stages]:
        raise IRError(f"fused node #{n.id}: fused_from {n.meta.get('fused_from')} is not its "
                      f"stages' ops {[s.op for s in stages]}{where}")
    claimed: list[str] = []
    for s in stages:
        names = [k for k, _ in s.args]
        if names != sorted(set(names)):
            raise IRError(f"fused node #{n.id}: stage {s.name} arguments are not sorted and "
                          f"unique{where}")
        claimed += [key for _, key in s.tensor_args]
    if sorted(claimed) != sorted(n.tensor_args):
        raise IRError(f"fused node #{n.id}: tensor arguments {sorted(n.tensor_args)} are not "
                      f"those its stages name {sorted(claimed)}{where}")
    try:
        hash(stages)
    except TypeError as exc:
        raise IRError(f"fused node #{n.id}: stage records are not hashable ({exc}){where}") \
            from None
