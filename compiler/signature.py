"""Graph signatures: what a compiled plan depends on, so equal graphs compile once.

The signature lists, in topological order, each node's op, device, constant arguments (without
the per-call random seeds), and where each input comes from (an earlier node's output by
position, or a leaf described by its metadata), plus which values are requested. Two graphs
recorded by the same loop body on batches of the same size have the same signature.
"""
from __future__ import annotations

from compiler.ir import Graph, freeze


def graph_signature(graph: Graph) -> tuple:
    pos: dict[int, tuple] = {}
    leaves: dict[int, int] = {}
    items = []

    def ref(v):
        r = pos.get(v.id)
        if r is not None:
            return r
        k = leaves.setdefault(v.id, len(leaves))
        m = v.meta
        return ("leaf", k, m.dtype, m.ndim, m.layout, str(m.device), m.batch_size)

    for i, n in enumerate(graph.nodes):
        args = freeze({k: v for k, v in n.args.items() if k != "_seeds"})
        outs = tuple((v.meta.dtype, v.meta.ndim, v.meta.layout, v.meta.batch_size)
                     for v in n.outputs)
        items.append((n.op, str(n.device), args, tuple(ref(v) for v in n.inputs),
                      tuple((k, ref(v)) for k, v in sorted(n.tensor_args.items())), outs))
        for j, v in enumerate(n.outputs):
            pos[v.id] = ("node", i, j)
    outs = tuple(ref(v) for v in graph.outputs)
    return (tuple(items), outs)
