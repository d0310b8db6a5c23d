"""Filters: ``laplacian``, ``filter``, ``experimental.median_blur``, ``experimental.dilate``,
``experimental.erode`` (``gaussian_blur`` is in :mod:`compiler.ops.blur`).

Source: DALI 2.4's operators of these names (argument names and defaults from its schemas;
window coefficients, summation order, rounding and errors measured on its CPU operators;
``median_blur``, ``dilate`` and ``erode`` are GPU-only in DALI 2.4, built on CV-CUDA). The
arguments are checked by the kernels (``runtime/kernels/cpu/filters*.py``), where DALI checks
them: a bad value is an error of the run, a ``RuntimeError`` as DALI's.
"""
from __future__ import annotations

from compiler.schema import ArgSpec, OpSchema, register


def _same_or_dtype(metas, args):
    m = metas[0]
    return [m.with_(dtype=args.get("dtype") or m.dtype)]


def _same(metas, args):
    return [metas[0]]


register(OpSchema(
    "laplacian", ("input",), (
        ArgSpec("dtype", "dtype", None,
                doc="Output type: the input type (default) or float32."),
        ArgSpec("normalized_kernel", "bool", False,
                doc="Scale each partial derivative by ``2 ** (-s + n + 2)``, ``s`` the sum of "
                    "its window sizes and ``n`` the number of data axes. Not with ``scale``."),
        ArgSpec("scale", "float[]", None, tensor=True,
                doc="Factor of each partial derivative: one, or one per data axis (outermost "
                    "first); default 1."),
        ArgSpec("smoothing_size", "int[]", None, tensor=True,
                doc="Size of the smoothing windows across the derivative's direction, odd, 1 "
                    "to 31: one, or one per data axis; default: the derivative's "
                    "``window_size``."),
        ArgSpec("window_size", "int[]", None, tensor=True,
                doc="Size of the derivative window, odd, 3 to 31: one, or one per data axis; "
                    "default 3."),
    ), _same_or_dtype, public_name="laplacian",
    doc="Laplacian: the sum over the data axes (all but C and F) of the second partial "
        "derivatives, each a separable convolution with OpenCV's derivative window along its "
        "axis and binomial smoothing windows along the others, borders mirrored without "
        "repeating the edge (reflect 101), in float32. Source: DALI ``laplacian``."))

register(OpSchema(
    "filter", ("data", "filter", "fill_value"), (
        ArgSpec("anchor", "int[]", None, tensor=True,
                doc="Position of the filter over the input, one index per filter extent "
                    "(``-1``, the default: the middle, ``extent // 2``). Ignored in ``valid`` "
                    "mode."),
        ArgSpec("border", "str", "reflect_101",
                doc="Out-of-bounds positions: ``reflect_101`` (``dcb|abcd|cba``), "
                    "``reflect_1001`` (``cba|abcd|dcb``), ``wrap``, ``clamp`` or ``constant`` "
                    "(the ``fill_value`` input, default 0)."),
        ArgSpec("dtype", "dtype", None,
                doc="Output type: the input type (default) or float32; integers saturate."),
        ArgSpec("mode", "str", "same",
                doc="``same``: output of the input's size; ``valid``: only the positions "
                    "where the whole filter lies inside (each extent shrinks by "
                    "``filter_extent - 1``)."),
    ), _same_or_dtype, min_inputs=2, public_name="filter",
    doc="Correlates each image (HW, HWC, CHW and sequences of those) with a float32 2-D "
        "filter (one per sample, or per frame), accumulating in float32. Source: DALI "
        "``filter``."))

_MORPH_ARGS = (
    ArgSpec("anchor", "int[]", None, tensor=True,
            doc="Anchor of the structuring element, ``(x, y)``; ``(-1, -1)`` (default): its "
                "center."),
    ArgSpec("border_mode", "str", "constant",
            doc="``constant`` (a value that never wins: the type's lowest for dilate, highest "
                "for erode), ``replicate``, ``reflect``, ``reflect_101`` or ``wrap``."),
    ArgSpec("iterations", "int", 1, doc="Number of times the operation is applied."),
    ArgSpec("mask_size", "int[]", None, tensor=True,
            doc="Size of the rectangular structuring element, ``(width, height)``; default "
                "``(3, 3)``."),
)

register(OpSchema(
    "experimental.median_blur", ("input",), (
        ArgSpec("window_size", "int[]", None, tensor=True,
                doc="Size of the window, ``(width, height)`` or one value for both; odd; "
                    "default ``(3, 3)``."),
    ), _same, public_name="experimental.median_blur",
    doc="Replaces each pixel of each channel by the median of the window around it, edges "
        "replicated (HW, HWC, CHW and sequences of those). Source: DALI "
        "``experimental.median_blur`` (GPU-only in DALI 2.4)."))

register(OpSchema(
    "experimental.dilate", ("input",), _MORPH_ARGS, _same,
    public_name="experimental.dilate",
    doc="Grey-level dilation: the maximum over a rectangular structuring element (HW, HWC, "
        "CHW and sequences of those). Source: DALI ``experimental.dilate`` (GPU-only in DALI "
        "2.4)."))

register(OpSchema(
    "experimental.erode", ("input",), _MORPH_ARGS, _same,
    public_name="experimental.erode",
    doc="Grey-level erosion: the minimum over a rectangular structuring element (HW, HWC, "
        "CHW and sequences of those). Source: DALI ``experimental.erode`` (GPU-only in DALI "
        "2.4)."))
