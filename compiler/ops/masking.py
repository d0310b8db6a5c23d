"""Masking and pasting ops: ``erase``, ``paste``, ``grid_mask``, ``jitter``, ``water``,
``multi_paste`` (its kernel: ``runtime/kernels/cpu/multi_paste.py``).

Source: DALI 2.4's operators of the same names (argument names and defaults from its schema;
region rounding, fill conversion and errors measured on its CPU backend; see
``runtime/kernels/cpu/masking.py``).
"""
from __future__ import annotations

import math

from compiler.schema import REQUIRED, ArgSpec, OpSchema, register

_ERASE_TYPES = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "int64", "uint64",
                "float16", "float32")


def _erase_infer(metas, args):
    m = metas[0]
    if m.dtype is not None and m.dtype not in _ERASE_TYPES:
        raise ValueError(f"unsupported data type {m.dtype} (expected one of "
                         f"{', '.join(_ERASE_TYPES)})")
    if m.layout and "F" in m.layout:
        raise ValueError(f"sequences (layout {m.layout!r}) are not supported")
    names = args.get("axis_names")
    if names and m.layout:
        missing = [c for c in names if c not in m.layout]
        if missing:
            raise ValueError(f"axis_names {names!r} name axes missing from the input "
                             f"layout {m.layout!r}")
    return [m]


register(OpSchema(
    "erase", ("input",), (
        ArgSpec("anchor", "float[]", None, tensor=True,
                doc="Start of the erased regions, one coordinate per axis of ``axes`` / "
                    "``axis_names`` and region (``(y0, x0, y1, x1, ...)`` for the default "
                    "``HW``); absolute pixels unless normalized, or the regions' centers with "
                    "``centered_anchor``. Not set: nothing is erased."),
        ArgSpec("axes", "int[]", None,
                doc="Indices of the axes the coordinates refer to (used when ``axis_names`` "
                    "is not given)."),
        ArgSpec("axis_names", "layout", None,
                doc="Layout letters of the axes the coordinates refer to (default ``HW`` "
                    "when ``axes`` is not given either)."),
        ArgSpec("centered_anchor", "bool", False,
                doc="``anchor`` is the center of each region rather than its start."),
        ArgSpec("fill_value", "float[]", None,
                doc="Value of the erased pixels (default 0): one value, or one per channel "
                    "(the layout's ``C`` axis); converted to the input type like ``cast``."),
        ArgSpec("normalized", "bool", False,
                doc="Both ``anchor`` and ``shape`` are fractions of the sample's extents."),
        ArgSpec("normalized_anchor", "bool", False,
                doc="``anchor`` is a fraction of the sample's extents."),
        ArgSpec("normalized_shape", "bool", False,
                doc="``shape`` is a fraction of the sample's extents."),
        ArgSpec("shape", "float[]", None, tensor=True,
                doc="Extent of the erased regions, laid out like ``anchor``. A region covers "
                    "``[floor(anchor), floor(anchor + shape))`` per axis, clipped to the "
                    "sample; a non-positive extent erases nothing."),
    ), _erase_infer, public_name="erase",
    doc="Erases (fills) rectangular regions of the samples, e.g. random erasing / cutout. Each "
        "sample may have any number of regions (per-sample ``anchor`` / ``shape``). Source: "
        "DALI ``erase``."))


def _paste_infer(metas, args):
    m = metas[0]
    if m.dtype is not None and m.dtype != "uint8":
        raise ValueError(f"expected uint8 images, got {m.dtype}")
    if m.ndim is not None and m.ndim != 3 or (m.layout and m.layout != "HWC"):
        raise ValueError(f"expected HWC images, got {m.ndim}-D samples with layout "
                         f"{m.layout!r}")
    fill = args.get("fill_value")
    n = args.get("n_channels")
    n = 3 if n is None else n
    if fill is not None and len(fill) not in (1, n):
        raise ValueError(f'Argument "fill_value" expects either a single value or a '
                         f"list of {n} elements. {len(fill)} given.")
    return [m.with_(layout="HWC")]


register(OpSchema(
    "paste", ("input",), (
        ArgSpec("fill_value", "float[]", REQUIRED,
                doc="Color of the canvas: one value or ``n_channels`` values (converted to "
                    "uint8 like ``cast``)."),
        ArgSpec("min_canvas_size", "float", 0.0, tensor=True,
                doc="Smallest canvas height and width (after ``ratio``)."),
        ArgSpec("n_channels", "int", 3, doc="Number of channels of the images."),
        ArgSpec("paste_x", "float", 0.5, tensor=True,
                doc="Horizontal position of the image on the canvas, 0 (left) to 1 (right)."),
        ArgSpec("paste_y", "float", 0.5, tensor=True,
                doc="Vertical position of the image on the canvas, 0 (top) to 1 (bottom)."),
        ArgSpec("ratio", "float", REQUIRED, tensor=True,
                doc="Canvas size relative to the image (at least 1): the canvas is "
                    "``max(floor(H * ratio), floor(min_canvas_size))`` by the same for W."),
    ), _paste_infer, public_name="paste",
    doc="Pastes each uint8 HWC image onto a larger canvas of ``fill_value`` (zoom-out "
        "augmentation): the image's top-left corner lands at "
        "``floor(paste_y * (canvas_h - H)), floor(paste_x * (canvas_w - W))``. Source: DALI "
        "``paste``."))


def _grid_mask_infer(metas, args):
    m = metas[0]
    if m.dtype is not None and m.dtype not in ("uint8", "int16", "int32", "float32"):
        raise ValueError(f"unsupported input type {m.dtype} (expected uint8, int16, int32 or "
                         f"float32, as DALI)")
    if m.ndim is not None and m.ndim != 3 or (m.layout and m.layout != "HWC"):
        raise ValueError(f"expected HWC images, got {m.ndim}-D samples with "
                         f"layout {m.layout!r}")
    return [m.with_(layout="HWC")]


register(OpSchema(
    "grid_mask", ("input",), (
        ArgSpec("angle", "float", 0.0, tensor=True,
                doc="Rotation of the grid, in radians."),
        ArgSpec("ratio", "float", 0.5, tensor=True,
                doc="Side of a black square relative to ``tile``."),
        ArgSpec("shift_x", "float", 0.0, tensor=True,
                doc="Horizontal shift of the (rotated) grid, in pixels."),
        ArgSpec("shift_y", "float", 0.0, tensor=True,
                doc="Vertical shift of the (rotated) grid, in pixels."),
        ArgSpec("tile", "int", 100, tensor=True,
                doc="Period of the grid, in pixels (positive)."),
    ), _grid_mask_infer, public_name="grid_mask",
    doc="Sets the pixels of a grid of squares to zero (GridMask augmentation) in HWC images: "
        "pixel ``(x, y)`` is zeroed when both ``(x cos a - y sin a - shift_x) / tile`` and "
        "``(x sin a + y cos a - shift_y) / tile`` have a fractional part below ``ratio``. "
        "Source: DALI ``grid_mask``."))


def _jitter_infer(metas, args):
    m = metas[0]
    if m.dtype is not None and m.dtype in ("float64", "bool"):
        raise ValueError(f"unsupported input type {m.dtype}")
    if m.ndim is not None and m.ndim != 3 or (m.layout and m.layout != "HWC"):
        raise ValueError(f"expected HWC images, got {m.ndim}-D samples with layout "
                         f"{m.layout!r}")
    n = args.get("nDegree")
    if n is not None and n < 1:
        raise ValueError(f"nDegree must be at least 1; got {n}")
    interp = args.get("interp_type")
    if interp is not None and interp not in ("nn", "linear"):
        raise ValueError(f"interp_type must be nn or linear; got {interp}")
    return [m.with_(layout="HWC")]


register(OpSchema(
    "jitter", ("input",), (
        ArgSpec("fill_value", "float", 0.0,
                doc="Value of the pixels whose source lies outside the image (converted to "
                    "the image type like ``cast``)."),
        ArgSpec("interp_type", "interp", "nn",
                doc="Interpolation (nn or linear; the displacements are whole pixels, so both "
                    "give the same result)."),
        ArgSpec("mask", "int", 1, tensor=True,
                doc="1: apply the augmentation; 0: leave the sample unchanged."),
        ArgSpec("nDegree", "int", 2,
                doc="Each pixel moves by up to half of this, in x and y independently: "
                    "whole-pixel offsets uniform in ``[-(nDegree // 2), nDegree - 1 - "
                    "nDegree // 2]``."),
        ArgSpec("_seeds", "any", None),
    ), _jitter_infer, traits=frozenset({"random"}), public_name="jitter",
    doc="Performs a random jitter augmentation of HWC images: every output pixel copies the "
        "input pixel at a random whole-pixel offset (all channels together), or "
        "``fill_value`` when that lies outside the image. Source: DALI ``jitter`` (a GPU-only "
        "operator in DALI 2.4; ndd's CPU kernel follows its documented semantics and draws "
        "from ndd's generators, see docs/semantics.md)."))


def _water_infer(metas, args):
    m = metas[0]
    if m.dtype is not None and m.dtype not in ("uint8", "float32"):
        raise ValueError(f"unsupported input type {m.dtype} (expected uint8 or float32, as "
                         f"DALI)")
    if m.ndim is not None and m.ndim != 3 or (m.layout and m.layout != "HWC"):
        raise ValueError(f"expected HWC images, got {m.ndim}-D samples with layout "
                         f"{m.layout!r}")
    return [m.with_(layout="HWC")]


register(OpSchema(
    "water", ("input",), (
        ArgSpec("ampl_x", "float", 10.0, doc="Amplitude of the wave in the x direction."),
        ArgSpec("ampl_y", "float", 10.0, doc="Amplitude of the wave in the y direction."),
        ArgSpec("fill_value", "float", 0.0,
                doc="Color of the areas outside the source image (converted like ``cast``)."),
        ArgSpec("freq_x", "float", 2 * math.pi / 128,
                doc="Frequency of the wave in the x direction (default 2 pi / 128)."),
        ArgSpec("freq_y", "float", 2 * math.pi / 128,
                doc="Frequency of the wave in the y direction (default 2 pi / 128)."),
        ArgSpec("interp_type", "interp", "nn", doc="Interpolation: nn or linear."),
        ArgSpec("mask", "int", 1, tensor=True,
                doc="1: apply the augmentation; 0: leave the sample unchanged."),
        ArgSpec("phase_x", "float", 0.0, doc="Phase of the wave in the x direction."),
        ArgSpec("phase_y", "float", 0.0, doc="Phase of the wave in the y direction."),
    ), _water_infer, public_name="water",
    doc="Performs a water augmentation (a wave-shaped remap) of HWC images: output pixel "
        "``(x, y)`` reads the input at ``(x + ampl_x sin(freq_x y + phase_x), y + ampl_y "
        "cos(freq_y x + phase_y))``. Source: DALI ``water``."))


def _multi_paste_infer(metas, args):
    if args.get("in_ids") is not None and len(metas) != 1:
        raise ValueError(f"with `in_ids` exactly one input batch is expected, got {len(metas)}")
    m = metas[0]
    for k, other in enumerate(metas[1:], 1):
        if m.dtype is not None and other.dtype is not None and other.dtype != m.dtype:
            raise ValueError(f"all inputs must have the same type; input 0 is {m.dtype}, "
                             f"input {k} is {other.dtype}")
    if m.ndim not in (None, 3, 4):
        raise ValueError(f"The number of dimensions {m.ndim} does not match any of the allowed "
                         f"layouts for input 0. Valid layouts are: HWC, FHWC")
    for a, b in (("in_anchors", "in_anchors_rel"), ("out_anchors", "out_anchors_rel"),
                 ("shapes", "shapes_rel")):
        if args.get(a) is not None and args.get(b) is not None:
            raise ValueError(f"`{a}` and `{b}` are mutually exclusive")
    layout = m.layout if m.layout else ("HWC" if m.ndim == 3 else "FHWC" if m.ndim == 4
                                        else m.layout)
    return [m.with_(dtype=args.get("dtype") or m.dtype, layout=layout)]


register(OpSchema(
    "multi_paste", ("images",), (
        ArgSpec("dtype", "dtype", None, doc="Output type (default the input's)."),
        ArgSpec("in_anchors", "int[]", None, tensor=True,
                doc="(K, 2) [y, x] corners of the regions in their sources (default 0)."),
        ArgSpec("in_anchors_rel", "float[]", None, tensor=True,
                doc="``in_anchors`` relative to the source's extents (floored)."),
        ArgSpec("in_ids", "int[]", None, tensor=True,
                doc="(K,) the sample of the one input batch each region comes from."),
        ArgSpec("out_anchors", "int[]", None, tensor=True,
                doc="(K, 2) [y, x] corners of the regions on the canvas (default 0)."),
        ArgSpec("out_anchors_rel", "float[]", None, tensor=True,
                doc="``out_anchors`` relative to the canvas extents (floored)."),
        ArgSpec("output_size", "int[]", None, tensor=True,
                doc="(H, W) of the canvas (default: the inputs' common shape)."),
        ArgSpec("shapes", "int[]", None, tensor=True,
                doc="(K, 2) [h, w] of the regions (default: to the source's end)."),
        ArgSpec("shapes_rel", "float[]", None, tensor=True,
                doc="``shapes`` relative to the source's extents (rounded up)."),
    ), _multi_paste_infer, variadic=True, min_inputs=1, public_name="multi_paste",
    doc="Pastes K regions per output sample onto a zero canvas, in order (later regions "
        "cover earlier ones): from the samples ``in_ids`` of one input batch, or, without "
        "``in_ids``, region k from sample i of input k. HWC (or FHWC) inputs; converted to "
        "``dtype`` with DALI's rounding and saturation. Source: DALI 2.4 ``multi_paste``."))
