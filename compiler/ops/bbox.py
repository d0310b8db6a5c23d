"""Bounding-box ops: ``bb_flip``.

Source: DALI 2.4 ``bb_flip`` (arguments, and the float32 arithmetic measured on its CPU
operator).
"""
from __future__ import annotations

from compiler.schema import ArgSpec, OpSchema, register


def _bb_infer(metas, args):
    m = metas[0]
    if m.dtype is not None and m.dtype != "float32":
        raise ValueError(f"expected float32 boxes, got {m.dtype}")
    return [m]


register(OpSchema(
    "bb_flip", ("input",), (
        ArgSpec("horizontal", "int", 1, tensor=True, doc="Non-zero flips horizontally."),
        ArgSpec("ltrb", "bool", False,
                doc="Boxes are ``[left, top, right, bottom]`` (True) or ``[x, y, width, "
                    "height]`` (False)."),
        ArgSpec("vertical", "int", 0, tensor=True, doc="Non-zero flips vertically."),
    ), _bb_infer, public_name="bb_flip",
    doc="Mirrors bounding boxes given in relative coordinates (0..1): every 4 consecutive "
        "values are one box. Source: DALI ``bb_flip``."))
