"""Region decoding and windowed resampling for the fused decode chains (``fused.image``).

* decode -> random_resized_crop: :func:`rrc_plan` draws the window as the unfused kernel
  does and decodes only the source region the resample reads (:func:`source_region`);
* decode -> resize -> crop_mirror_normalize with a crop: :func:`resize_crop_plan` computes
  only the cropped part of the resize (``resample(out_window=...)``) and decodes only the
  source lines that part reads.

A decoded region is placed at its position in a reused full-size canvas (:func:`canvas`) on
which the public ``resample`` runs unchanged, so taps, weights and summation order are those
of the unfused kernels (bit-exact, tested with noise-filled canvases).
"""
from __future__ import annotations

import functools
import math
import threading

import numpy as np

from compiler.ir import stage_args
from runtime.codecs.image import decode, parse_image, plain_jpeg
from runtime.kernels.caching import call_cached
from runtime.kernels.params.interp import FILTER_SUPPORT, filter_name
from runtime.kernels.params.resize_geometry import (crop_resize_params, resize_output_shape,
                                                    resize_size_args)
from runtime.kernels.params.seeds import SampleDoubles, seed_states
from runtime.kernels.params.windows import crop_args, crop_window, random_window, window_drawer
from runtime.kernels.registry import given

from .resize import resample, resample_part, resize_sample
from .resize_uint8 import torchable

__all__ = ["DECODE_ARGS", "INTERP_ARGS", "ROI_MAX_AREA", "source_region", "roi_resample",
           "roi_finish", "canvas", "rrc_plan", "resize_crop_plan", "resize_crop_finish",
           "resize_for_crop", "PlainTodo", "rrc_plan_plain", "PlainRRC"]

#: the arguments of a fused chain's decode stage
DECODE_ARGS = ("output_type", "dtype", "adjust_orientation")
#: the filter arguments of a resize / random_resized_crop stage
INTERP_ARGS = ("interp_type", "min_filter", "mag_filter", "antialias")


# ------------------------------------------------------------------ ROI decode + resample
# The margin added around the window is ``ceil(factor * max(1, window / out)) + 2`` pixels per
# side (the +2 covers the tap rounding), ``factor`` the filter's support
# (:data:`runtime.kernels.params.interp.FILTER_SUPPORT`).

#: A region decode still entropy-decodes the whole JPEG (libjpeg-turbo skips scanlines by
#: decoding them), so it saves only the IDCT/colour work outside the region; above this
#: fraction of the image area the canvas copy costs more than it saves and the image is decoded
#: whole.
ROI_MAX_AREA = 0.8


def _support_factor(interp: dict) -> int | None:
    """Largest support factor of the filters ``interp`` may use; ``None``: unknown filter."""
    return call_cached(_support_of, interp.get("interp_type", "linear"),
                       interp.get("min_filter"), interp.get("mag_filter"))


@functools.lru_cache(maxsize=64)
def _support_of(interp_type, min_filter, mag_filter) -> int | None:
    kind = filter_name(interp_type) or "linear"
    names = {filter_name(min_filter) or kind, filter_name(mag_filter) or kind}
    if "?" in names:
        return None
    return max(FILTER_SUPPORT[n] for n in names)


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
        Filter support factor (see ``FILTER_SUPPORT``).

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
        lo_line = min(max(math.floor(a) - margin, 0), n - 1)   # (a window past the image
        box.append((lo_line, max(min(math.ceil(b) + margin, n), lo_line + 1)))  # reads its edge)
    (y0, y1), (x0, x1) = box
    return y0, x0, y1, x1


def roi_resample(data, name, full_hw, params, interp: dict, dec: dict, dtype):
    """``resample(decode(data), params, ...)`` decoding only the source region it reads.

    The region (:func:`source_region`) is decoded and placed at its position in a full-size
    canvas (a reused per-thread buffer, see :func:`canvas`); ``resample`` then runs unchanged
    on the canvas, so the taps, weights and summation order are those of the unfused kernel and
    the result is bit-exact as long as the region covers every pixel it reads.  Falls back to a
    full decode when the filter is unknown, the output is empty or the region covers more than
    ``ROI_MAX_AREA`` of the image.

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
    region = _roi_region(full_hw, params, interp)
    img = decode(data, roi=region, sample=name, **dec)
    return roi_finish(img, region, full_hw, params, interp, dtype)


def _roi_region(full_hw, params, interp: dict):
    """The box to decode for ``resample(decode(...), params)``, or None for the whole image."""
    return _region_of(full_hw, params, _support_factor(interp))


def _region_of(full_hw, params, factor):
    """:func:`_roi_region` with the filters' support ``factor`` (None: unknown) given."""
    if factor is None or not (params.out_h and params.out_w):
        return None
    y0, x0, y1, x1 = source_region(full_hw, params, factor)
    if (y1 - y0) * (x1 - x0) > ROI_MAX_AREA * full_hw[0] * full_hw[1]:
        return None
    return y0, x0, y1, x1


def roi_finish(part, region, full_hw, params, interp: dict, dtype):
    """``resample`` of the image whose ``region`` (None: all of it) was decoded as ``part``."""
    if region is None:
        return resample(part, params, dtype=dtype, layout="HWC", **interp)
    y0, x0, y1, x1 = region
    # the uint8 tent path reads the decoded part in place (no canvas copy)
    res = resample_part(part, (y0, x0), full_hw, params, dtype=dtype, **interp)
    if res is not None:
        return res
    img = canvas((full_hw[0], full_hw[1], part.shape[2]), part.dtype)
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


def canvas(shape, dtype) -> np.ndarray:
    """A ``shape`` array of ``dtype`` for the calling thread (contents undefined)."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    if nbytes > _CANVAS_KEEP:
        return np.empty(shape, dtype)
    buf = getattr(_local, "canvas", None)
    if buf is None or buf.nbytes < nbytes:
        buf = _local.canvas = np.empty(max(nbytes, 1 << 20), np.uint8)
    return buf[:nbytes].view(dtype).reshape(shape)


def rrc_plan(data, name, a, i, consts=None):
    """Plan of a fused decode -> random_resized_crop sample: what to decode, how to finish.

    The window is drawn exactly as the unfused kernel does (same per-sample seed ->
    ``random_crop_window`` on the oriented image size, ``image_info``).  Returns
    ``(todo, finish)``: ``decode(todo[0], roi=todo[1], sample=todo[2], **todo[3])`` decodes
    only the region read (:func:`_roi_region`; ``roi`` None: the whole image) and
    ``roi_finish(part, *finish)`` gives the HWC result of ``random_resized_crop(decode(data))``.
    ``consts``: ``(rrc arguments, decoder arguments, filter arguments)`` when the batch's
    samples share them (read, never changed), else None (taken from ``a``).
    """
    data = parse_image(data, sample=name)      # parsed once: decode reuses the header
    info = data.info()
    H, W = info.height, info.width
    if consts is None:
        ra = stage_args(a, "rrc")
        interp = given(ra, INTERP_ARGS)
        dec = given(stage_args(a, "decode"), DECODE_ARGS)
    else:
        ra, dec, interp = consts
    y0, x0, h, w = random_window((H, W), ra, a["_seeds"], i)
    params = crop_resize_params((H, W), ra["size"], y0, x0, y0 + h, x0 + w)
    region = _roi_region((H, W), params, interp)
    return (data, region, name, dec), (region, (H, W), params, interp, ra.get("dtype"))


class PlainTodo:
    """The pending decode of a plain JPEG planned by :func:`rrc_plan_plain`: its parsed
    ``stream``, the ``region`` to decode (None: all of it) and the image's ``hw``, for
    :func:`runtime.codecs.image.decode_plain`."""

    __slots__ = ("stream", "region", "hw")

    def __init__(self, stream, region, hw):
        self.stream, self.region, self.hw = stream, region, hw


def rrc_plan_plain(data, a, i, consts):
    """:func:`rrc_plan` of a sample that is a plain JPEG (:func:`runtime.codecs.image.
    plain_jpeg`), or None (any other file: :func:`rrc_plan` plans it).

    The same window, resize parameters and region as :func:`rrc_plan` (the same calls on the
    same header facts), without its generic parsing; ``todo`` is a :class:`PlainTodo` (decode
    it with ``decode_plain``; where that gives None, plan the sample with :func:`rrc_plan`
    and decode it as usual).  ``consts``: ``(rrc arguments, decoder arguments, filter
    arguments)``, as for :func:`rrc_plan`, with decoder arguments that ``plain_decode_args``
    accepts.  :class:`PlainRRC` is the same with what a batch shares made once.
    """
    return PlainRRC(consts, a["_seeds"]).plan(data, i)


class PlainRRC:
    """:func:`rrc_plan_plain` for the samples of one batch: ``plan(data, i)``.

    What the samples share is made once: the validated window arguments
    (``windows.window_drawer``), the seeds' generator states (``seeds.seed_states``), the
    filter's support; per sample only the header, the window, the resize parameters and the
    region are computed.  ``consts`` as for
    :func:`rrc_plan_plain`; ``seeds`` the node's ``_seeds``.
    """

    __slots__ = ("ra", "seeds", "size", "interp", "dtype", "factor", "draw", "states")

    def __init__(self, consts, seeds):
        ra, _dec, interp = consts
        self.ra, self.seeds, self.size, self.interp = ra, seeds, ra["size"], interp
        self.dtype = ra.get("dtype")
        self.factor = _support_factor(interp)
        self.states = seed_states(seeds)
        self.draw = window_drawer(ra) if self.states is not None else None

    def plan(self, data, i):
        """``(PlainTodo, finish)`` of sample ``i`` (encoded ``data``), or None (not plain)."""
        found = plain_jpeg(data)
        if found is None:
            return None
        stream, H, W = found
        if self.draw is not None:
            y0, x0, h, w = self.draw(H, W, SampleDoubles(*self.states[i]))
        else:
            y0, x0, h, w = random_window((H, W), self.ra, self.seeds, i)
        hw = (H, W)
        params = crop_resize_params(hw, self.size, y0, x0, y0 + h, x0 + w)
        region = _region_of(hw, params, self.factor)
        return PlainTodo(stream, region, hw), (region, hw, params, self.interp, self.dtype)


def resize_crop_plan(data, name, a):
    """Plan of a fused decode -> resize -> cmn-with-crop sample (``None``: not applicable).

    Only the part of the resize output inside the cmn window is computed
    (:func:`resize_for_crop`), so only the source lines those output pixels read are
    decoded: along an axis resampled by torch's tent (integer window) every output line is
    computed, so all lines of its window; along a fractional axis the lines of the cropped
    outputs (+ the filter margin of :func:`source_region`).  Returns ``(todo, finish)`` as
    :func:`rrc_plan` does; ``finish = ("resize", region, full_hw, params, window, ra)`` for
    :func:`resize_crop_finish`.
    """
    dec = given(stage_args(a, "decode"), DECODE_ARGS)
    ra = stage_args(a, "resize")
    data = parse_image(data, sample=name)      # parsed once: decode reuses the header
    info = data.info()
    full_hw = (info.height, info.width)
    params = resize_output_shape(full_hw, **resize_size_args(ra))
    window = _crop_inside(params, a)
    if window is None:
        return None
    region = _resize_crop_region(full_hw, params, window, ra, dec)
    return (data, region, name, dec), ("resize", region, full_hw, params, window, ra)


def _resize_crop_region(full_hw, params, window, ra: dict, dec: dict):
    """Source box ``(y0, x0, y1, x1)`` read by ``resample(..., out_window=window)`` on the
    uint8 tent paths, or None (decode everything: other filters, dtypes or channel counts
    take paths that read the whole window, or the box is most of the image)."""
    if dec.get("output_type", "RGB") not in ("RGB", "BGR") or \
            dec.get("dtype") not in (None, "uint8") or ra.get("dtype") not in (None, "uint8"):
        return None
    names = {filter_name(ra.get(k)) for k in ("interp_type", "min_filter", "mag_filter")}
    if not names <= {None, "linear", "triangular"}:
        return None
    aa = bool(ra.get("antialias", True))
    oy0, ox0, ch, cw = window
    box = []
    for lo, hi, out, o0, n, full in ((params.y0, params.y1, params.out_h, oy0, ch, full_hw[0]),
                                     (params.x0, params.x1, params.out_w, ox0, cw, full_hw[1])):
        scale = (hi - lo) / out
        if torchable("linear", lo, hi, full, out, aa):
            a, b = lo, hi                       # torch resamples the whole window
        else:
            a, b = lo + o0 * scale, lo + (o0 + n) * scale
        a, b = min(a, b), max(a, b)
        margin = math.ceil(max(1.0, abs(scale))) + 2
        # taps past the image read its edge line, so a window (partly) outside the image
        # still needs the nearest edge line: clamp into [0, full) before widening
        lo_line = min(max(math.floor(a) - margin, 0), full - 1)
        hi_line = max(min(math.ceil(b) + margin, full), lo_line + 1)
        box.append((lo_line, hi_line))
    (y0, y1), (x0, x1) = box
    if (y1 - y0) * (x1 - x0) > ROI_MAX_AREA * full_hw[0] * full_hw[1]:
        return None
    return y0, x0, y1, x1


def resize_crop_finish(part, region, full_hw, params, window, ra):
    """The cmn-window part of the resize of the image whose ``region`` (None: all of it)
    was decoded as ``part``; returns ``(image, cmn window)``."""
    img = part
    if region is not None:
        y0, x0, y1, x1 = region
        img = canvas((full_hw[0], full_hw[1], part.shape[2]), part.dtype)
        img[y0:y1, x0:x1] = part
    res = _resample_window(img, params, ra, "HWC", window)
    if region is not None and np.may_share_memory(res, img):
        res = res.copy()
    return res, (0, 0, window[2], window[3])


def resize_for_crop(x, layout, ra, size_args, a):
    """A resize whose output only feeds a cmn crop: ``(part, window)``.

    When the cmn window lies inside the resize output, only that part is resampled
    (``resample(..., out_window=...)``, bit-exact with slicing the full output: e.g. val's
    ``resize_shorter=256`` -> 224x224 centre crop computes ~60 % of the output) and the cmn
    window becomes the whole part; otherwise ``(full resize, None)``."""
    if layout not in ("HWC", "HW"):
        return resize_sample(x, layout, ra, size_args), None
    params = resize_output_shape(x.shape[:2], **size_args)
    window = _crop_inside(params, a)
    if window is None:
        return resize_sample(x, layout, ra, size_args), None
    return _resample_window(x, params, ra, layout, window), (0, 0, window[2], window[3])


def _crop_inside(params, a: dict):
    """The cmn crop window ``(y0, x0, h, w)`` on the resize output of ``params``, or None
    when it is empty or reaches outside that output (cmn then pads or raises as usual)."""
    oh, ow = params.out_h, params.out_w
    y0, x0, h, w = crop_window((oh, ow), **crop_args(stage_args(a, "cmn")))
    if not (0 <= y0 and 0 <= x0 and 0 < h and 0 < w and y0 + h <= oh and x0 + w <= ow):
        return None
    return y0, x0, h, w


def _resample_window(img, params, ra: dict, layout: str, window):
    """``resample(img, params, out_window=window)`` with the resize stage's arguments."""
    return resample(img, params, interp_type=ra.get("interp_type", "linear"),
                    antialias=ra.get("antialias", True), dtype=ra.get("dtype"),
                    min_filter=ra.get("min_filter"), mag_filter=ra.get("mag_filter"),
                    layout=layout, out_window=window)
