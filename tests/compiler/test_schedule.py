from compiler.passes.schedule import schedule
from tests.compiler._graphs import graph, leaf, node


def test_two_independent_branches_get_two_lanes_with_a_wait():
    x, y = leaf(), leaf()
    a1 = node("flip", [x])
    a2 = node("copy", [a1.outputs[0]])
    b1 = node("flip", [y])
    b2 = node("copy", [b1.outputs[0]])
    join = node("arithmetic", [a2.outputs[0], b2.outputs[0]],
                {"op": "add", "operands": (("t", 0), ("t", 1))})
    plan = schedule(graph([join.outputs[0]]), max_lanes=2)
    lane = {s.node.id: s.lane for s in plan.steps}
    assert lane[a1.id] == lane[a2.id] != lane[b1.id] == lane[b2.id]
    assert plan.num_lanes == 2
    step = next(s for s in plan.steps if s.node is join)
    other = b2 if lane[join.id] == lane[a2.id] else a2
    assert step.waits == [other.id]
    # a valid sequential order: every producer before its consumer
    pos = {s.node.id: i for i, s in enumerate(plan.steps)}
    assert pos[a1.id] < pos[a2.id] < pos[join.id] and pos[b1.id] < pos[b2.id] < pos[join.id]


def test_max_lanes_one_gives_single_lane_without_waits():
    x, y = leaf(), leaf()
    a, b = node("flip", [x]), node("flip", [y])
    plan = schedule(graph([a.outputs[0], b.outputs[0]]), max_lanes=1)
    assert {s.lane for s in plan.steps} == {0} and all(not s.waits for s in plan.steps)
