"""DOT / JSON / text exports of small hand-built graphs (no Graphviz needed).

Golden files under tests/compiler/golden/ hold the text and DOT forms with ids renumbered in
order of appearance (ids come from a global counter). Regenerate with NDD_UPDATE_GOLDEN=1 and
review the diff by hand.
"""
import json
import os
import pathlib
import re

import pytest

from compiler.export.dot import KIND_COLOURS, DEAD_FILL, op_colour, to_dot
from compiler.export.json import to_json, to_json_text
from compiler.ir import ValueMeta, make_stage
from compiler.passes.schedule import schedule
from compiler.printer import format_graph
from tests.compiler._graphs import ENC, IMG, graph, leaf, node

GOLDEN = pathlib.Path(__file__).parent / "golden"
F32 = ValueMeta(dtype="float32", ndim=3, layout="CHW", batch_size=2)
B1 = ValueMeta(dtype="bool", ndim=0, layout="", batch_size=2)


def renumber(text: str) -> str:
    """Replace every id (``%12``, ``#12``, ``n12``, ``v12``, ``cluster_12``) by its rank of
    first appearance, so the text does not depend on the global id counter; the printer's
    column padding (which depends on the ids' widths) is collapsed to two spaces."""
    ranks: dict[str, int] = {}

    def sub(m):
        return m.group(1) + str(ranks.setdefault(m.group(2), len(ranks)))
    text = re.sub(r"(%|(?<!\")#|\bn|\bv|cluster_)(\d+)", sub, text)
    return re.sub(r"\) +# ", ")  # ", text)


def chain():
    """decode -> resize, scheduled (one lane)."""
    x = leaf(ENC)
    d = node("decoders.image", [x], {"output_type": "RGB"}, site="a.py:3")
    r = node("resize", [d.outputs[0]], {"size": (8, 8)}, site="a.py:4")
    g = graph([r.outputs[0]])
    schedule(g)
    return g


def fused_and_merged():
    """A fused node (decode + cmn) next to a CSE-merged flip, both read by an add."""
    x = leaf(ENC)
    f = node("fused.image", [x], {"stages": (make_stage("decoders.image", "decode", {}),
                                            make_stage("crop_mirror_normalize", "cmn", {}))},
             meta=F32, site="b.py:7")
    f.meta["fused_from"] = ["decoders.image", "crop_mirror_normalize"]
    y = leaf(F32)
    m = node("flip", [y], {"horizontal": 1}, meta=F32, site="b.py:9")
    m.meta["merged"] = ["flip #99 (b.py:10)"]
    s = node("arithmetic", [f.outputs[0], m.outputs[0]], {"op": "add"}, meta=F32, site="b.py:11")
    g = graph([s.outputs[0]])
    schedule(g)
    return g, f, m, s


def branch_with_tensor_arg():
    """coin_flip feeds cmn's per-sample ``mirror``; two lanes."""
    x = leaf(IMG)
    c = node("random.coin_flip", [], {"probability": 0.5}, meta=B1, site="c.py:2")
    n = node("crop_mirror_normalize", [x], {"crop": (4, 4)}, meta=F32,
             tensor_args={"mirror": c.outputs[0]}, site="c.py:3")
    g = graph([n.outputs[0]])
    schedule(g)
    return g, c, n


CASES = {"chain": lambda: chain(), "fused_merged": lambda: fused_and_merged()[0],
         "branch": lambda: branch_with_tensor_arg()[0]}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("kind", ["txt", "dot"])
def test_golden(name, kind):
    g = CASES[name]()
    text = renumber(format_graph(g) + "\n" if kind == "txt" else to_dot(g))
    path = GOLDEN / f"{name}.{kind}"
    if os.environ.get("NDD_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


def test_renumber_is_by_first_appearance():
    assert renumber('%7 = f(%3) #7 n3 v7 cluster_9 "#555555"') == \
        '%0 = f(%1) #0 n1 v0 cluster_2 "#555555"'
    assert renumber("x = f(%3)      # a.py:1") == "x = f(%0)  # a.py:1"


def _node_line(dot: str, dot_id: str) -> str:
    m = re.search(rf"^\s*{dot_id} \[(.*)\]$", dot, re.M)
    assert m, f"{dot_id} not in DOT"
    return m.group(1)


def test_dot_fused_node_is_a_cluster_with_one_box_per_stage():
    g, f, m, s = fused_and_merged()
    dot = to_dot(g)
    assert dot.count("subgraph cluster_") == 1
    body = dot.split(f"subgraph cluster_{f.id} {{")[1].split("}")[0]
    assert "decoders.image + crop_mirror_normalize" in body
    assert f'fillcolor="{KIND_COLOURS["decoders"]}"' in _node_line(dot, f"n{f.id}_0")
    assert f'fillcolor="{KIND_COLOURS["crop_mirror_normalize"]}"' in _node_line(dot, f"n{f.id}_1")
    assert f"n{f.id}_0 -> n{f.id}_1" in body
    # edges enter the first stage and leave the last
    leaf_id = f.inputs[0].id
    assert re.search(rf"v{leaf_id} -> n{f.id}_0 ", dot)
    assert re.search(rf"n{f.id}_1 -> n{s.id} ", dot)


def test_dot_labels_colours_and_merged():
    g, f, m, s = fused_and_merged()
    dot = to_dot(g, shapes={s.outputs[0].id: "3x(4..6)x5"})
    lab = _node_line(dot, f"n{s.id}")
    assert lab.startswith('label="arithmetic\\n%' + str(s.outputs[0].id) + " f32[CHW] 3x(4..6)x5")
    assert "cpu  lane 0" in lab and "b.py:11" in lab
    assert f'fillcolor="{KIND_COLOURS["arithmetic"]}"' in lab
    ml = _node_line(dot, f"n{m.id}")
    assert "merged: flip #99 (b.py:10)" in ml and 'peripheries="2"' in ml
    assert re.search(rf"n{s.id} -> out \[label=\"%{s.outputs[0].id}\"\]", dot)


def test_dot_tensor_argument_edge_and_lanes():
    g, c, n = branch_with_tensor_arg()
    dot = to_dot(g)
    assert re.search(rf'n{c.id} -> n{n.id} \[label="mirror=%{c.outputs[0].id}", style="dotted"\]',
                     dot)
    assert f"lane {c.meta['lane']}" in _node_line(dot, f"n{c.id}")


def test_dot_dead_nodes_are_greyed():
    x = leaf(IMG)
    keep = node("flip", [x], site="d.py:1")
    dead = node("resize", [x], {"size": (2, 2)}, site="d.py:2")
    g = graph([keep.outputs[0]])
    dot = to_dot(g, dead=[dead])
    line = _node_line(dot, f"n{dead.id}")
    assert f'fillcolor="{DEAD_FILL}"' in line and "dashed" in line and "(dead: removed)" in line
    assert re.search(rf"v{x.id} -> n{dead.id} .*dashed", dot)


def test_op_colour_is_stable_and_per_kind():
    assert op_colour("decoders.image") == op_colour("decoders.image_crop") == \
        KIND_COLOURS["decoders"]
    assert op_colour("my_custom.op") == op_colour("my_custom.other")
    assert re.fullmatch(r"#[0-9a-f]{6}", op_colour("zzz"))


def test_json_export_matches_the_graph():
    g, c, n = branch_with_tensor_arg()
    doc = json.loads(to_json_text(g))
    assert doc["format"] == "ndd-graph/2"
    assert [d["id"] for d in doc["nodes"]] == [c.id, n.id]
    cmn = doc["nodes"][1]
    assert cmn["op"] == "crop_mirror_normalize" and cmn["args"] == {"crop": [4, 4]}
    assert cmn["tensor_args"] == {"mirror": c.outputs[0].id}
    assert cmn["inputs"] == [n.inputs[0].id]
    assert cmn["outputs"][0] == {"id": n.outputs[0].id, "dtype": "float32", "ndim": 3,
                                 "layout": "CHW", "device": "cpu", "batch_size": 2}
    assert doc["leaves"][0]["id"] == n.inputs[0].id
    assert doc["outputs"] == [n.outputs[0].id]
    assert to_json(g)["nodes"][0]["lane"] == c.meta["lane"]


def test_fused_stages_are_printed_and_exported_from_their_records():
    x, flip = leaf(ENC), leaf(B1)
    stages = (make_stage("decoders.image", "decode", {"output_type": "RGB"}),
              make_stage("crop_mirror_normalize", "cmn", {"crop": (4, 4), "std": None},
                         {"mirror": "cmn.mirror"}))
    f = node("fused.image", [x], {"stages": stages}, meta=F32, tensor_args={"cmn.mirror": flip})
    f.meta["fused_from"] = ["decoders.image", "crop_mirror_normalize"]
    text = format_graph(graph([f.outputs[0]]))
    assert f"fused.image[decode{{output_type=RGB}}, cmn{{crop=(4, 4)}}](%{x.id}, " \
           f"cmn.mirror=%{flip.id})" in text
    (doc,) = to_json(graph([f.outputs[0]]))["nodes"]
    assert doc["args"] == {} and doc["tensor_args"] == {"cmn.mirror": flip.id}
    assert doc["stages"] == [
        {"op": "decoders.image", "name": "decode", "args": {"output_type": "RGB"},
         "tensor_args": {}},
        {"op": "crop_mirror_normalize", "name": "cmn", "args": {"crop": [4, 4], "std": None},
         "tensor_args": {"mirror": "cmn.mirror"}}]
