"""Filters: ``gaussian_blur``.

Source: DALI 2.4 ``gaussian_blur`` (arguments; kernel weights, border and summation order
measured on its CPU operator).
"""
from __future__ import annotations

from compiler.schema import ArgSpec, OpSchema, register


def _blur_infer(metas, args):
    m = metas[0]
    layout = m.layout or ""
    if layout and "C" in layout and layout.index("C") not in (len(layout) - 1,
                                                            1 if layout[0] == "F" else 0):
        raise ValueError(f"channels must be the first or the last data axis, got layout "
                         f"{layout!r}")
    return [m.with_(dtype=args.get("dtype") or m.dtype)]


register(OpSchema(
    "gaussian_blur", ("input",), (
        ArgSpec("dtype", "dtype", None, doc="Output type (default: the input type)."),
        ArgSpec("sigma", "float[]", None, tensor=True,
                doc="Sigma of the kernel: one for all data axes or one per data axis (outermost "
                    "first); per frame for sequences (``ndd.per_frame``). Default: from "
                    "``window_size``."),
        ArgSpec("window_size", "int[]", None, tensor=True,
                doc="Kernel diameter, one or one per data axis; default ``2 * ceil(3 * sigma) "
                    "+ 1``."),
    ), _blur_infer, public_name="gaussian_blur",
    doc="Blurs with a separable Gaussian kernel over the data axes (all but C and F), borders "
        "mirrored without repeating the edge (reflect 101). With only ``window_size``, "
        "``sigma = (radius - 1) * 0.3 + 0.8``, ``radius = (window_size - 1) / 2``. Source: DALI "
        "``gaussian_blur``."))
