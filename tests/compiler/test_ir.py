"""The IR keeps its own links: users follow every rewiring, and no Node <-> Value cycle is made."""
import gc
import weakref

from compiler.ir import Graph, clone_graph
from tests.compiler._graphs import graph, leaf, node

ADD = {"op": "add", "operands": (("t", 0), ("t", 1))}


def test_users_follow_construction_and_rewiring():
    x, y = leaf(), leaf()
    a = node("flip", [x])
    b = node("arithmetic", [a.outputs[0], x], ADD)
    m = node("crop_mirror_normalize", [x], tensor_args={"mirror": a.outputs[0]})
    assert x.users == [a, b, m] and a.outputs[0].users == [b, m]
    b.inputs = (y, y)                      # assigning inputs updates old and new values
    assert x.users == [a, m] and y.users == [b] and a.outputs[0].users == [m]
    m.tensor_args = {"mirror": y}
    assert a.outputs[0].users == [] and y.users == [b, m]
    assert m.replace_input_with(y, x) and m.inputs == (x,) and m.tensor_args["mirror"] is x
    assert y.users == [b] and x.users == [a, m]
    assert not m.replace_input_with(y, x)  # m no longer reads y


def test_graph_users_and_replace_all_uses_with_stay_inside_the_graph():
    x = leaf()
    a = node("flip", [x])
    b = node("flip", [x])
    c = node("arithmetic", [a.outputs[0], b.outputs[0]], ADD)
    outside = node("copy", [b.outputs[0]])         # pending work nobody asked for
    g = graph([c.outputs[0], b.outputs[0]])
    assert outside not in g and c in g
    assert g.users(b.outputs[0]) == [c] and b.outputs[0].users == [c, outside]
    assert g.producer_of(b.outputs[0]) is b and g.producer_of(x) is None
    assert g.replace_all_uses_with(b.outputs[0], a.outputs[0]) == [c]
    assert c.inputs == (a.outputs[0], a.outputs[0]) and g.outputs[1] is a.outputs[0]
    assert outside.inputs == (b.outputs[0],)         # outside the graph: untouched
    assert g.users(a.outputs[0]) == [c]


def test_dead_readers_leave_the_users_and_nothing_needs_the_garbage_collector():
    """Users are weak references: once computed values drop their producer links (as the
    runtime does), dropping the handles frees nodes and batches by reference counting alone,
    even though the long-lived input still lists its readers."""
    gc.disable()
    try:
        x = leaf()
        a = node("flip", [x])
        b = node("copy", [a.outputs[0]])
        refs = [weakref.ref(o) for o in (a, b, a.outputs[0], b.outputs[0])]
        assert x.users == [a] and a.outputs[0].users == [b]
        for n in (a, b):                   # computed: data set, producer links dropped
            for v in n.outputs:
                v.data, v.producer = [object()], None
        del a, b, n, v
        assert all(r() is None for r in refs)
        assert x.users == []
        for _ in range(100):               # many short-lived readers of one value
            r = node("flip", [x])
            r.outputs[0].producer = None
        del r
        assert x.users == []
    finally:
        gc.enable()


def test_clone_shares_leaves_without_disturbing_the_original_users():
    x = leaf()
    a = node("flip", [x])
    g = graph([a.outputs[0]])
    c = clone_graph(g)
    assert c.nodes[0] is not a and c.nodes[0].id == a.id
    assert g.users(x) == [a] and c.users(x) == [c.nodes[0]]
    assert x.users == [a, c.nodes[0]]       # both read the shared leaf (same node id)


def test_membership_follows_the_node_list():
    x = leaf()
    a = node("flip", [x])
    g = Graph([], [a.outputs[0]])
    assert a not in g and g.membership_is_current()
    g.nodes = [a]
    assert a in g and g.producer_of(a.outputs[0]) is a
    g.nodes.append(node("copy", [x]))    # edited in place: the checker notices
    assert not g.membership_is_current()
