"""Rule ``resize->color``: a resize feeding a colour chain becomes the first stage of the
``fused.color`` node (hand-built graphs: the stage records, the decisions, the refusals and
their reasons); ``ndd.explain`` shows the SSD chain as one node; the classification chains
(decode -> resize / random_resized_crop -> cmn) keep their ``fused.image`` plans."""
import numpy as np

import ndd
from compiler.checker import check_graph
from compiler.fusion_rules import RULES
from compiler.ir import ValueMeta, stages_of
from compiler.passes.fuse import fuse
from tests.compiler._graphs import ENC, IMG, graph, leaf, node

SCALAR = ValueMeta("float32", 0, "", batch_size=2)
RULE = {r.name: r for r in RULES}["resize->color"]


def _ssd_graph(img=IMG, out_meta=None):
    """resize (per-sample resize_x) -> hsv (per-sample hue) -> brightness_contrast -> cmn."""
    x = leaf(img)
    rx, hue = leaf(SCALAR), leaf(SCALAR)
    r = node("resize", [x], {"resize_y": 30.0, "min_filter": "triangular"},
             meta=out_meta or img, tensor_args={"resize_x": rx})
    h = node("hsv", [r.outputs[0]], {"dtype": "uint8"}, meta=out_meta or img,
             tensor_args={"hue": hue})
    b = node("brightness_contrast", [h.outputs[0]], {"contrast": 1.5}, meta=out_meta or img)
    c = node("crop_mirror_normalize", [b.outputs[0]], {"mean": (1.0, 2.0, 3.0)},
             meta=IMG.with_(dtype="float32", layout="CHW"))
    return x, rx, hue, r, c


def test_resize_heads_the_colour_chain():
    x, rx, hue, r, c = _ssd_graph()
    res = fuse(graph([c.outputs[0]]))
    (f,) = res.graph.nodes
    assert f.op == "fused.color" and f.inputs == (x,) and f.outputs == c.outputs
    assert [d.rule for d in res.decisions] == ["resize->color", "color->color",
                                               "color->crop_mirror_normalize"]
    assert [s.name for s in stages_of(f)] == ["resize#0", "hsv#1", "brightness_contrast#2",
                                              "crop_mirror_normalize#3"]
    assert f.meta["fused_from"] == ["resize", "hsv", "brightness_contrast",
                                    "crop_mirror_normalize"]
    s0 = stages_of(f)[0]
    assert (s0.arg("_in"), s0.arg("_out"), s0.arg("_layout")) == ("uint8", "uint8", "HWC")
    assert s0.arg("resize_y") == 30.0 and s0.arg("min_filter") == "triangular"
    assert s0.tensor_arg("resize_x") == "resize#0.resize_x"
    assert f.tensor_args["resize#0.resize_x"] is rx and f.tensor_args["hsv#1.hue"] is hue
    check_graph(res.graph)
    assert hash(f.key())


def test_resize_into_an_already_fused_chain():
    """The consumer may be a fused.color node (e.g. one built before the resize edge)."""
    x = leaf(IMG)
    r = node("resize", [x], {"size": (20.0, 20.0)})
    h = node("hue", [leaf(IMG)], {"hue": 5.0})
    b = node("brightness", [h.outputs[0]], {"brightness": 1.2})
    chain = fuse(graph([b.outputs[0]])).graph.nodes[0]
    assert chain.op == "fused.color"
    chain.inputs = (r.outputs[0],)
    assert RULE.matches(r, chain) and RULE.check(r, chain) is None
    f = RULE.rewrite(r, chain)
    assert [s.name for s in stages_of(f)] == ["resize#0", "hue#0", "brightness#1"]
    assert f.inputs == (x,)
    # a second resize in front of it is refused
    r2 = node("resize", [leaf(IMG)], {"size": (40.0, 40.0)})
    assert "already starts with a resize" in RULE.check(r2, f)


def _refusals(res):
    return [m for k, m in res.notes if m.startswith("refused resize->color")]


def test_refused_for_sequences_and_unknown_dtypes():
    seq = ValueMeta("uint8", 4, "FHWC", batch_size=2)
    *_, c = _ssd_graph(img=seq)
    res = fuse(graph([c.outputs[0]]))
    assert any("layout 'FHWC'" in m and "only HWC" in m for m in _refusals(res)), res.notes
    assert "resize" in [n.op for n in res.graph.nodes]

    unknown = IMG.with_(dtype=None)
    *_, c = _ssd_graph(out_meta=unknown)
    res = fuse(graph([c.outputs[0]]))
    assert any("dtype is not known" in m for m in _refusals(res)), res.notes


def test_refused_when_the_resized_image_is_read_twice():
    x = leaf(IMG)
    r = node("resize", [x], {"size": (20.0, 20.0)})
    h = node("hsv", [r.outputs[0]], {"hue": 3.0})
    m = node("flip", [r.outputs[0]], {"horizontal": 1})
    res = fuse(graph([h.outputs[0], m.outputs[0]]))
    assert any("also read by 1 other node" in m for m in _refusals(res)), res.notes
    assert [n.op for n in res.graph.nodes].count("resize") == 1


def test_decode_then_resize_keeps_its_fused_image():
    """decode -> resize fuses first (a region decode): the resize is then inside a
    fused.image, which this rule does not take (the classification plans are unchanged)."""
    d = node("decoders.image", [leaf(ENC)], {"output_type": "RGB"})
    r = node("resize", [d.outputs[0]], {"resize_shorter": 256.0})
    h = node("hsv", [r.outputs[0]], {"hue": 3.0})
    res = fuse(graph([h.outputs[0]]))
    assert [n.op for n in res.graph.nodes] == ["fused.image", "hsv"]
    assert [d.rule for d in res.decisions] == ["decode->resize"]


def test_explain_shows_the_ssd_chain_as_one_node():
    rng = np.random.default_rng(1)
    imgs = [rng.integers(0, 256, (29 + i, 33 - i, 3), dtype=np.uint8) for i in range(2)]
    with ndd.EvalMode.deferred:
        b = ndd.as_batch(imgs, layout="HWC")
        x = ndd.resize(b, resize_x=16, resize_y=16, min_filter=ndd.types.INTERP_TRIANGULAR)
        x = ndd.hsv(x, hue=ndd.random.uniform(range=(-18, 18), batch_size=2), saturation=1.3)
        x = ndd.brightness_contrast(x, brightness=1.1, contrast=0.9)
        x = ndd.crop_mirror_normalize(x, crop=(16, 16), mean=[1, 2, 3], std=[50, 60, 70],
                                      mirror=ndd.random.coin_flip(batch_size=2))
        text = ndd.explain(x)
    compiled = text.split("== compiled")[1].split("== passes")[0]
    body = [ln for ln in compiled.splitlines() if " = " in ln]
    assert [ln.split(" = ")[1].split("[")[0] for ln in body] == [
        "random.uniform", "random.coin_flip", "fused.color"]
    assert "fused: resize + hsv + brightness_contrast + crop_mirror_normalize" in compiled
    assert "applied resize->color" in text
