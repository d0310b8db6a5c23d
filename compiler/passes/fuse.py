"""Fusion: the one rewrite driver over the tables ``compiler.fusion_rules.RULES`` (images)
and ``compiler.fusion_rules_audio.RULES`` (audio), tried in that order.

Generic legality (every rule): the intermediate value is not a graph output, is read by no node
of the graph but the consumer (as its first input, or any regular input for a rule with
``any_input``), both nodes run on one device, and the producer has a single output (a rule
with ``all_outputs``: each of its outputs is read by the consumer alone, on the CPU). A chain on
a GPU fuses only under the rules whose fused op has a GPU kernel for it, with their GPU-only
checks (``compiler.fusion_rules_gpu``). Then the rule's own check runs. Applied fusions and
refusals are returned as notes (``("fuse", "applied <rule>: ...")`` / ``("fuse", "refused
<rule> at file:line: <reason>")``) and the applied rewrites as
:class:`compiler.passes.result.FusionDecision` s. Runs to a fixed point, so chains of more
than two nodes fuse step by step.
"""
from __future__ import annotations

from compiler import fusion_rules, fusion_rules_audio, fusion_rules_gpu
from compiler.fusion_rules import Rule
from compiler.ir import Graph, Node
from compiler.passes.result import FusionDecision, PassResult

RULES: tuple[Rule, ...] = fusion_rules.RULES + fusion_rules_audio.RULES
_BY_NAME = {r.name: r for r in RULES}


def edge_refusal(graph: Graph, producer: Node, consumer: Node, rule: Rule) -> str | None:
    """The generic reason ``producer -> consumer`` cannot fuse under ``rule``, or None."""
    if rule.all_outputs:
        return _outputs_refusal(graph, producer, consumer)
    if len(producer.outputs) != 1:
        return f"{producer.op} has {len(producer.outputs)} outputs"
    v = producer.outputs[0]
    if any(o is v for o in graph.outputs):
        return f"the intermediate %{v.id} is requested as an output"
    # A value merely held by a live user handle does not block fusion: its producer chain is
    # left intact, so if the user asks for it later it is recomputed on demand (liveness is
    # known from weak references to the handles).
    others = {n.id for n in graph.users(v) if n is not consumer}
    if others:
        return f"the intermediate %{v.id} is also read by {len(others)} other node(s)"
    if producer.device != consumer.device:
        return (f"{producer.op} runs on {producer.device} and {consumer.op} on "
                f"{consumer.device} (a copy between them)")
    if producer.device.kind != "cpu":
        reason = fusion_rules_gpu.refusal(rule.name, producer, consumer)
        if reason is not None:
            return reason
    if not rule.any_input and (not consumer.inputs or consumer.inputs[0] is not v
                               or any(t is v for t in consumer.tensor_args.values())):
        return f"the intermediate %{v.id} is not only the consumer's first input"
    if producer.meta.get("no_fuse") or consumer.meta.get("no_fuse"):
        return "fusion disabled for this node"
    return None


def _outputs_refusal(graph: Graph, producer: Node, consumer: Node) -> str | None:
    """Generic legality of an ``all_outputs`` rule: every output of ``producer`` is read by
    ``consumer`` alone and none is a graph output; one CPU device; fusion allowed."""
    for v in producer.outputs:
        if any(o is v for o in graph.outputs):
            return f"the intermediate %{v.id} is requested as an output"
        others = {n.id for n in graph.users(v) if n is not consumer}
        if others:
            return f"the intermediate %{v.id} is also read by {len(others)} other node(s)"
    if producer.device != consumer.device or producer.device.kind != "cpu":
        return f"{producer.op} runs on {producer.device} and {consumer.op} on {consumer.device}"
    if producer.meta.get("no_fuse") or consumer.meta.get("no_fuse"):
        return "fusion disabled for this node"
    return None


def _splice(graph: Graph, producer: Node, consumer: Node, fused: Node) -> None:
    """Put ``fused`` where ``consumer`` was and drop ``producer`` (topological order kept:
    the fused node reads only the producer's and the consumer's other inputs)."""
    graph.nodes = [fused if n is consumer else n for n in graph.nodes if n is not producer]


def _next_fusion(graph: Graph, refused: set, notes: list) -> tuple[Rule, Node, Node] | None:
    """The first legal (rule, producer, consumer) in graph order; refusals are noted once."""
    for consumer in graph.nodes:
        for inp in consumer.inputs:
            producer = graph.producer_of(inp)
            if producer is None or inp.data is not None:
                continue
            for rule in RULES:
                if not rule.matches(producer, consumer):
                    continue
                reason = (edge_refusal(graph, producer, consumer, rule)
                          or rule.check(producer, consumer))
                if reason is None:
                    return rule, producer, consumer
                key = (rule.name, producer.id, consumer.id)
                if key not in refused:
                    refused.add(key)
                    notes.append(("fuse", f"refused {rule.name} at {consumer.callsite}: "
                                          f"{reason}"))
    return None


def fuse(graph: Graph) -> PassResult:
    """Apply the fusion rules until none applies; the graph is rewritten in place."""
    decisions: list[FusionDecision] = []
    notes: list[tuple[str, str]] = []
    refused: set[tuple] = set()
    while (found := _next_fusion(graph, refused, notes)) is not None:
        rule, producer, consumer = found
        decisions.append(FusionDecision(rule.name, graph.nodes.index(producer),
                                        graph.nodes.index(consumer)))
        fused = rule.rewrite(producer, consumer)
        _splice(graph, producer, consumer, fused)
        notes.append(("fuse", f"applied {rule.name}: #{producer.id} {producer.op} + "
                              f"#{consumer.id} {consumer.op} -> #{fused.id} {fused.op} "
                              f"({' + '.join(fused.meta['fused_from'])})"))
    return PassResult(graph, bool(decisions), notes, decisions=tuple(decisions))


def replay(graph: Graph, decisions: tuple[FusionDecision, ...]) -> PassResult:
    """Re-apply the decisions of :func:`fuse` on a graph with the same signature (the plan
    cache): each rewrite at the node positions recorded when it was first applied."""
    for rule_name, pp, cp in decisions:
        producer, consumer = graph.nodes[pp], graph.nodes[cp]
        fused = _BY_NAME[rule_name].rewrite(producer, consumer)
        _splice(graph, producer, consumer, fused)
    return PassResult(graph, bool(decisions), [], decisions=tuple(decisions))
