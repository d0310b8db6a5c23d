"""Schemas of fused ops: created only by the ``fuse`` pass (``compiler/fusion_rules.py``).

They are real ops with kernels (``runtime/kernels/cpu/fused.py``) so a fused graph is checked,
printed and executed like any other; users never call them (their ``infer`` refuses).
"""
from __future__ import annotations

from compiler.schema import ArgSpec, OpSchema, register


def _internal(name):
    def infer(metas, args):
        raise ValueError(f"{name} is created by the compiler's fuse pass and cannot be called")
    return infer


register(OpSchema(
    "fused.image", ("input",), (
        ArgSpec("stages", "any", None,
                doc="The stages in order: compiler.ir.Stage records (names 'decode', 'rrc', "
                    "'resize', 'flip', 'cmn')."),
    ), _internal("fused.image"), traits=frozenset({"fused"}), devices=("cpu", "gpu"),
    doc="Image chain in one kernel: optional decode of only the needed region (ROI), optional "
        "resize or random_resized_crop (window drawn from the same per-sample seeds), optional "
        "crop_mirror_normalize written into one preallocated (N, ...) batch array. Each stage's "
        "arguments are in its Stage record (``compiler.ir.stages_of``). Bit-exact with the "
        "unfused chain."))

register(OpSchema(
    "elementwise_fused", ("operands",), (
        ArgSpec("program", "any", None,
                doc="Steps ``(op, operands, out_dtype)``; operands are ('t', input index), "
                    "('s', scalar) or ('r', step index); op 'cast' converts."),
    ), _internal("elementwise_fused"), traits=frozenset({"elementwise", "fused"}),
    variadic=True, min_inputs=1, devices=("cpu", "gpu"),
    doc="A chain of arithmetic/cast nodes evaluated per sample without intermediate batches; "
        "each step rounds to its own dtype exactly as the unfused node does."))

register(OpSchema(
    "fused.color", ("input",), (
        ArgSpec("stages", "any", None,
                doc="The original ops in order: compiler.ir.Stage records named "
                    "'<op>#<position>' "
                    "(optionally first a resize, 'resize#0'; colour ops, cast, float32 scalar "
                    "arithmetic; last possibly normalize "
                    "or crop_mirror_normalize), each with its input / output dtype ('_in', "
                    "'_out') and input layout ('_layout')."),
    ), _internal("fused.color"), traits=frozenset({"fused"}), devices=("cpu", "gpu"),
    doc="A chain of colour ops (brightness_contrast, brightness, contrast, hsv, hue, "
        "saturation, color_twist), cast and float32 arithmetic with a scalar, optionally "
        "ending with normalize (given mean / stddev) or crop_mirror_normalize, in one pass per "
        "image: each stage's float32 arithmetic in its own order and its rounding to an "
        "integer output type, so the result is bit-identical with the unfused chain. A "
        "leading resize stage resamples each image (the resize kernel's own function) just "
        "before its colour stages run on it."))

register(OpSchema(
    "fused.window", ("input",), (
        ArgSpec("stages", "any", None,
                doc="Two compiler.ir.Stage records: 'crop' (the crop or slice with its window "
                    "arguments; '_meta', its output metadata; '_inputs', its number of regular "
                    "inputs, first among the node's) and 'op' (resize, rotate or warp_affine "
                    "with its arguments)."),
    ), _internal("fused.window"), traits=frozenset({"fused"}), variadic=True, min_inputs=1,
    doc="A crop or slice read by resize / rotate / warp_affine without a copy: the "
        "consumer's own kernel runs on views of the windows (the same pixels, so the same result as on "
        "the cropped copies)."))
