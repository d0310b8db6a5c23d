"""Fusion: rewrite producer -> consumer chains listed in ``compiler.fusion_rules.RULES``.

Generic legality (every rule): the intermediate value is not a graph output, is read by no node
but the consumer (as its first input), both nodes run on
the CPU, and the producer has a single output. Then the rule's own check runs. Applied fusions
and refusals are recorded in ``graph.notes`` (``("fuse", "applied <rule>: ...")`` /
``("fuse", "refused <rule> at file:line: <reason>")``). Runs to a fixed point, so chains of
more than two nodes fuse step by step.
"""
from __future__ import annotations

from compiler.fusion_rules import RULES, Rule
from compiler.ir import Graph, Node


def edge_refusal(graph: Graph, producer: Node, consumer: Node, readers: list[Node]) -> str | None:
    """The generic reason ``producer -> consumer`` cannot fuse, or None."""
    if len(producer.outputs) != 1:
        return f"{producer.op} has {len(producer.outputs)} outputs"
    v = producer.outputs[0]
    if any(o is v for o in graph.outputs):
        return f"the intermediate %{v.id} is requested as an output"
    # A value merely held by a live user handle does not block fusion: its producer chain is
    # left intact, so if the user asks for it later it is recomputed on demand (ARCHITECTURE:
    # liveness by weak references).
    others = {n.id for n in readers if n is not consumer}
    if others:
        return f"the intermediate %{v.id} is also read by {len(others)} other node(s)"
    if producer.device.kind != "cpu" or consumer.device.kind != "cpu":
        return "only CPU chains are fused"
    if consumer.op != "arithmetic" and (not consumer.inputs or consumer.inputs[0] is not v
                                        or any(t is v for t in consumer.tensor_args.values())):
        return f"the intermediate %{v.id} is not only the consumer's first input"
    if producer.meta.get("no_fuse") or consumer.meta.get("no_fuse"):
        return "fusion disabled for this node"
    return None


def _rules_for(producer: Node, consumer: Node) -> list[Rule]:
    return [r for r in RULES if producer.op in r.producer and consumer.op in r.consumer]


def replay(graph: Graph, decisions: list[tuple[str, int, int]]) -> Graph:
    """Re-apply fusion decisions recorded by :func:`fuse` on a graph with the same signature
    (the plan cache): ``(rule name, producer position, consumer position)`` in the node list
    as it was when each rewrite was applied."""
    by_name = {r.name: r for r in RULES}
    for name, pp, cp in decisions:
        producer, consumer = graph.nodes[pp], graph.nodes[cp]
        fused = by_name[name].rewrite(producer, consumer)
        _splice(graph, producer, consumer, fused)
    graph.decisions = list(decisions)
    return graph


def fuse(graph: Graph) -> Graph:
    """Apply the fusion rules until none applies; returns the same (rewritten) graph.

    The applied rewrites are recorded in ``graph.decisions`` for :func:`replay`.
    """
    decisions: list[tuple[str, int, int]] = []
    graph.decisions = decisions
    refused: set[tuple] = set()
    changed = True
    while changed:
        changed = False
        producer_of = {v.id: n for n in graph.nodes for v in n.outputs}
        readers = graph.consumers()
        for consumer in graph.nodes:
            for inp in consumer.inputs:
                producer = producer_of.get(inp.id)
                if producer is None or inp.data is not None:
                    continue
                for rule in _rules_for(producer, consumer):
                    reason = edge_refusal(graph, producer, consumer, readers.get(inp.id, []))
                    if reason is None:
                        reason = rule.check(producer, consumer)
                    if reason is not None:
                        key = (rule.name, producer.id, consumer.id)
                        if key not in refused:
                            refused.add(key)
                            graph.notes.append(("fuse", f"refused {rule.name} at "
                                                        f"{consumer.callsite}: {reason}"))
                        continue
                    decisions.append((rule.name, graph.nodes.index(producer),
                                      graph.nodes.index(consumer)))
                    fused = rule.rewrite(producer, consumer)
                    _splice(graph, producer, consumer, fused)
                    graph.notes.append(("fuse", f"applied {rule.name}: #{producer.id} "
                                                f"{producer.op} + #{consumer.id} {consumer.op} "
                                                f"-> #{fused.id} {fused.op} "
                                                f"({' + '.join(fused.meta['fused_from'])})"))
                    changed = True
                    break
                if changed:
                    break
            if changed:
                break
    return graph


def _splice(graph: Graph, producer: Node, consumer: Node, fused: Node) -> None:
    """Put ``fused`` where ``consumer`` was and drop ``producer`` (topological order kept:
    the fused node reads only the producer's and the consumer's other inputs)."""
    nodes = []
    for n in graph.nodes:
        if n is producer:
            continue
        nodes.append(fused if n is consumer else n)
    graph.nodes = nodes
