"""Lane assignment: independent branches of the DAG go to different lanes.

On the CPU a lane is a worker thread; on a GPU a CUDA stream. A node continues the lane of its
first input's producer when it is that producer's first consumer. A node without inputs opens a
new lane (up to ``max_lanes``, then lanes are reused round-robin). A further consumer of a
producer stays on the producer's lane on the CPU (a thread per fan-out would cost more than it
gives), unless it reads only *other outputs* of a multi-output producer than the lane's own
consumer does: that is an independent branch (``random_bbox_crop``'s boxes and labels, read by
``bb_flip`` / ``box_encoder``, beside the crop window the image decode reads), which gets a lane
of its own. On a GPU every further consumer opens a new lane (a stream is cheap and lets
independent kernels overlap). Edges between lanes become waits. The lane is recorded in
``node.meta["lane"]``.
"""
from __future__ import annotations

from compiler.ir import Graph
from compiler.plan import Plan, Step


def schedule(graph: Graph, max_lanes: int = 2) -> Plan:
    lane_of: dict[int, int] = {}          # node id -> lane
    continued: dict[int, set] = {}        # producer id -> outputs its lane's consumer reads
    next_lane = 0
    steps = []
    for node in graph.nodes:
        inputs = [(p, v.index) for v in node.all_inputs()
                  if (p := graph.producer_of(v)) is not None]
        preds = [p for p, _ in inputs]
        lane = None
        for p in preds:
            if p.id not in continued:
                lane = lane_of[p.id]
                continued[p.id] = {i for q, i in inputs if q is p}
                break
        if lane is None:
            if preds and node.device.kind == "cpu" and not _other_outputs_only(
                    preds[0], inputs, continued):
                lane = lane_of[preds[0].id]
            else:
                lane = next_lane % max(1, max_lanes)
                next_lane += 1
                if preds and lane == lane_of[preds[0].id] and max_lanes > 1:
                    lane = next_lane % max_lanes     # a branch: not its producer's lane
                    next_lane += 1
        lane_of[node.id] = lane
        node.meta["lane"] = lane
        waits = sorted({p.id for p in preds if lane_of[p.id] != lane})
        steps.append(Step(node, lane, waits))
    return Plan(steps=steps, graph=graph)


def _other_outputs_only(producer, inputs, continued) -> bool:
    """Whether the consumer reads, of its first producer (a multi-output one), only outputs
    that the consumer continuing the producer's lane does not read (an independent branch)."""
    if len(producer.outputs) < 2:
        return False
    read = {i for q, i in inputs if q is producer}
    return not read & continued.get(producer.id, set())
