"""``experimental.warp_perspective`` and ``experimental.remap`` on the CPU.

``warp_perspective`` follows DALI 2.4's CPU operator, which is OpenCV's ``warpPerspective``
(measured bit-exactly against it on uint8, int16, uint16 and float32, nn / linear / cubic, every
border mode). With ``pixel_origin="center"`` and ``M`` the 3 x 3 destination -> source map (in
float64), output pixel ``(x, y)`` is computed as OpenCV does:

* the source point, in 1/32 pixel: ``W = W0 + M31 x`` with ``W0 = M31 x0 + M32 y + M33`` (``x0``
  the first column of the pixel's block, see :func:`block_width`), ``X = round((X0 + M11 x) *
  32 / W)`` with ``X0 = M11 x0 + M12 y + M13`` (likewise ``Y``), rounded half to even; ``nn``
  uses ``round(... / W)`` in whole pixels;
* ``linear``: the 2 x 2 pixels at ``(X >> 5, Y >> 5)``, weights of the fractions ``(X & 31) /
  32``; ``cubic``: the 4 x 4 pixels from one up and left, Keys weights (``A = -0.75``) in
  float32; uint8 uses the weights times 32768 in integers (rounded, their sum fixed to 32768 on
  the largest or smallest of the central four), ``(sum + 16384) >> 15``; the other types
  float32 sums, rounded half to even and saturated for int16 / uint16;
* borders: ``constant`` reads ``fill_value`` for every tap outside (a pixel whose taps are all
  outside takes it as it is), the others mirror the tap index as OpenCV's
  ``borderInterpolate`` (``replicate``: clamp; ``reflect``: ``cba|abc``; ``reflect_101``:
  ``cb|abc``; ``wrap``: periodic).

``pixel_origin="corner"`` (DALI's default) first re-expresses the matrix for centers
(:func:`runtime.kernels.params.warp.corner_to_center`); ``inverse_map=False`` inverts it
(:func:`runtime.kernels.params.warp.invert_perspective`).

``remap`` (GPU-only in DALI 2.4; this follows its documentation): output pixel ``(x, y)`` samples
the input at ``(mapx[y, x], mapy[y, x])`` with :func:`runtime.kernels.cpu.warp.sample_points`
(``(0, 0)`` the corner of the first pixel by default, its center with ``pixel_origin=
"center"``), zero outside the image. Registers ``experimental.warp_perspective`` and
``experimental.remap``.
"""
from __future__ import annotations


import numpy as np

from runtime.kernels.params.warp import (corner_to_center, invert_perspective,
                                         perspective_matrix, perspective_output_size)
from runtime.buffers import batch_views
from runtime.kernels.registry import per_sample, register, sample_args
from runtime.threadpool import map_runs

from .warp import sample_points
from .warp_perspective_jit import block_width, interp_tables, kernels
from .warp_perspective_rows import row_kernels

__all__ = ["warp_perspective", "remap", "float_points", "BORDERS", "warm_up"]

#: border modes, in the numbering of the compiled kernel
BORDERS = {"constant": 0, "replicate": 1, "reflect": 2, "reflect_101": 3, "wrap": 4}
_INTERP = {"nn": 0, "linear": 1, "cubic": 2}
_TYPES = (np.uint8, np.int16, np.uint16, np.float32)
_LAYOUTS = {2: "HW", 3: "HWC", 4: "FHWC"}




def float_points(interp: str, dtype, channels: int) -> bool:
    """Whether OpenCV (as bundled with DALI 2.4) samples at float32 source points rather than
    at points rounded to 1/32 pixel: ``cubic``, and ``linear`` on uint8 / uint16 / float32
    images of 1, 3 or 4 channels (measured)."""
    if interp == "cubic":
        return True
    return interp == "linear" and np.dtype(dtype).type in (np.uint8, np.uint16, np.float32) \
        and channels in (1, 3, 4)


def new_points(dtype, channels: int) -> bool:
    """Whether OpenCV (as bundled with DALI 2.4) computes ``nn`` source points with its newer
    kernels (float32 points, int32 indices; a zero ``w`` or a point beyond int32 is INT_MIN,
    outside the image) rather than its classic warp (double points, ``W ? 1 / W : 0``, int16
    indices): uint8, uint16 and float32 images of 1, 3 or 4 channels, as ``linear``
    (measured)."""
    return float_points("linear", dtype, channels)


_LIMITS: dict = {}


def _limits(dt: np.dtype) -> tuple[float, float]:
    """``(min, max)`` of an integer dtype as floats (cached: ``np.iinfo`` costs microseconds
    per call)."""
    if dt not in _LIMITS:
        info = np.iinfo(dt)
        _LIMITS[dt] = (float(info.min), float(info.max))
    return _LIMITS[dt]


def _fill(fill_value, channels, dtype):
    """Per-channel border value converted to ``dtype`` as OpenCV does (round half to even,
    saturate), as float64."""
    if fill_value is None:
        return np.zeros(channels, np.float64)       # 0 in every type, converted or not
    fv = list(np.asarray(fill_value, np.float64).reshape(-1))
    if len(fv) > 1 and len(fv) != channels:
        raise ValueError(f"Number of values provided as a fill_value should match the number "
                         f"of channels.\nNumber of channels: {channels}. Number of values "
                         f"provided: {len(fv)}.")
    vals = np.full(channels, fv[0] if fv else 0.0, np.float64) if len(fv) <= 1 \
        else np.array(fv, np.float64)
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        lo, hi = _limits(dt)
        vals = np.clip(np.rint(vals), lo, hi)
    elif dt == np.float32:
        vals = vals.astype(np.float32).astype(np.float64)
    return vals


def warp_perspective(img, matrix, *, size=None, inverse_map=True, interp="linear",
                     border_mode="constant", fill_value=None, pixel_origin="corner"):
    """``experimental.warp_perspective`` of one image (see the module docstring).

    Parameters
    ----------
    img : numpy.ndarray
        ``(H, W)`` or ``(H, W, C)`` with ``C <= 4``; uint8, int16, uint16 or float32.
    matrix : array-like
        3 x 3 (9 numbers, row-major): destination -> source with ``inverse_map``.
    size : sequence of float or None
        Output ``(height, width)``; default: the input's.
    inverse_map : bool
    interp : {"nn", "linear", "cubic"}
    border_mode : {"constant", "replicate", "reflect", "reflect_101", "wrap"}
    fill_value : float, sequence of float or None
        One value, or one per channel (``constant`` border); default 0.
    pixel_origin : {"corner", "center"}

    Returns
    -------
    numpy.ndarray
        ``(out_h, out_w[, C])``, the input's dtype.

    Raises
    ------
    ValueError
        An unsupported type, interpolation, border mode or pixel origin, more than 4
        channels, a wrong number of fill values or matrix entries.
    """
    plan = _plan(img, matrix, size=size, inverse_map=inverse_map, interp=interp,
                 border_mode=border_mode, fill_value=fill_value, pixel_origin=pixel_origin)
    out = np.empty(plan_shape(plan), plan[0].dtype)
    return _render(plan, out)


def _plan(img, matrix, *, size=None, inverse_map=True, interp="linear",
          border_mode="constant", fill_value=None, pixel_origin="corner", matrices=None):
    """The checked arguments of :func:`warp_perspective` as ``(src (H, W, C), matrix (9,)
    float64, (out_h, out_w), border value (C,) float64, interp, border_mode, planar)``
    (``planar``: ``img`` was ``(H, W)``). ``matrices``: a dict that keeps the converted
    matrices of one batch by the identity of the ``matrix`` object (one conversion for a
    matrix that every sample shares)."""
    img = np.asarray(img)
    if img.dtype.type not in _TYPES:
        raise ValueError(f"The operator accepts the following input types: uint8, int16, "
                         f"uint16, float. Got {img.dtype}.")
    if interp not in _INTERP:
        raise ValueError(f"argument 'interp_type': {interp!r} is not supported by "
                         f"warp_perspective; use nn, linear or cubic")
    if border_mode not in BORDERS:
        raise ValueError(f"Invalid border_mode argument: {border_mode}")
    if pixel_origin not in ("corner", "center"):
        raise ValueError(f"Invalid pixel_origin argument: {pixel_origin}")
    src = img if img.ndim == 3 else img[:, :, None]
    cn = src.shape[2]
    if cn > 4:
        raise ValueError("Images with more than 4 channels are not supported.")
    key = (id(matrix), pixel_origin, bool(inverse_map))
    known = None if matrices is None else matrices.get(key)
    if known is not None and known[0] is matrix:
        m = known[1]
    else:
        m = perspective_matrix(matrix)
        if pixel_origin == "corner":
            m = corner_to_center(m)
        m = m.astype(np.float64)
        if not inverse_map:
            m = invert_perspective(m)
        m = m.reshape(-1)
        if matrices is not None:
            matrices[key] = (matrix, m)     # (the object kept: its id stays its own)
    out_hw = perspective_output_size(size, src.shape[:2])
    cval = _fill(fill_value, cn, src.dtype)
    return src, m, out_hw, cval, interp, border_mode, img.ndim != 3


def plan_shape(plan) -> tuple:
    """The output shape of a :func:`_plan`."""
    src, _, (oh, ow), _, _, _, planar = plan
    return (oh, ow) if planar else (oh, ow, src.shape[2])


def _render(plan, out):
    """Warp the image of ``plan`` into ``out`` (C-contiguous, :func:`plan_shape`, the input's
    dtype); returns ``out``."""
    src, m, (oh, ow), cval, interp, border_mode, planar = plan
    cn = src.shape[2]
    res = out.reshape(oh, ow, cn)
    if src.shape[0] == 0 or src.shape[1] == 0:
        res[...] = cval.astype(src.dtype)
        return out
    src = np.ascontiguousarray(src)
    fixed = src.dtype == np.uint8
    is_int = src.dtype.kind in "iu"
    lo, hi = _limits(src.dtype) if is_int else (0.0, 0.0)
    mode = BORDERS[border_mode]
    if interp == "nn":
        row_kernels()[1](src, m, res, mode, cval.astype(src.dtype), block_width(oh, ow),
                         m.astype(np.float32), new_points(src.dtype, cn))
    elif interp == "linear" and float_points(interp, src.dtype, cn):
        row_kernels()[0](src, m.astype(np.float32), res, mode, cval, is_int, lo, hi)
    elif float_points(interp, src.dtype, cn):
        kernels()[1](src, m.astype(np.float32), res, _INTERP[interp], mode, cval, is_int,
                     lo, hi)
    else:
        ftab, itab = interp_tables(interp)
        kernels()[0](src, m, res, _INTERP[interp], mode, cval, ftab, itab, fixed, is_int,
                     lo, hi, block_width(oh, ow))
    return out


def remap(img, mapx, mapy, *, interp="linear", pixel_origin="corner"):
    """``experimental.remap`` of one ``(H, W, C)`` image (see the module docstring).

    Raises
    ------
    ValueError
        Not an HWC image, an unsupported type, maps not of the image's height and width, an
        interpolation other than nn / linear, an unknown ``pixel_origin``.
    """
    img = np.asarray(img)
    if img.ndim != 3:
        raise ValueError("Input has to be a HWC image.")
    if img.dtype.type not in _TYPES:
        raise ValueError(f"Unsupported input type: {img.dtype} (remap takes uint8, int16, "
                         f"uint16 or float32)")
    if pixel_origin not in ("corner", "center"):
        raise ValueError('Undefined pixel_origin parameter. Please choose one of: ["center", '
                         '"corner"]')
    h, w = img.shape[:2]
    mx = np.asarray(mapx, np.float32)
    my = np.asarray(mapy, np.float32)
    for name, mp in (("mapx", mx), ("mapy", my)):
        if mp.shape not in ((h, w), (h, w, 1)):
            raise ValueError(f"remap: {name} must have the image's height and width "
                             f"({h} x {w}[ x 1]), got shape {mp.shape}")
    mx, my = mx.reshape(h, w), my.reshape(h, w)
    if pixel_origin == "center":
        mx, my = mx + np.float32(0.5), my + np.float32(0.5)
    return sample_points(img, mx, my, interp=interp, fill_value=0.0, op="remap")


def warm_up() -> None:
    """Compile (or load from numba's cache) the warp loops for the four image types."""
    for dt in _TYPES:
        warp_perspective(np.zeros((2, 2, 1), dt), np.eye(3))
        warp_perspective(np.zeros((2, 2, 3), dt), np.eye(3))
        warp_perspective(np.zeros((2, 2, 1), dt), np.eye(3), interp="nn")


def _sample_plans(ctx, ins, a, matrices):
    """The :func:`_plan` of every image of one sample (every frame / plane of a sequence or
    planar sample) and the sample's output shape (``matrices``: see :func:`_plan`)."""
    if len(ins) > 1:
        if a.get("matrix") is not None:
            raise ValueError("Matrix input and `matrix` argument should not be provided at the "
                             "same time.")
        mtx = np.asarray(ins[1])
        if mtx.shape != (3, 3):
            raise ValueError(f"Expected a uniform list of 3x3 matrices. Instead got data with "
                             f"shape: {mtx.shape}")
    elif a.get("matrix") is not None:
        mtx = a["matrix"]
    else:
        raise ValueError("warp_perspective needs a transform: the 'matrix' argument or the "
                         "matrix input")
    kw = dict(size=a.get("size"), inverse_map=a.get("inverse_map", True),
              interp=a.get("interp_type", "linear"), border_mode=a.get("border_mode", "constant"),
              fill_value=a.get("fill_value"), pixel_origin=a.get("pixel_origin", "corner"))
    x = np.asarray(ins[0])
    layout = ctx.in_metas[0].layout or _LAYOUTS.get(x.ndim, "")    # (none: by ndim, as DALI)
    lead = (1 if layout.startswith("F") else 0) + (1 if layout.endswith("CHW") else 0)
    if not lead:
        plan = _plan(x, mtx, matrices=matrices, **kw)
        return [plan], plan_shape(plan)
    if layout.endswith("CHW"):      # planar: every plane is an HW image (DALI, measured)
        fv = kw["fill_value"]
        if fv is not None and np.asarray(fv).size > 1:
            raise ValueError("Only scalar fill_value can be provided when processing data in "
                             "planar layout.")
    plans = [_plan(f, mtx, matrices=matrices, **kw)
             for f in x.reshape((-1,) + x.shape[lead:])]
    oh, ow = perspective_output_size(kw["size"], x.shape[lead:lead + 2])
    return plans, x.shape[:lead] + (oh, ow) + x.shape[lead + 2:]


@register("experimental.warp_perspective", "cpu")
def warp_perspective_kernel(ctx, inputs, args):
    """``experimental.warp_perspective`` of the batch (every frame / plane of a sequence or
    planar sample): the arguments checked in the calling thread, then the warps on the pool,
    written into views of one recycled batch buffer (:func:`runtime.buffers.batch_views`: a
    fresh array per image faulted all its pages in again), consecutive samples per task."""
    n = ctx.batch_size
    plans, shapes, matrices = [], [], {}
    for i in range(n):
        ins = [inp[i] if len(inp) > 1 else inp[0] for inp in inputs]
        p, shape = _sample_plans(ctx, ins, sample_args(ctx, args, i), matrices)
        plans.append(p)
        shapes.append(shape)
    dt = np.dtype(ctx.out_metas[0].dtype)
    outs = batch_views(shapes, dt)

    def one(i):
        if len(plans[i]) == 1 and outs[i].shape == plan_shape(plans[i][0]):
            _render(plans[i][0], outs[i])
            return
        images = outs[i].reshape((len(plans[i]),) + plan_shape(plans[i][0])) \
            if plans[i] else ()
        for plan, o in zip(plans[i], images):
            _render(plan, o)
    map_runs(ctx.pool, n, one)
    return [outs]


@register("experimental.remap", "cpu")
@per_sample
def remap_kernel(ctx, ins, a, i):
    """``experimental.remap`` of sample ``i``."""
    return remap(ins[0], ins[1], ins[2], interp=a.get("interp", "linear"),
                 pixel_origin=a.get("pixel_origin", "corner"))
