"""``crop_mirror_normalize``: crop, horizontal mirror, per-channel normalization,
layout permutation, channel padding and type conversion in one pass (CPU).

Semantics follow ``nvidia.dali.fn.crop_mirror_normalize`` (DALI 2.4, checked
against DALI as an oracle):

* the window is placed as in ``crop`` (:func:`runtime.kernels.params.windows.crop_window`)
  and may leave the image under ``out_of_bounds_policy``;
* ``mirror`` flips the produced window horizontally (padding included);
* ``out = (in - mean) / std * scale + shift``, evaluated in float32 as DALI does:
  ``(in - mean') * inv`` with ``inv = scale / std`` and
  ``mean' = mean - shift * std / scale`` (bit-exact to DALI on float32 output);
* padded pixels hold ``fill_values`` as given (not normalized);
* ``pad_output`` pads the channel count to the next power of two (3 -> 4, 5 -> 8);
  the extra channels hold ``fill_values[c]`` when ``out_of_bounds_policy="pad"``,
  0 otherwise;
* integer outputs are rounded half away from zero and saturated.

The work is one torch elementwise pass (uint8 -> float32 subtract written
straight into the permuted output buffer) plus an in-place multiply; torch is
used single-threaded by the runtime.  The arguments are folded by
:mod:`runtime.kernels.params.normalize`, the pixels computed by :mod:`.cmn_pixels`.

Registers the ``crop_mirror_normalize`` kernel (:func:`cmn_kernel`): the batch path of
:mod:`.cmn_batch` when the batch allows it, else one :func:`cmn_to_window` per sample.
"""

from __future__ import annotations

import numbers

import numpy as np

from runtime.kernels.params.layouts import hw_axes, layout_axes, meta_layout
from runtime.kernels.params.normalize import (mirror_flag, next_pow2, normalize_params,
                                              resolve_output_layout)
from runtime.kernels.params.windows import CROP_ARGS, clip_window, crop_args, crop_window
from runtime.kernels.registry import given, register, sample_arg, sample_args
from runtime.profile import measured

from .cast import to_numpy_dtype
from .cmn_batch import cmn_batch, cmn_batch_fits
from .cmn_pixels import normalize_into
from .crop import fill_vector

__all__ = ["crop_mirror_normalize", "cmn_to_window", "cmn_kernel"]

def cmn_to_window(image, window, *, layout="HWC", mirror=0, mean=0.0, std=1.0, scale=1.0,
                  shift=0.0, output_layout="CHW", dtype="float32", pad_output=False,
                  fill_values=0, out_of_bounds_policy="error", out=None):
    """:func:`crop_mirror_normalize` with an explicit window ``(y0, x0, h, w)``.

    Parameters and results are those of :func:`crop_mirror_normalize`; the
    window replaces the ``crop*`` arguments and is subject to
    ``out_of_bounds_policy``. ``out``, when given, is the array to write into (shape and dtype
    of the result; e.g. one sample of a preallocated batch) and is returned.
    """
    image = np.asarray(image)
    layout, axes = layout_axes(layout, image.ndim)
    out_layout, perm = resolve_output_layout(layout, output_layout)
    ah, aw, ac = axes["H"], axes["W"], axes.get("C")
    H, W = image.shape[ah], image.shape[aw]
    policy = getattr(out_of_bounds_policy, "name", out_of_bounds_policy)
    policy = policy.lower() if isinstance(policy, str) else policy
    y0, x0, h, w = clip_window(window, (H, W), policy, image.shape, layout)
    out_dtype = to_numpy_dtype(dtype)
    flip = mirror_flag(mirror)
    c_in = image.shape[ac] if ac is not None else None
    if not isinstance(pad_output, (bool, np.bool_, numbers.Integral)):
        raise TypeError(f"pad_output={pad_output!r}: expected a bool")
    if pad_output and ac is None:
        raise ValueError(f"pad_output=True needs a channel axis; layout {layout!r} has none")
    c_out = next_pow2(c_in) if (pad_output and c_in) else c_in
    base, inv, post_shift = normalize_params(mean, std, scale, shift, c_in)

    # output buffer in the output layout, and a view of it in input-axis order
    shape_in_order = list(image.shape)
    shape_in_order[ah], shape_in_order[aw] = h, w
    if ac is not None:
        shape_in_order[ac] = c_out
    shape_out = tuple(shape_in_order[p] for p in perm)
    if out is None:
        out = np.empty(shape_out, dtype=out_dtype)
    elif out.shape != shape_out or out.dtype != out_dtype:
        raise ValueError(f"out has shape {out.shape} and dtype {out.dtype}; expected "
                         f"{shape_out} and {out_dtype}")
    view = out.transpose(np.argsort(perm))

    sy0, sx0 = max(y0, 0), max(x0, 0)
    sy1, sx1 = min(y0 + h, H), min(x0 + w, W)
    has_data = sy1 > sy0 and sx1 > sx0
    inside = sy0 == y0 and sx0 == x0 and sy1 == y0 + h and sx1 == x0 + w
    if policy == "pad":
        fill = fill_vector(fill_values, c_out, out_dtype)
        if not inside or c_out != c_in:
            _broadcast_fill(view, fill, ac)
    elif c_out != c_in:
        chan = [slice(None)] * view.ndim
        chan[ac] = slice(c_in, c_out)
        view[tuple(chan)] = 0
    if not has_data:
        return out

    src = [slice(None)] * image.ndim
    src[ah], src[aw] = slice(sy0, sy1), slice(sx0, sx1)
    dst = [slice(None)] * image.ndim
    dst[ah] = slice(sy0 - y0, sy1 - y0)
    dst[aw] = slice(w - (sx1 - x0), w - (sx0 - x0)) if flip else slice(sx0 - x0, sx1 - x0)
    if ac is not None:
        dst[ac] = slice(0, c_in)
    region = image[tuple(src)]
    target = view[tuple(dst)]
    normalize_into(region, target, base, inv, post_shift, ac, aw if flip else None)
    return out


def _broadcast_fill(view, fill, c_axis):
    if fill.size == 1 or c_axis is None:
        view[...] = fill[0]
    else:
        shape = [1] * view.ndim
        shape[c_axis] = fill.size
        view[...] = fill.reshape(shape)


@measured("normalize")
def crop_mirror_normalize(image, *, layout="HWC", crop=None, crop_h=None, crop_w=None,
                          crop_pos_x=0.5, crop_pos_y=0.5, mirror=0, mean=0.0, std=1.0,
                          scale=1.0, shift=0.0, output_layout="CHW", dtype="float32",
                          pad_output=False, fill_values=0, out_of_bounds_policy="error"):
    """Crop, mirror, normalize, permute and convert one image (DALI ``fn.crop_mirror_normalize``).

    Parameters
    ----------
    image : numpy.ndarray
        One sample, layout ``layout`` (``"HWC"``, ``"CHW"``, ``"HW"`` or any
        layout with ``H`` and ``W``); any numeric dtype (uint8 typical).
    layout : str
        Input layout; ``None`` infers HWC (3-D) / HW (2-D).
    crop, crop_h, crop_w, crop_pos_x, crop_pos_y
        Window as in :func:`runtime.kernels.cpu.crop.crop` (no crop = whole image).
    mirror : int
        Non-zero flips the output horizontally.
    mean, std : float or sequence of float
        One value or one per input channel; ``std`` must be non-zero.
    scale, shift : float
        ``out = (in - mean) / std * scale + shift``.
    output_layout : str
        Permutation of the input layout letters (default ``"CHW"``; for an input
        without ``C`` the default means ``"HW"``).
    dtype : dtype-like
        Output type (default float32). Integer outputs round half away from
        zero and saturate; float16 is IEEE-rounded.
    pad_output : bool
        Pad the channel count to the next power of two.
    fill_values : float or sequence of float
        Values of padded pixels (and padded channels) with
        ``out_of_bounds_policy="pad"``; one value or one per output channel.
    out_of_bounds_policy : {"error", "pad", "trim_to_shape"}
        As in ``crop``.

    Returns
    -------
    numpy.ndarray
        New C-contiguous array in ``output_layout``, dtype ``dtype``.

    Raises
    ------
    ValueError
        Bad layout/output_layout, crop arguments, policy, window out of bounds
        with ``"error"``, wrong number of per-channel values, zero ``std``.
    TypeError
        Non-numeric arguments or an unsupported ``dtype``.
    """
    image = np.asarray(image)
    layout, axes = layout_axes(layout, image.ndim)
    in_hw = (image.shape[axes["H"]], image.shape[axes["W"]])
    window = crop_window(in_hw, crop=crop, crop_h=crop_h, crop_w=crop_w,
                         crop_pos_x=crop_pos_x, crop_pos_y=crop_pos_y)
    return cmn_to_window(image, window, layout=layout, mirror=mirror, mean=mean, std=std,
                         scale=scale, shift=shift, output_layout=output_layout, dtype=dtype,
                         pad_output=pad_output, fill_values=fill_values,
                         out_of_bounds_policy=out_of_bounds_policy)


# ------------------------------------------------------------------ the kernel
# arguments of cmn_to_window besides the window
_CMN_ARGS = ("out_of_bounds_policy", "fill_values", "dtype", "mirror", "mean", "std", "scale",
             "shift", "output_layout", "pad_output")
# arguments that must be constant over the batch for the batch path
_BATCH_CONSTANT = ("out_of_bounds_policy", "fill_values", "dtype", "mean", "std", "scale",
                   "shift", "output_layout", "pad_output")
_BATCH_ARGS = ("mean", "std", "scale", "shift", "output_layout", "dtype")


@register("crop_mirror_normalize", "cpu")
def cmn_kernel(ctx, inputs, args):
    """crop_mirror_normalize; when every sample's output has the same shape, the outputs are
    views of one preallocated batch array, so ``Batch.torch()`` needs no copy.

    Batch path (:func:`runtime.kernels.cpu.cmn_batch.cmn_batch`, arguments folded once, one
    pool task per thread): HWC/CHW input, no ``pad_output``, windows of one size inside their
    images (policy "error") and constant normalization arguments (``mirror`` and the
    crop may vary per sample).  Anything else goes sample by sample."""
    layout = meta_layout(ctx.in_metas[0])
    images = inputs[0]
    n = ctx.batch_size
    h_ax, w_ax = hw_axes(layout)
    tensor = set(ctx.tensor_arg_names or ())
    policy = args.get("out_of_bounds_policy", "error")
    policy = getattr(policy, "name", policy)
    if (n > 0 and len(images) == n and layout in ("HWC", "CHW") and not args.get("pad_output")
            and isinstance(policy, str) and policy.lower() == "error"
            and not tensor.intersection(_BATCH_CONSTANT)):
        if tensor.intersection(CROP_ARGS):
            windows = [crop_window((images[i].shape[h_ax], images[i].shape[w_ax]),
                                   **crop_args(sample_args(ctx, args, i)))
                       for i in range(n)]
        else:
            crop = crop_args(args)
            memo = {}
            windows = []
            for img in images:
                hw = (img.shape[h_ax], img.shape[w_ax])
                if hw not in memo:
                    memo[hw] = crop_window(hw, **crop)
                windows.append(memo[hw])
        if cmn_batch_fits(images, windows, layout):
            mirror = args.get("mirror", 0)
            if "mirror" in tensor:
                mirror = [sample_arg(m) for m in mirror]
            out = cmn_batch(images, windows, mirror, layout=layout,
                            map_fn=ctx.pool.map, parts=getattr(ctx.pool, "num_threads", 1),
                            **given(args, _BATCH_ARGS))
            return [[out[i] for i in range(n)]]

    per = [sample_args(ctx, args, i) for i in range(n)]
    windows = [crop_window((images[i].shape[h_ax], images[i].shape[w_ax]),
                           **crop_args(per[i])) for i in range(n)]
    targets = [None] * n
    simple = (args.get("out_of_bounds_policy", "error") != "trim_to_shape"
              and not args.get("pad_output") and layout in ("HWC", "CHW"))
    if simple:
        out_layout = args.get("output_layout") or layout
        shapes = set()
        for img, (y0, x0, h, w) in zip(images, windows):
            dims = {"H": h, "W": w, "C": img.shape[2 if layout == "HWC" else 0]}
            shapes.add(tuple(dims[c] for c in out_layout))
        if len(shapes) == 1:
            batch = np.empty((n,) + shapes.pop(), to_numpy_dtype(args.get("dtype", "float32")))
            targets = [batch[i] for i in range(n)]

    def one(i):
        return cmn_to_window(images[i], windows[i], layout=layout, out=targets[i],
                             **given(per[i], _CMN_ARGS))
    return [ctx.pool.map(one, n)]
