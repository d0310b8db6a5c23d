"""Kernels of the fused ops created by the compiler's ``fuse`` pass (``compiler/fusion_rules``).

* ``fused.image``: decode (only the region the next stage reads) -> random_resized_crop / resize
  -> [flip folded into mirror] -> crop_mirror_normalize written into ONE preallocated
  ``(N, ...)`` array (samples are views ``out[i]``, so ``Batch.torch()`` needs no copy).
* ``elementwise_fused``: a chain of arithmetic/cast steps evaluated per sample.

Every kernel reproduces the unfused chain bit for bit: the same per-sample functions are called
with the same arguments, random windows are drawn from the same per-sample seeds, and an ROI
decode feeding a resize covers every source pixel the resize taps touch (the window widened by
the filter support, see :func:`source_region`) and is placed into a zero full-size canvas on
which the public ``resample`` runs unchanged, so taps, weights and summation order are those of
the unfused kernel.  The batch is cut into one chunk per pool thread; each chunk is ONE pool
task running all stages of its samples, stage by stage (no barrier between stages).
"""
from __future__ import annotations

import fcntl
import functools
import math
import threading

import numpy as np

from runtime.kernels.registry import per_sample, register, sample_args

_CROP = ("crop", "crop_h", "crop_w", "crop_pos_x", "crop_pos_y")


def _stage(a: dict, stage: str, names) -> dict:
    """The non-None arguments ``names`` of ``stage`` from the prefixed argument dict."""
    out = {}
    for k in names:
        v = a.get(f"{stage}.{k}")
        if v is not None:
            out[k] = v
    return out


def _layout(meta) -> str:
    return meta.layout or {3: "HWC", 2: "HW"}.get(meta.ndim, "")


# ------------------------------------------------------------------ ROI decode + resample
# Support radius of each filter in units of max(1, window / out) (DALI's filter widths, see
# ``runtime/kernels/cpu/resize.py``): linear/triangular r, gaussian ~r (2r taken), cubic 2r,
# lanczos3 3r; NN reads one pixel.  The margin added around the window is
# ``ceil(factor * max(1, window / out)) + 2`` pixels per side (the +2 covers the tap rounding).
_SUPPORT = {"nn": 1, "linear": 1, "triangular": 1, "gaussian": 2, "cubic": 2, "lanczos3": 3}
_INTERP_NAMES = {0: "nn", 1: "linear", 2: "cubic", 3: "lanczos3", 4: "triangular",
                 5: "gaussian", "nearest": "nn", "bilinear": "linear", "bicubic": "cubic",
                 "lanczos": "lanczos3", "triangle": "triangular"}


# A region decode still entropy-decodes the whole JPEG (libjpeg-turbo skips scanlines by
# decoding them), so it saves only the IDCT/colour work outside the region; above this fraction
# of the image area the canvas copy costs more than it saves and the image is decoded whole.
_ROI_MAX_AREA = 0.8


def _filter_name(value):
    """Normalised filter name of an interp argument (``None`` -> ``None``), or ``"?"`` when the
    value is not understood here (the caller then falls back to a full decode)."""
    if value is None:
        return None
    name = getattr(value, "name", value)
    if isinstance(name, str):
        name = name.lower()
        name = name[len("interp_"):] if name.startswith("interp_") else name
    try:
        name = _INTERP_NAMES.get(name, name)
    except TypeError:
        return "?"
    return name if name in _SUPPORT else "?"


def _support_factor(interp: dict) -> int | None:
    """Largest support factor of the filters ``interp`` may use; ``None``: unknown filter."""
    key = (interp.get("interp_type", "linear"), interp.get("min_filter"),
           interp.get("mag_filter"))
    try:
        return _support_of(*key)
    except TypeError as exc:        # an unhashable filter argument: no caching
        if "unhashable" not in str(exc):
            raise
        return _support_of.__wrapped__(*key)


@functools.lru_cache(maxsize=64)
def _support_of(interp_type, min_filter, mag_filter) -> int | None:
    kind = _filter_name(interp_type) or "linear"
    names = {_filter_name(min_filter) or kind, _filter_name(mag_filter) or kind}
    if "?" in names:
        return None
    return max(_SUPPORT[n] for n in names)


def source_region(full_hw, params, factor: int) -> tuple[int, int, int, int]:
    """Conservative ``(y0, x0, y1, x1)`` source box read by ``resample(image, params)``.

    Parameters
    ----------
    full_hw : tuple of int
        ``(H, W)`` of the full (oriented) image.
    params : ResizeParams
        From ``resize_output_shape(full_hw, ...)`` (window ``y0..y1`` x ``x0..x1``, output
        ``out_h`` x ``out_w``; the window may be flipped: start > end).
    factor : int
        Filter support factor (see ``_SUPPORT``).

    Returns
    -------
    tuple of int
        End-exclusive box clamped to the image; the window widened on each side by
        ``ceil(factor * max(1, |window| / out)) + 2`` pixels.
    """
    box = []
    for lo, hi, out, n in ((params.y0, params.y1, params.out_h, full_hw[0]),
                           (params.x0, params.x1, params.out_w, full_hw[1])):
        a, b = min(lo, hi), max(lo, hi)
        margin = math.ceil(factor * max(1.0, (b - a) / max(out, 1))) + 2
        box.append((max(0, math.floor(a) - margin), min(n, math.ceil(b) + margin)))
    (y0, y1), (x0, x1) = box
    return y0, x0, y1, x1


def roi_resample(data, name, full_hw, params, interp: dict, dec: dict, dtype):
    """``resample(decode(data), params, ...)`` decoding only the source region it reads.

    The region (:func:`source_region`) is decoded and placed at its position in a full-size
    canvas (a reused per-thread buffer, see :func:`_canvas`); ``resample`` then runs unchanged
    on the canvas, so the taps, weights and summation order are those of the unfused kernel and
    the result is bit-exact as long as the region covers every pixel it reads.  Falls back to a
    full decode when the filter is unknown, the output is empty or the region covers more than
    ``_ROI_MAX_AREA`` of the image.

    Parameters
    ----------
    data : numpy.ndarray or bytes
        Encoded image.
    name : str or None
        Sample name for error messages.
    full_hw : tuple of int
        Oriented ``(H, W)`` of the image (``image_info``).
    params : ResizeParams
        ``resize_output_shape(full_hw, ...)``.
    interp : dict
        ``interp_type``/``min_filter``/``mag_filter``/``antialias`` arguments of the resize.
    dec : dict
        Decoder arguments (``output_type``, ``adjust_orientation``; uint8 only).
    dtype : optional
        Output dtype of the resize.

    Returns
    -------
    numpy.ndarray
        HWC ``(out_h, out_w, C)``, exactly ``resample(decode(data, **dec), params, ...)``.
    """
    from runtime.codecs.image import decode
    region = _roi_region(full_hw, params, interp)
    img = decode(data, roi=region, sample=name, **dec)
    return _roi_finish(img, region, full_hw, params, interp, dtype)


def _roi_region(full_hw, params, interp: dict):
    """The box to decode for ``resample(decode(...), params)``, or None for the whole image."""
    factor = _support_factor(interp)
    if factor is None or not (params.out_h and params.out_w):
        return None
    y0, x0, y1, x1 = source_region(full_hw, params, factor)
    if (y1 - y0) * (x1 - x0) > _ROI_MAX_AREA * full_hw[0] * full_hw[1]:
        return None
    return y0, x0, y1, x1


def _roi_finish(part, region, full_hw, params, interp: dict, dtype):
    """``resample`` of the image whose ``region`` (None: all of it) was decoded as ``part``."""
    from runtime.kernels.cpu.resize import resample
    if region is None:
        return resample(part, params, dtype=dtype, layout="HWC", **interp)
    y0, x0, y1, x1 = region
    img = _canvas((full_hw[0], full_hw[1], part.shape[2]), part.dtype)
    img[y0:y1, x0:x1] = part
    res = resample(img, params, dtype=dtype, layout="HWC", **interp)
    return res.copy() if np.may_share_memory(res, img) else res


# Per-thread canvas, reused from sample to sample: a fresh full-size array per sample costs page
# faults (glibc hands freed heap tops back to the kernel), measured at ~0.3 ms per 400x400 image.
# Its pixels outside the decoded region are stale; resample never reads them (the region covers
# every tap), which the tests check with textured images.  Buffers above _CANVAS_KEEP bytes are
# not kept.
_CANVAS_KEEP = 32 << 20
_local = threading.local()


def _canvas(shape, dtype) -> np.ndarray:
    """A ``shape`` array of ``dtype`` for the calling thread (contents undefined)."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    if nbytes > _CANVAS_KEEP:
        return np.empty(shape, dtype)
    buf = getattr(_local, "canvas", None)
    if buf is None or buf.nbytes < nbytes:
        buf = _local.canvas = np.empty(max(nbytes, 1 << 20), np.uint8)
    return buf[:nbytes].view(dtype).reshape(shape)


def rrc_plan(data, name, a, i):
    """Plan of a fused decode -> random_resized_crop sample: what to decode, how to finish.

    The window is drawn exactly as the unfused kernel does (same per-sample seed ->
    ``random_crop_window`` on the oriented image size, ``image_info``).  Returns
    ``(todo, finish)``: ``decode(todo[0], roi=todo[1], sample=todo[2], **todo[3])`` decodes
    only the region read (:func:`_roi_region`; ``roi`` None: the whole image) and
    ``_roi_finish(part, *finish)`` gives the HWC result of ``random_resized_crop(decode(data))``.
    """
    from runtime.codecs.image import parse_image
    from runtime.kernels.cpu.crop_window import random_crop_window
    from runtime.kernels.cpu.random import sample_rng
    from runtime.kernels.cpu.resize_params import crop_resize_params
    data = parse_image(data, sample=name)      # parsed once: decode reuses the header
    info = data.info()
    H, W = info.height, info.width
    rng = sample_rng(a["_seeds"], i)
    y0, x0, h, w = random_crop_window((H, W), rng, random_area=a["rrc.random_area"],
                                      random_aspect_ratio=a["rrc.random_aspect_ratio"],
                                      num_attempts=a["rrc.num_attempts"])
    params = crop_resize_params((H, W), a["rrc.size"], y0, x0, y0 + h, x0 + w)
    interp = _stage(a, "rrc", ("interp_type", "min_filter", "mag_filter", "antialias"))
    dec = _stage(a, "decode", ("output_type", "dtype", "adjust_orientation"))
    region = _roi_region((H, W), params, interp)
    return (data, region, name, dec), (region, (H, W), params, interp, a.get("rrc.dtype"))


def resize_crop_plan(data, name, a):
    """Plan of a fused decode -> resize -> cmn-with-crop sample (``None``: not applicable).

    Only the part of the resize output inside the cmn window is computed
    (:func:`_resize_for_crop`), so only the source lines those output pixels read are
    decoded: along an axis resampled by torch's tent (integer window) every output line is
    computed, so all lines of its window; along a fractional axis the lines of the cropped
    outputs (+ the filter margin of :func:`source_region`).  Returns ``(todo, finish)`` as
    :func:`rrc_plan` does; ``finish = ("resize", region, full_hw, params, window, ra)`` for
    :func:`_resize_crop_finish`.
    """
    from runtime.codecs.image import parse_image
    from runtime.kernels.cpu.bindings import resize_size_args
    from runtime.kernels.cpu.crop_window import crop_window
    from runtime.kernels.cpu.resize_params import resize_output_shape
    dec = _stage(a, "decode", ("output_type", "dtype", "adjust_orientation"))
    ra = {k[7:]: v for k, v in a.items() if k.startswith("resize.")}
    data = parse_image(data, sample=name)      # parsed once: decode reuses the header
    info = data.info()
    full_hw = (info.height, info.width)
    params = resize_output_shape(full_hw, **resize_size_args(ra))
    oh, ow = params.out_h, params.out_w
    y0, x0, h, w = crop_window((oh, ow), **_stage(a, "cmn", _CROP))
    if not (0 <= y0 and 0 <= x0 and 0 < h and 0 < w and y0 + h <= oh and x0 + w <= ow):
        return None
    window = (y0, x0, h, w)
    region = _resize_crop_region(full_hw, params, window, ra, dec)
    return (data, region, name, dec), ("resize", region, full_hw, params, window, ra)


def _resize_crop_region(full_hw, params, window, ra: dict, dec: dict):
    """Source box ``(y0, x0, y1, x1)`` read by ``resample(..., out_window=window)`` on the
    uint8 tent paths, or None (decode everything: other filters, dtypes or channel counts
    take paths that read the whole window, or the box is most of the image)."""
    from runtime.kernels.cpu.resize import _torchable
    if dec.get("output_type", "RGB") not in ("RGB", "BGR") or \
            dec.get("dtype") not in (None, "uint8") or ra.get("dtype") not in (None, "uint8"):
        return None
    names = {_filter_name(ra.get(k)) for k in ("interp_type", "min_filter", "mag_filter")}
    if not names <= {None, "linear", "triangular"}:
        return None
    aa = bool(ra.get("antialias", True))
    oy0, ox0, ch, cw = window
    box = []
    for lo, hi, out, o0, n, full in ((params.y0, params.y1, params.out_h, oy0, ch, full_hw[0]),
                                     (params.x0, params.x1, params.out_w, ox0, cw, full_hw[1])):
        scale = (hi - lo) / out
        if _torchable("linear", lo, hi, full, out, aa):
            a, b = lo, hi                       # torch resamples the whole window
        else:
            a, b = lo + o0 * scale, lo + (o0 + n) * scale
        a, b = min(a, b), max(a, b)
        margin = math.ceil(max(1.0, abs(scale))) + 2
        box.append((max(0, math.floor(a) - margin), min(full, math.ceil(b) + margin)))
    (y0, y1), (x0, x1) = box
    if (y1 - y0) * (x1 - x0) > _ROI_MAX_AREA * full_hw[0] * full_hw[1]:
        return None
    return y0, x0, y1, x1


def _resize_crop_finish(part, region, full_hw, params, window, ra):
    """The cmn-window part of the resize of the image whose ``region`` (None: all of it)
    was decoded as ``part``; returns ``(image, cmn window)``."""
    from runtime.kernels.cpu.resize import resample
    img = part
    if region is not None:
        y0, x0, y1, x1 = region
        img = _canvas((full_hw[0], full_hw[1], part.shape[2]), part.dtype)
        img[y0:y1, x0:x1] = part
    res = resample(img, params, interp_type=ra.get("interp_type", "linear"),
                   antialias=ra.get("antialias", True), dtype=ra.get("dtype"),
                   min_filter=ra.get("min_filter"), mag_filter=ra.get("mag_filter"),
                   layout="HWC", out_window=window)
    if region is not None and np.may_share_memory(res, img):
        res = res.copy()
    return res, (0, 0, window[2], window[3])


# ------------------------------------------------------------------ fused.image
def _front_decode(ctx, inputs, args, i):
    """First phase of one sample: its arguments and the decode stage (if any).

    Returns ``[a, layout, x, k, window, finish]``: ``x`` the decoded image (or input sample;
    for decode -> rrc the pending decode ``todo`` of :func:`rrc_plan`), ``k`` the index of
    the next stage, ``window`` the cmn window of an ROI decode -> cmn, ``finish`` the pending
    ROI resample of a decode -> rrc (see :func:`rrc_plan`).
    """
    from runtime.kernels.cpu.bindings import _sample_name
    a = sample_args(ctx, args, i)
    stages = a["stages"]
    data = inputs[0]
    x = data[i] if len(data) > 1 else data[0]
    layout = "HWC" if stages[0] == "decode" else _layout(ctx.in_metas[0])
    window, finish, k = None, None, 0
    if stages[0] == "decode":
        from runtime.codecs.image import decode, parse_image
        from runtime.kernels.cpu.cmn import cmn_window_from_crop
        name = _sample_name(data, i)
        dec = _stage(a, "decode", ("output_type", "dtype", "adjust_orientation"))
        nxt = stages[1] if len(stages) > 1 else None
        if nxt == "rrc":
            (x, finish), k = rrc_plan(x, name, a, i), 2
        elif nxt == "resize" and len(stages) > 2 and stages[2] == "cmn":
            plan = resize_crop_plan(x, name, a)
            if plan is not None:
                (x, finish), k = plan, 2
            else:
                x, k = decode(x, sample=name, **dec), 1
        elif nxt == "cmn":
            x = parse_image(x, sample=name)    # parsed once: decode reuses the header
            info = x.info()
            y0, x0, h, w = cmn_window_from_crop((info.height, info.width),
                                                **_stage(a, "cmn", _CROP))
            x = decode(x, roi=(y0, x0, y0 + h, x0 + w), sample=name, **dec)
            window, k = (0, 0, h, w), 1
        else:
            x, k = decode(x, sample=name, **dec), 1
    return [a, layout, x, k, window, finish]


def _front_rest(state, i):
    """Second phase: the stages before cmn -> (image, layout, cmn window or None, flip, a)."""
    from runtime.kernels.cpu.bindings import _resize_sample, resize_size_args
    a, layout, x, k, window, finish = state
    if finish is not None and finish[0] == "resize":
        x, window = _resize_crop_finish(x, *finish[1:])
    elif finish is not None:
        x = _roi_finish(x, *finish)
    flip = 0
    stages = a["stages"]
    for j, st in enumerate(stages[k:], k):
        if st == "rrc":
            from runtime.kernels.cpu.crop_window import random_crop_window
            from runtime.kernels.cpu.random import sample_rng
            in_hw = x.shape[:2] if layout in ("HWC", "HW") else x.shape[1:3]
            rng = sample_rng(a["_seeds"], i)
            y0, x0, h, w = random_crop_window(in_hw, rng, random_area=a["rrc.random_area"],
                                              random_aspect_ratio=a["rrc.random_aspect_ratio"],
                                              num_attempts=a["rrc.num_attempts"])
            ra = {k2[4:]: v for k2, v in a.items() if k2.startswith("rrc.")}
            x = _resize_sample(x, layout, ra, {"size": a["rrc.size"], "roi_start": (y0, x0),
                                               "roi_end": (y0 + h, x0 + w)})
        elif st == "resize":
            ra = {k2[7:]: v for k2, v in a.items() if k2.startswith("resize.")}
            size_args = resize_size_args(ra)
            if window is None and j + 1 < len(stages) and stages[j + 1] == "cmn":
                x, window = _resize_for_crop(x, layout, ra, size_args, a)
            else:
                x = _resize_sample(x, layout, ra, size_args)
        elif st == "flip":
            flip = 1 if a.get("flip.horizontal", 1) else 0
        elif st == "cmn":
            break
    return x, layout, window, flip, a


def _resize_for_crop(x, layout, ra, size_args, a):
    """A resize whose output only feeds a cmn crop: ``(part, window)``.

    When the cmn window lies inside the resize output, only that part is resampled
    (``resample(..., out_window=...)``, bit-exact with slicing the full output: e.g. val's
    ``resize_shorter=256`` -> 224x224 centre crop computes ~60 % of the output) and the cmn
    window becomes the whole part; otherwise ``(full resize, None)``."""
    from runtime.kernels.cpu.bindings import _resize_sample
    from runtime.kernels.cpu.crop_window import crop_window
    from runtime.kernels.cpu.resize import resample
    from runtime.kernels.cpu.resize_params import resize_output_shape
    if layout not in ("HWC", "HW"):
        return _resize_sample(x, layout, ra, size_args), None
    params = resize_output_shape(x.shape[:2], **size_args)
    oh, ow = params.out_h, params.out_w
    y0, x0, h, w = crop_window((oh, ow), **_stage(a, "cmn", _CROP))
    if not (0 <= y0 and 0 <= x0 and 0 < h and 0 < w and y0 + h <= oh and x0 + w <= ow):
        return _resize_sample(x, layout, ra, size_args), None
    part = resample(x, params, interp_type=ra.get("interp_type", "linear"),
                    antialias=ra.get("antialias", True), dtype=ra.get("dtype"),
                    min_filter=ra.get("min_filter"), mag_filter=ra.get("mag_filter"),
                    layout=layout, out_window=(y0, x0, h, w))
    return part, (0, 0, h, w)


def _cmn_into(image, layout, window, a, flip, target):
    """crop_mirror_normalize of one sample written into ``target`` (its output array).

    The arguments are folded by the cached :func:`runtime.kernels.cpu.cmn_batch.cmn_plan`, so
    per sample only the GIL-free torch work of :func:`cmn_plan_into` remains (the arithmetic
    of the unfused kernel, bit for bit)."""
    from runtime.kernels.cpu.cmn import _mirror_flag
    from runtime.kernels.cpu.cmn_batch import cmn_plan, cmn_plan_into
    lay = layout or {3: "HWC", 2: "HW"}.get(image.ndim)
    c_axis = lay.find("C") if isinstance(lay, str) else -1
    plan = cmn_plan(lay, image.ndim, image.shape[c_axis] if c_axis >= 0 else None,
                    a.get("cmn.output_layout", "CHW"), a.get("cmn.mean", 0.0),
                    a.get("cmn.std", 1.0), a.get("cmn.scale", 1.0), a.get("cmn.shift", 0.0))
    mirror = _mirror_flag(a.get("cmn.mirror", 0)) != bool(flip)
    cmn_plan_into(plan, image, window, mirror, target)


def _cmn_shape(image, layout, window, a):
    """Output shape of the cmn stage: ``image``'s shape with the window's H and W, permuted
    to ``cmn.output_layout``."""
    out_layout = a.get("cmn.output_layout", "CHW")
    try:
        ah, aw, perm = _cmn_axes(layout, image.ndim, out_layout)
    except TypeError as exc:    # an unhashable layout argument: no caching
        if "unhashable" not in str(exc):
            raise
        ah, aw, perm = _cmn_axes.__wrapped__(layout, image.ndim, out_layout)
    shape = list(image.shape)
    shape[ah], shape[aw] = window[2], window[3]
    return tuple(shape[p] for p in perm)


@functools.lru_cache(maxsize=64)
def _cmn_axes(layout, ndim, out_layout):
    """``(H axis, W axis, output permutation)`` of a cmn stage (validated; cached)."""
    from runtime.kernels.cpu.cmn import resolve_output_layout
    from runtime.kernels.cpu.crop import layout_axes
    lay, axes = layout_axes(layout, ndim)
    _, perm = resolve_output_layout(lay, out_layout)
    return axes["H"], axes["W"], perm


# Samples per pool task: each task runs its samples stage by stage (all decodes, then all
# resizes, then all normalizations).  Running one stage's code on several samples in a row keeps
# it hot in the caches: measured ~10% less CPU than finishing each sample before the next (train
# chain, 2 cores); no barrier separates the stages of different tasks.
_CHUNKS_PER_THREAD = 1


def _chunks(n: int, threads: int) -> list[range]:
    """``range(n)`` split into about ``_CHUNKS_PER_THREAD * threads`` consecutive pieces."""
    parts = max(1, min(n, _CHUNKS_PER_THREAD * max(1, threads)))
    bounds = [n * j // parts for j in range(parts + 1)]
    return [range(bounds[j], bounds[j + 1]) for j in range(parts)]


def run_chunk(ctx, inputs, args, idx, target_for=None) -> list:
    """All stages of the samples ``idx`` of a ``fused.image`` node, stage by stage.

    ``target_for(i, shape)`` may return the array sample ``i``'s cmn output of ``shape`` is
    written into (a view of the batch array); None gives the sample its own array.  Used by
    the pool threads and, unchanged, by the process lanes (:func:`remote_claims`).
    """
    from runtime.codecs.image import decode
    from runtime.kernels.cpu.cast import to_numpy_dtype
    from runtime.kernels.cpu.crop import clip_window, layout_axes
    from runtime.kernels.cpu.crop_window import crop_window
    states = [_front_decode(ctx, inputs, args, i) for i in idx]
    for st in states:   # the planned ROI decodes, one after the other
        if st[5] is not None:
            todo = st[2]
            st[2] = decode(todo[0], roi=todo[1], sample=todo[2], **todo[3])
    fronts = [_front_rest(st, i) for st, i in zip(states, idx)]
    del states
    if args["stages"][-1] != "cmn":
        return [f[0] for f in fronts]
    dt = to_numpy_dtype(args.get("cmn.dtype", "float32"))
    out = []
    for i, (x, layout, window, flip, a) in zip(idx, fronts):
        if window is None:
            _, axes = layout_axes(layout, x.ndim)
            in_hw = (x.shape[axes["H"]], x.shape[axes["W"]])
            window = clip_window(crop_window(in_hw, **_stage(a, "cmn", _CROP)), in_hw, "error")
        shape = _cmn_shape(x, layout, window, a)
        target = target_for(i, shape) if target_for is not None else None
        if target is None:
            target = np.empty(shape, dt)
        _cmn_into(x, layout, window, a, flip, target)
        out.append(target)
    return out


def remote_claims(ctx_fields, in_spec, offsets, source_info, args, order, out_spec,
                  workers):
    """Process-lane entry point: run samples of the batch, claimed group by group.

    The encoded samples and the claim flags live in the shared input segment ``in_spec =
    (name, shape, dtype)`` (see :func:`_pack_inputs`): flag ``i`` (byte ``i``) is set once a
    lane took sample ``i``; sample ``k``'s bytes are ``[offsets[k], offsets[k + 1])``.  Every
    lane of the batch gets this same call and takes the next unclaimed samples of ``order``
    (costliest first) until none are left (:func:`_claim`, under an ``flock`` of the input
    segment's file, which each lane opened itself), so no lane idles while another still has
    a queue.
    A sample is never run twice: its cmn output is written in several in-place steps, which
    two lanes racing on the same target would compound.  cmn outputs of the expected shape are written into the shared batch
    ``out_spec``; returns ``{i: array}`` for every other result of the samples run here.
    """
    from runtime.buffers import attach_shared, shared_fd
    from runtime.kernels.registry import KernelContext
    from runtime.storage import SampleList
    ctx = KernelContext(None, *ctx_fields)
    buf = attach_shared(*in_spec)
    lock = shared_fd(in_spec[0])
    claims = buf[:ctx.batch_size]
    data = SampleList([buf[offsets[k]:offsets[k + 1]] for k in range(len(offsets) - 1)],
                      source_info)
    out = attach_shared(*out_spec) if out_spec is not None else None
    written = set()

    def target_for(i, shape):
        if out is not None and out.shape[1:] == shape:
            written.add(i)
            return out[i]
        return None
    results = {}
    try:
        while True:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                group = _claim(claims, order, workers)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
            if not group:
                return results
            for i, r in zip(group, run_chunk(ctx, [data], args, group, target_for)):
                if i not in written:
                    results[i] = r
    except BaseException:
        claims[:] = 1           # the batch failed: the other lanes stop taking samples
        raise


def _claim(claims, order, workers: int) -> list[int]:
    """Take the next group of unclaimed samples of ``order`` (sorted; call it under the
    claims lock): about a ``2 * workers``-th of what is left (guided self-scheduling: big
    groups while much is left keep the stage-by-stage cache reuse of :func:`run_chunk`,
    single samples at the end even out the lanes)."""
    free = [i for i in order if not claims[i]]
    if not free:
        return []
    group = free[:max(1, -(-len(free) // (2 * workers)))]
    claims[group] = 1
    return sorted(group)


def _pack_inputs(data, n: int):
    """The encoded samples copied into one shared segment after ``n`` zeroed claim flags.

    Returns ``(array, name, offsets)`` (keep ``array`` alive while the lanes use it), or
    None when a sample is not a byte buffer or no shared memory is available.  Segment sizes
    are rounded up to a power of two (at least 1 MB) so a few recycled segments serve every
    batch (:data:`runtime.buffers.input_pool`)."""
    from runtime.buffers import input_pool
    parts = []
    for x in data:
        if x.__class__ is not np.ndarray:
            try:
                x = np.frombuffer(memoryview(x), np.uint8)
            except TypeError:
                return None
        if x.dtype != np.uint8 or x.ndim != 1 or not x.flags.c_contiguous:
            return None
        parts.append(x)
    start = -(-n // 64) * 64
    offsets = [start]
    for x in parts:
        offsets.append(offsets[-1] + x.size)
    size = max(1 << 20, 1 << (offsets[-1] - 1).bit_length())
    buf, name = input_pool.shared_empty((size,), np.uint8)
    if name is None:
        return None
    buf[:n] = 0
    for x, o in zip(parts, offsets):
        buf[o:o + x.size] = x
    return buf, name, offsets


# Per fused node (its constant arguments and batch size): the per-sample output shape seen last
# time, so the next batch's shared output can be allocated before any sample is computed.
_shape_hints: dict = {}


def _hint_key(ctx, args):
    """The node's constant arguments (hashable values, see ``compiler.ir.Node``) and batch
    size; None when some argument is not hashable (no hint then)."""
    try:
        return hash((ctx.batch_size, tuple(sorted(
            (k, v) for k, v in args.items()
            if k != "_seeds" and k not in ctx.tensor_arg_names))))
    except TypeError:
        return None


def _remote(ctx, inputs, args, lanes, dt):
    """Run the batch on the process lanes: one :func:`remote_claims` call per lane (a pool
    thread waits for each), all sharing the packed inputs and the claim flags.  None when
    the inputs cannot be shared (the caller runs the batch on threads)."""
    from runtime.buffers import input_pool, shared_pool
    n = ctx.batch_size
    data = inputs[0]
    packed = _pack_inputs(data, n)
    if packed is None:
        return None
    in_buf, in_name, offsets = packed
    key = _hint_key(ctx, args)
    shape = _shape_hints.get(key) if args["stages"][-1] == "cmn" else None
    out, name = (shared_pool.shared_empty((n,) + shape, dt) if shape is not None
                 else (None, None))
    spec = (name, out.shape, out.dtype.str) if name is not None else None
    info = getattr(data, "source_info", None)
    fields = (ctx.in_metas, ctx.out_metas, set(ctx.tensor_arg_names), n, ctx.op)
    order = _cost_order(data, n)
    shared = [(input_pool, in_name)] + ([(shared_pool, name)] if name else [])
    in_spec = (in_name, in_buf.shape, in_buf.dtype.str)

    def call(_):
        return lanes.call("runtime.kernels.cpu.fused:remote_claims", fields, in_spec, offsets,
                          info, args, order, spec, lanes.n, shared=shared)
    found = {}
    for part in ctx.pool.map(call, lanes.n):
        found.update(part)
    del in_buf
    res = [found[i] if i in found else out[i] for i in range(n)]
    _remember_shape(key, res, args)
    return res


# Per-sample cost model of a fused decode chain for balancing the lanes: decoding is roughly
# proportional to the encoded size, plus a fixed part (resample, normalize) worth about this
# many encoded bytes.
_FIXED_COST_BYTES = 20_000


def _cost_order(data, n: int) -> list[int]:
    """The batch's sample indices, estimated costliest first (a broadcast single sample: in
    order).  Handing out the big samples first leaves the small ones to even out the lanes
    at the end (longest-processing-time-first list scheduling)."""
    if len(data) != n:
        return list(range(n))
    cost = [getattr(x, "nbytes", 0) + _FIXED_COST_BYTES for x in data]
    return sorted(range(n), key=cost.__getitem__, reverse=True)


def _remember_shape(key, res, args):
    if key is not None and args["stages"][-1] == "cmn" and res:
        first = res[0].shape
        if all(r.shape == first for r in res):
            _shape_hints[key] = first
            while len(_shape_hints) > 256:
                _shape_hints.pop(next(iter(_shape_hints)))


@register("fused.image")
def fused_image(ctx, inputs, args):
    """Run the stages of a ``fused.image`` node on the batch (see the module docstring).

    The batch is split into consecutive chunks, one task each, running all stages of its
    samples (no barrier between stages).  With a cmn stage, the first sample to reach it
    allocates the ``(N, ...)`` batch array from its output shape (under a lock); every sample
    of that shape writes its view ``out[i]`` directly, any other shape gets its own array.
    When the node decodes (its input is the encoded files) and process lanes are up
    (:mod:`runtime.proclanes`), the chunks run in worker processes writing into a
    shared-memory batch instead, with exactly the same per-sample code.
    """
    from runtime.buffers import batch_array
    from runtime.kernels.cpu.cast import to_numpy_dtype
    from runtime.proclanes import LaneDied, get_lanes
    n = ctx.batch_size
    threads = getattr(ctx.pool, "num_threads", 1)
    chunks = _chunks(n, threads)
    dt = to_numpy_dtype(args.get("cmn.dtype", "float32"))
    if args["stages"][0] == "decode" and len(chunks) > 1:
        lanes = get_lanes(threads)
        if lanes is not None:
            try:
                res = _remote(ctx, inputs, args, lanes, dt)
            except LaneDied:
                res = None      # lanes are off from now on; redo this batch on threads
            if res is not None:
                return [res]
    lock = threading.Lock()
    batch = []          # [out array] once allocated

    def target_for(i, shape):
        with lock:
            if not batch:
                batch.append(batch_array((n,) + shape, dt))
        out = batch[0]
        return out[i] if out.shape[1:] == shape else None

    def task(j):
        return run_chunk(ctx, inputs, args, chunks[j], target_for)
    res = [x for part in ctx.pool.map(task, len(chunks)) for x in part]
    _remember_shape(_hint_key(ctx, args), res, args)
    return [res]


# ------------------------------------------------------------------ elementwise_fused
@register("elementwise_fused")
@per_sample
def elementwise_fused(ctx, ins, a, i):
    """Evaluate the fused arithmetic/cast program on one sample (no handles, no batches)."""
    from runtime.kernels.cpu.arithmetic import apply
    from runtime.kernels.cpu.cast import cast
    results = []
    for op, operands, dt in a["program"]:
        vals = [ins[o[1]] if o[0] == "t" else results[o[1]] if o[0] == "r" else o[1]
                for o in operands]
        if op == "cast":
            results.append(cast(vals[0], dt))
        else:
            results.append(apply(op, *vals, out_dtype=dt))
    return results[-1]
