"""Helpers building small IR graphs by hand (no front end) for the pass tests."""
from compiler import ops  # noqa: F401  (declares the schemas)
from compiler.ir import Graph, Node, Value, ValueMeta

IMG = ValueMeta(dtype="uint8", ndim=3, layout="HWC", batch_size=2)
ENC = ValueMeta(dtype="uint8", ndim=1, layout="", batch_size=2)


def leaf(meta=IMG):
    return Value(meta, data=[object()] * meta.batch_size)


def node(op, inputs, args=None, meta=IMG, tensor_args=None, site="t.py:1"):
    return Node(op, inputs, args or {}, tensor_args, [meta], callsite=site)


def graph(outputs):
    return Graph.from_outputs(outputs)
