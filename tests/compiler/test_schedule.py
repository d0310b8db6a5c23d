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


def test_a_branch_on_other_outputs_of_a_multi_output_op_gets_its_own_lane():
    """random_bbox_crop -> (window -> image branch, boxes -> box branch): the box branch runs
    on its own lane on the CPU; a second reader of the *same* output stays on the lane."""
    from compiler.ir import Node
    from tests.compiler._graphs import IMG
    boxes = leaf()
    crop = Node("random_bbox_crop", [boxes], {}, None, [IMG, IMG, IMG], callsite="t.py:2")
    window, flipped_boxes, _labels = crop.outputs
    image = node("slice", [leaf(), window])
    box = node("bb_flip", [flipped_boxes])
    again = node("copy", [window])
    plan = schedule(graph([image.outputs[0], box.outputs[0], again.outputs[0]]), max_lanes=2)
    lane = {s.node.id: s.lane for s in plan.steps}
    assert lane[image.id] == lane[crop.id] == lane[again.id] != lane[box.id]
    step = next(s for s in plan.steps if s.node is box)
    assert step.waits == [crop.id]


def test_the_branch_lane_is_not_the_producers_even_after_round_robin():
    """Lanes opened before (a source op on lane 1) must not wrap the branch onto the
    producer's lane: the image branch of the SSD loader is recorded after the box branch."""
    from compiler.ir import Node
    from tests.compiler._graphs import IMG
    crop = Node("random_bbox_crop", [leaf()], {}, None, [IMG, IMG], callsite="t.py:2")
    flip = Node("random.coin_flip", [], {}, None, [IMG], callsite="t.py:3")
    box = node("bb_flip", [crop.outputs[1], flip.outputs[0]])
    image = node("slice", [leaf(), crop.outputs[0]])
    plan = schedule(graph([box.outputs[0], image.outputs[0]]), max_lanes=2)
    lane = {s.node.id: s.lane for s in plan.steps}
    assert lane[box.id] != lane[image.id]       # the two branches overlap
