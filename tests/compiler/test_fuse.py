"""The fuse pass: rules applied / refused (with reasons) and bit-exact fused kernels."""
import io

import numpy as np
import pytest

import ndd
from compiler.ir import Graph, ValueMeta, stage_args, stage_names, stages_of
from compiler.passes.fuse import fuse
from compiler.pipeline import compile_graph, set_options
from runtime import executor
from tests.compiler._graphs import ENC, IMG, graph, leaf, node

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


@pytest.fixture(scope="module")
def jpegs():
    from PIL import Image
    from skimage import data
    out = []
    for img in (data.astronaut()[::2, ::2], data.coffee()[:150, :211], data.chelsea()):
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="JPEG", quality=90)
        out.append(np.frombuffer(buf.getvalue(), np.uint8))
    return out


def _run(fn, mode, enc, disable=()):
    ndd.random.set_seed(7)
    set_options(disable=disable)
    try:
        with mode:
            out = fn(ndd.as_batch(enc))
            res = [np.asarray(t) for t in out.tensors] if hasattr(out, "tensors") else out
            res = [np.asarray(out.tensors[i]) for i in range(out.batch_size)]
            plan = __import__("ndd._evaluate", fromlist=["x"]).last_plan()
    finally:
        set_options(disable=())
    return res, plan


def _notes(plan, kind):
    return [m for name, m in plan.notes if name == "fuse" and m.startswith(kind)]


def train(b):
    img = ndd.random_resized_crop(ndd.decoders.image(b), size=(64, 48))
    flip = ndd.random.coin_flip(batch_size=b.batch_size)
    return ndd.crop_mirror_normalize(img, mirror=flip, mean=MEAN, std=STD)


def val(b):
    img = ndd.resize(ndd.decoders.image(b), resize_shorter=80)
    return ndd.crop_mirror_normalize(img, crop=(60, 70), mean=MEAN, std=STD)


def decode_cmn(b):
    return ndd.crop_mirror_normalize(ndd.decoders.image(b), crop=(50, 40), crop_pos_x=0.2,
                                     mean=MEAN, std=STD, mirror=1, output_layout="HWC")


def decode_crop(b):
    return ndd.crop(ndd.decoders.image(b), crop=(33, 47), crop_pos_y=0.9)


def decode_rrc(b):
    return ndd.random_resized_crop(ndd.decoders.image(b), size=(40, 90))


def flip_cmn(b):
    img = ndd.flip(ndd.decoders.image(b), horizontal=1)
    return ndd.crop_mirror_normalize(img, mirror=ndd.random.coin_flip(batch_size=b.batch_size),
                                     dtype=ndd.float16 if hasattr(ndd, "float16") else "float16")


@pytest.mark.parametrize("fn,ops,rules", [
    (train, ["random.coin_flip", "fused.image"],
     ["decode->random_resized_crop", "resize->crop_mirror_normalize"]),
    (val, ["fused.image"], ["decode->resize", "resize->crop_mirror_normalize"]),
    (decode_cmn, ["fused.image"], ["decode->crop_mirror_normalize"]),
    (decode_crop, ["decoders.image_crop"], ["decode->crop"]),
    (decode_rrc, ["fused.image"], ["decode->random_resized_crop"]),
    (flip_cmn, ["decoders.image", "random.coin_flip", "fused.image"], ["flip->crop_mirror_normalize"]),
])
def test_image_fusions_are_applied_and_bit_exact(jpegs, fn, ops, rules):
    eager, _ = _run(fn, ndd.EvalMode.sync_cpu, jpegs)
    unfused, _ = _run(fn, ndd.EvalMode.deferred, jpegs, disable={"fuse"})
    fused, plan = _run(fn, ndd.EvalMode.deferred, jpegs)
    assert sorted(s.node.op for s in plan.steps) == sorted(ops)
    applied = _notes(plan, "applied")
    for r in rules:
        assert any(m.startswith(f"applied {r}:") for m in applied), applied
    for e, u, f in zip(eager, unfused, fused):
        assert e.dtype == f.dtype and e.shape == f.shape
        np.testing.assert_array_equal(e, u)
        np.testing.assert_array_equal(e, f)
    last = [s.node for s in plan.steps][-1]
    assert last.meta["fused_from"][-1] in ("crop_mirror_normalize", "crop",
                                            "random_resized_crop")


def test_cmn_output_is_one_preallocated_batch_array(jpegs):
    ndd.random.set_seed(1)
    with ndd.EvalMode.deferred:
        out = train(ndd.as_batch(jpegs))
        arr = np.asarray(out.torch())
    samples = out._value.data
    assert arr.shape == (3, 3, 64, 48)
    assert all(s.base is samples[0].base for s in samples)
    assert np.shares_memory(arr, samples[0]) and np.shares_memory(arr, samples[2])


def test_held_intermediate_is_fused_and_recomputed_on_demand(jpegs):
    with ndd.EvalMode.deferred:
        dec = ndd.decoders.image(ndd.as_batch(jpegs))
        out = ndd.crop(dec, crop=(20, 20))
        plan = compile_graph(Graph.from_outputs([out._value]), dry_run=True)
    assert _notes(plan, "applied decode->crop")
    assert [s.node.op for s in plan.steps] == ["decoders.image_crop"]
    with ndd.EvalMode.deferred:
        got_out = np.asarray(ndd.as_tensor(out))     # runs the fused ROI decode
        got_dec = [np.asarray(t) for t in dec]        # recomputed on demand
    with ndd.EvalMode.sync_cpu:
        ref_dec = ndd.decoders.image(ndd.as_batch(jpegs))
        ref_out = np.asarray(ndd.as_tensor(ndd.crop(ref_dec, crop=(20, 20))))
    np.testing.assert_array_equal(got_out, ref_out)
    for a, b in zip(got_dec, ref_dec):
        np.testing.assert_array_equal(a, np.asarray(b))


def test_refused_when_intermediate_is_requested(jpegs):
    with ndd.EvalMode.deferred:
        dec = ndd.decoders.image(ndd.as_batch(jpegs))
        c1 = ndd.crop(dec, crop=(20, 20))
        c2 = ndd.flip(dec)
        v1, v2 = c1._value, c2._value
        del dec, c1, c2
        g = Graph.from_outputs([v1, v2])
        plan = compile_graph(g, dry_run=True)
    assert any("also read by 1 other" in m for m in _notes(plan, "refused decode->crop"))


def test_refused_for_unsupported_arguments(jpegs):
    def pad(b):
        return ndd.crop(ndd.decoders.image(b), crop=(900, 20), out_of_bounds_policy="pad")

    def cmn_pad(b):
        img = ndd.resize(ndd.decoders.image(b), size=(30, 30))
        return ndd.crop_mirror_normalize(img, pad_output=True)

    def crop_resize(b):
        return ndd.resize(ndd.crop(ndd.decoders.image(b), crop=(40, 40)), size=(20, 20))
    for fn, rule, why in ((pad, "decode->crop", "out_of_bounds_policy='pad'"),
                          (cmn_pad, "resize->crop_mirror_normalize", "pad_output"),
                          (crop_resize, "crop->resize", "outside the crop")):
        eager, _ = _run(fn, ndd.EvalMode.sync_cpu, jpegs)
        got, plan = _run(fn, ndd.EvalMode.deferred, jpegs)
        assert any(why in m for m in _notes(plan, f"refused {rule}")), plan.notes
        for e, g in zip(eager, got):
            np.testing.assert_array_equal(e, g)


def test_elementwise_chain_fuses_with_intermediate_dtypes():
    rng = np.random.default_rng(0)
    data = [rng.integers(0, 255, (4, 5), dtype=np.uint8) for _ in range(3)]
    def fn(b):
        y = (b + 7) * 3           # uint8 + Python int -> int32 (DALI promotion)
        z = ndd.cast(y, dtype="float32") / 4 - 1.5
        return ndd.cast(z, dtype="int16")
    eager, _ = _run(fn, ndd.EvalMode.sync_cpu, data)
    got, plan = _run(fn, ndd.EvalMode.deferred, data)
    assert [s.node.op for s in plan.steps] == ["elementwise_fused"]
    assert plan.steps[0].node.meta["fused_from"] == ["arithmetic", "arithmetic", "cast",
                                                     "arithmetic", "arithmetic", "cast"]
    for x, e, g in zip(data, eager, got):
        y = (x.astype(np.int32) + 7) * 3
        z = y.astype(np.float32) / np.float32(4) - np.float32(1.5)
        want = np.clip(np.where(z >= 0, np.floor(z + 0.5), np.ceil(z - 0.5)), -32768, 32767)
        np.testing.assert_array_equal(e, want.astype(np.int16))
        np.testing.assert_array_equal(g, e)
        assert g.dtype == np.int16


def test_fuse_on_empty_graph_is_noop():
    res = fuse(Graph([], []))
    assert res.graph.nodes == [] and res.notes == [] and not res.modified


def test_fused_image_node_carries_stage_records():
    """decode -> random_resized_crop -> cmn(mirror=per-sample) built by hand: one fused.image
    node whose stages are the three original ops with their own arguments."""
    x = leaf(ENC)
    flip = leaf(ValueMeta("bool", 0, "", batch_size=2))
    d = node("decoders.image", [x], {"output_type": "RGB"})
    r = node("random_resized_crop", [d.outputs[0]], {"size": (8, 8), "_seeds": (1, 2)})
    c = node("crop_mirror_normalize", [r.outputs[0]], {"mean": (1.0,), "dtype": "float32"},
             meta=IMG.with_(dtype="float32"), tensor_args={"mirror": flip})
    res = fuse(graph([c.outputs[0]]))
    (f,) = res.graph.nodes
    assert f.op == "fused.image" and f.outputs == c.outputs and f.inputs == (x,)
    assert [s.op for s in stages_of(f)] == f.meta["fused_from"] == [
        "decoders.image", "random_resized_crop", "crop_mirror_normalize"]
    decode, rrc, cmn = stages_of(f)
    assert decode.args == (("output_type", "RGB"),) and rrc.arg("size") == (8, 8)
    assert cmn.arg("dtype") == "float32" and cmn.arg("mirror") is None
    assert cmn.tensor_arg("mirror") == "cmn.mirror" and f.tensor_args["cmn.mirror"] is flip
    assert set(f.args) == {"stages", "_seeds"} and f.args["_seeds"] == (1, 2)
    assert hash(f.key()) and [d.rule for d in res.decisions] == [
        "decode->random_resized_crop", "resize->crop_mirror_normalize"]
    kernel_args = {**f.args, "cmn.mirror": ["per-sample flags"]}     # what the kernel gets
    assert stage_names(kernel_args) == ("decode", "rrc", "cmn")
    assert stage_args(kernel_args, "cmn") == {"mean": (1.0,), "dtype": "float32",
                                              "mirror": ["per-sample flags"]}
    assert stage_args(kernel_args, "flip") == {}
