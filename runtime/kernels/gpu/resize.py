"""GPU kernels of ``resize`` and ``random_resized_crop``: ``resize.cu``, two launches per batch.

The host side computes everything the CPU kernel computes before touching pixels, with the CPU
kernel's own functions: the output grid (:func:`runtime.kernels.params.resize_geometry.
resize_output_shape`, or the random window of :func:`runtime.kernels.params.windows.
random_window`), the filter of each axis (min/mag filter), the tap tables
(:func:`runtime.kernels.cpu.resize_taps.axis_taps`, banded onto consecutive source pixels as the
CPU's sparse matrices are: :func:`banded_taps`) and the order of the passes (the one moving fewer
elements, as the CPU chooses). All samples' tables go into one int64 and one float32 array,
uploaded once; each sample's descriptor points into them. Pass 1 resamples one axis into a
float32 intermediate (one buffer for the batch), pass 2 the other axis into the output.

Exactness (docs/architecture.md, "GPU kernels"): the sums run in the CPU's sparse-product order
without contraction, so the result equals the CPU kernel bit for bit wherever the CPU takes its
float32 sparse path. The CPU differs in two places, by design of its fast paths: an axis whose
filter covers a quarter or more of the source window is a dense torch matmul there (MKL's
blocked, fused sums: within a few float32 ulps), and uint8 -> uint8 linear/triangular resizes
take torch's antialiased uint8 kernels (within 1).
"""
from __future__ import annotations

import numpy as np

from runtime.kernels.cpu.cast import to_numpy_dtype
from runtime.kernels.cpu.resize_taps import axis_taps
from runtime.kernels.params.interp import interp_name
from runtime.kernels.params.layouts import meta_layout
from runtime.kernels.params.resize_geometry import resize_output_shape, resize_size_args
from runtime.kernels.params.windows import random_window
from runtime.kernels.registry import register, sample_args

from .launch import address, family_kernel, launch_batch

__all__ = ["TYPES", "DESC_WORDS", "banded_taps", "axis_kind", "SamplePlan", "plan_sample",
           "sample_taps", "taps_box", "shift_to_region",
           "PassOne", "prepare_pass_one", "launch_pass_one", "resize_batch", "out_dtype_of",
           "params_of_resize", "params_of_rrc"]

#: element types read and written (those of the CPU kernel)
TYPES = ("uint8", "int8", "uint16", "int16", "int32", "float32")
#: int64 words of one ``RsDesc``
DESC_WORDS = 23
_LAYOUTS = ("HWC", "CHW", "HW")
_f32 = np.float32


def banded_taps(in_len, out_len, start, end, kind, antialias, accumulate):
    """One axis' taps as ``(first, w)``: output ``o`` reads ``w[o, k]`` of source pixel
    ``first[o] + k``, ``k < K' = min(K, in_len)`` consecutive pixels inside the image (taps
    clamped to the edge summed in float64 and rounded once, exactly as the CPU's resampling
    matrices hold them).

    Returns
    -------
    tuple
        ``first`` int64 ``(out_len,)``, ``w`` float32 ``(out_len, K')``.
    """
    idx, w = axis_taps(in_len, out_len, start, end, kind, antialias, accumulate)
    n, taps = idx.shape
    keff = min(taps, in_len)
    first = np.clip(idx[:, 0], 0, in_len - keff).astype(np.int64)
    flat = idx - first[:, None] + (np.arange(n, dtype=np.int64) * keff)[:, None]
    wts = np.bincount(flat.ravel(), weights=w.ravel(), minlength=n * keff)
    return first, wts.astype(np.float32).reshape(n, keff)


def axis_kind(out_len, lo, hi, kind_min, kind_mag) -> str:
    """The filter of one axis: ``min_filter`` when the output is smaller than the source window
    (its length in float32, as DALI computes it), else ``mag_filter``."""
    win = abs(float(_f32(_f32(hi) - _f32(lo))))
    return kind_min if out_len < win else kind_mag


def out_dtype_of(dtype, in_dtype) -> np.dtype:
    """The output dtype of a resize (``dtype`` argument, default the input's).

    Raises
    ------
    ValueError
        Not one of :data:`TYPES`.
    """
    dt = np.dtype(in_dtype) if dtype is None else to_numpy_dtype(dtype)
    if dt.name not in TYPES:
        raise ValueError(f"resize: output `dtype` must be one of {list(TYPES)}, got {dt.name!r}")
    return dt


class SamplePlan:
    """What one sample's descriptor needs: the output shape (input layout), the strides, the
    pass order and the two tap tables, or ``zero`` for an empty input."""

    __slots__ = ("out_shape", "in_strides", "out_strides", "chans", "h_first", "zero",
                 "t_shape", "lo", "taps1", "taps2", "oh", "ow", "t_bound")


def _strides(layout, shape, elem_strides):
    """(sy, sx, sc) of a sample in ``layout`` with element strides ``elem_strides``."""
    ax = {c: k for k, c in enumerate(layout)}
    return (elem_strides[ax["H"]], elem_strides[ax["W"]],
            elem_strides[ax["C"]] if "C" in ax else 0)


def sample_taps(in_hw, params, a):
    """Both axes' banded taps ``((first_y, w_y), (first_x, w_x))`` of an ``in_hw`` image
    resampled onto ``params`` with the filter arguments ``a`` (see :func:`banded_taps`)."""
    kind = interp_name("interp_type", a.get("interp_type")) or "linear"
    kind_min = interp_name("min_filter", a.get("min_filter")) or kind
    kind_mag = interp_name("mag_filter", a.get("mag_filter")) or kind
    aa = a.get("antialias")
    aa = True if aa is None else bool(aa)
    kind_y = axis_kind(params.out_h, params.y0, params.y1, kind_min, kind_mag)
    kind_x = axis_kind(params.out_w, params.x0, params.x1, kind_min, kind_mag)
    return (banded_taps(in_hw[0], params.out_h, float(params.y0), float(params.y1), kind_y, aa,
                        True),
            banded_taps(in_hw[1], params.out_w, float(params.x0), float(params.x1), kind_x, aa,
                        False))


def taps_box(taps) -> tuple[int, int, int, int]:
    """End-exclusive source box ``(y0, x0, y1, x1)`` every tap of ``taps``
    (:func:`sample_taps`) reads: exactly the pixels the resize needs (a ROI decode's region)."""
    (fy, wy), (fx, wx) = taps
    return (int(fy.min()), int(fx.min()), int(fy.max()) + wy.shape[1],
            int(fx.max()) + wx.shape[1])


def shift_to_region(p: SamplePlan, region) -> SamplePlan:
    """Re-base plan ``p`` (of the full image, with the region's element strides) onto a region
    ``(y0, x0, y1, x1)`` that holds every pixel it reads (:func:`taps_box`): only the source
    line indices move, taps, weights and order stay, so the result is that of the full image
    bit for bit."""
    if p.zero:
        return p
    y0, x0 = region[0], region[1]
    first, w = p.taps1
    if p.h_first:       # pass 1 reads source rows first[r] + k, columns lo + q
        p.taps1, p.lo = (first - y0, w), p.lo - x0
    else:               # pass 1 reads source rows lo + r, columns first[q] + k
        p.taps1, p.lo = (first - x0, w), p.lo - y0
    return p


def plan_sample(shape, elem_strides, layout, params, a, taps=None) -> SamplePlan:
    """The :class:`SamplePlan` of one sample resampled onto ``params`` (a ResizeParams) with the
    filter arguments ``a`` (``interp_type``, ``min_filter``, ``mag_filter``, ``antialias``);
    ``taps``: :func:`sample_taps` of the same, when already computed."""
    if layout not in _LAYOUTS:
        raise NotImplementedError(f"resize on the GPU supports {_LAYOUTS} layouts, not "
                                  f"{layout!r}")
    ax = {c: k for k, c in enumerate(layout)}
    in_h, in_w = shape[ax["H"]], shape[ax["W"]]
    chans = shape[ax["C"]] if "C" in ax else 1
    if (params.in_h, params.in_w) != (in_h, in_w) and (params.in_h or params.in_w):
        raise ValueError(f"resize: `params` were computed for input (H, W) = "
                         f"({params.in_h}, {params.in_w}) but the image is ({in_h}, {in_w})")
    p = SamplePlan()
    oh, ow = params.out_h, params.out_w
    p.oh, p.ow, p.chans = oh, ow, chans
    dims = {"H": oh, "W": ow, "C": chans}
    p.out_shape = tuple(dims[c] for c in layout)
    dense = [1] * len(layout)
    for k in range(len(layout) - 2, -1, -1):
        dense[k] = dense[k + 1] * p.out_shape[k + 1]
    p.out_strides = _strides(layout, p.out_shape, dense)
    p.in_strides = _strides(layout, shape, elem_strides)
    p.zero = oh == 0 or ow == 0 or in_h == 0 or in_w == 0 or chans == 0
    # the intermediate's size whatever the window (taps stay inside the image), so a batch of
    # one input and output shape always asks for the same scratch (CUDA-graph replays)
    p.t_bound = 0 if p.zero else chans * max(oh * in_w, in_h * ow)
    p.h_first, p.t_shape, p.lo, p.taps1, p.taps2 = True, (0, 0), 0, None, None
    if p.zero:
        return p
    (fy, wy), (fx, wx) = taps if taps is not None else sample_taps((in_h, in_w), params, a)
    ylo, xlo, yhi, xhi = taps_box(((fy, wy), (fx, wx)))
    hc, wc = yhi - ylo, xhi - xlo
    p.h_first = oh * wc + oh * ow <= hc * wc + hc * ow
    if p.h_first:
        p.t_shape, p.lo, p.taps1, p.taps2 = (oh, wc), xlo, (fy, wy), (fx - xlo, wx)
    else:
        p.t_shape, p.lo, p.taps1, p.taps2 = (hc, ow), ylo, (fx, wx), (fy - ylo, wy)
    return p


class PassOne:
    """Resize's first pass over a batch, ready to launch: the descriptors (``RsDesc`` rows),
    the uploaded tap tables, the float32 intermediate and the largest sample's work."""

    __slots__ = ("descs", "tables", "tmp", "count")


def prepare_pass_one(ctx, samples, plans, out_ptrs) -> PassOne:
    """Build and upload what both passes read: every sample's taps in one int64 and one float32
    array, one intermediate for the batch, the descriptors (``out_ptrs[i]``: where pass 2
    writes sample ``i``; 0 when a fused pass 2 writes elsewhere)."""
    firsts, weights, f_off, t_off = [], [], [], []
    nf = nw = nt = 0
    for p in plans:
        offs = []
        for taps in (p.taps1, p.taps2):
            if taps is None:
                offs.append((0, 0))
                continue
            f, w = taps
            offs.append((nf, nw))
            firsts.append(f)
            weights.append(w.ravel())
            nf += f.size
            nw += w.size
        f_off.append(offs)
        t_off.append(nt)
        nt += p.t_bound
    f_all = ctx.upload(np.concatenate(firsts) if firsts else np.zeros(1, np.int64))
    w_all = ctx.upload(np.concatenate(weights).astype(np.float32) if weights
                       else np.zeros(1, np.float32))
    one = PassOne()
    one.tmp = ctx.empty((max(1, nt),), np.float32)
    one.tables = [f_all, w_all]
    fa, wa, ta = address(f_all), address(w_all), address(one.tmp)
    one.descs = np.zeros((len(plans), DESC_WORDS), np.int64)
    for i, (x, p) in enumerate(zip(samples, plans)):
        (f1, w1), (f2, w2) = f_off[i]
        k1 = p.taps1[1].shape[1] if p.taps1 is not None else 0
        k2 = p.taps2[1].shape[1] if p.taps2 is not None else 0
        one.descs[i] = (address(x), ta + 4 * t_off[i], out_ptrs[i], *p.in_strides,
                        *p.out_strides, p.chans, int(p.h_first), int(p.zero), *p.t_shape, p.lo,
                        fa + 8 * f1, wa + 4 * w1, k1, fa + 8 * f2, wa + 4 * w2, k2, p.oh, p.ow)
    one.count = max((p.t_shape[0] * p.t_shape[1] * p.chans for p in plans), default=0)
    return one


def launch_pass_one(ctx, samples, one: PassOne) -> None:
    """Launch resize's first pass (``resize_pass1_<in>``) for the batch."""
    in_dtype = np.dtype(samples[0].dtype)
    if in_dtype.name not in TYPES:
        raise ValueError(f"resize: input dtype must be one of {list(TYPES)}, got "
                         f"{in_dtype.name!r}")
    launch_batch(ctx, family_kernel(ctx, "resize", f"resize_pass1_{in_dtype.name}"), one.descs,
                 one.count, reads=[*samples, *one.tables], writes=[one.tmp])


def resize_batch(ctx, samples, plans, out_dtype) -> list:
    """Run the two passes over a batch (``plans[i]`` from :func:`plan_sample`). Returns the
    per-sample outputs (``ctx.empty`` arrays, the input layout)."""
    outs = [ctx.empty(p.out_shape, out_dtype) for p in plans]
    if not samples:
        return outs
    one = prepare_pass_one(ctx, samples, plans, [address(o) for o in outs])
    launch_pass_one(ctx, samples, one)
    o_count = max(p.oh * p.ow * p.chans for p in plans)
    launch_batch(ctx, family_kernel(ctx, "resize", f"resize_pass2_{np.dtype(out_dtype).name}"),
                 one.descs, o_count, reads=[one.tmp, *one.tables], writes=outs)
    return outs


def _elem_strides(x):
    item = np.dtype(x.dtype).itemsize
    return [s // item for s in x.strides]


def _run(ctx, inputs, args, params_of):
    n = ctx.batch_size
    samples = [inputs[0][i] if len(inputs[0]) > 1 else inputs[0][0] for i in range(n)]
    layout = meta_layout(ctx.in_metas[0])
    plans, dtypes = [], set()
    for i, x in enumerate(samples):
        a = sample_args(ctx, args, i)
        ax = {c: k for k, c in enumerate(layout)}
        if "H" not in ax or "W" not in ax:
            raise NotImplementedError(f"resize on the GPU supports {_LAYOUTS} layouts, not "
                                      f"{layout!r}")
        in_hw = (x.shape[ax["H"]], x.shape[ax["W"]])
        plans.append(plan_sample(tuple(x.shape), _elem_strides(x), layout,
                                 params_of(in_hw, a, i), a))
        dtypes.add(out_dtype_of(a.get("dtype"), x.dtype))
    if len(dtypes) > 1:
        raise ValueError("resize on the GPU needs one output dtype for the batch")
    out_dtype = dtypes.pop() if dtypes else np.dtype(np.uint8)
    return [ctx.samples(resize_batch(ctx, samples, plans, out_dtype))]


def params_of_resize(in_hw, a, i=0):
    """The ResizeParams of a ``resize`` with arguments ``a`` on an ``in_hw`` input."""
    return resize_output_shape(in_hw, **resize_size_args(a))


def params_of_rrc(in_hw, a, seeds, i):
    """The ResizeParams of sample ``i`` of a ``random_resized_crop`` (its random window from
    ``seeds``, the CPU kernel's draw) with arguments ``a``."""
    y0, x0, h, w = random_window(in_hw, a, seeds, i)
    return resize_output_shape(in_hw, size=a["size"], roi_start=(y0, x0),
                               roi_end=(y0 + h, x0 + w))


@register("resize", "gpu")
def resize_kernel(ctx, inputs, args):
    """``resize`` on the GPU: two launches for the batch."""
    return _run(ctx, inputs, args, params_of_resize)


@register("random_resized_crop", "gpu")
def random_resized_crop_kernel(ctx, inputs, args):
    """``random_resized_crop`` on the GPU: each sample's random window (the CPU kernel's draw,
    same seeds) resized to ``size``, two launches for the batch."""
    return _run(ctx, inputs, args, lambda in_hw, a, i: params_of_rrc(in_hw, a, a["_seeds"], i))
