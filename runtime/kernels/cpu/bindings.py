"""Registers the CPU kernels: binds each op's node arguments to the per-sample functions.

Per-sample functions live in their own modules (codecs, resize, crop, cmn, ...); this module
only maps argument names and picks the per-sample values. Imported lazily by the registry.
"""
from __future__ import annotations

import numpy as np

from runtime.kernels.registry import per_sample, register
from runtime.kernels.cpu import random as _random  # noqa: F401  (registers random kernels)
from runtime.kernels.cpu import fused as _fused  # noqa: F401  (registers fused kernels)

_SIZE_ARGS = ("size", "resize_x", "resize_y", "resize_shorter", "resize_longer", "mode",
              "max_size", "roi_start", "roi_end", "roi_relative", "subpixel_scale")
_CROP_ARGS = ("crop", "crop_h", "crop_w", "crop_pos_x", "crop_pos_y")


def _pick(args, names):
    return {k: args[k] for k in names if args.get(k) is not None}


def _layout(ctx, k=0):
    m = ctx.in_metas[k]
    return m.layout or {3: "HWC", 2: "HW", 4: "FHWC"}.get(m.ndim, "")


def _sample_name(inputs, i):
    info = getattr(inputs, "source_info", None)
    if info is not None:
        return f"sample {i} ({info[i]!r})"
    return f"sample {i}"


# ------------------------------------------------------------------ decoders
def _decode_kernel(window_fn):
    def kernel(ctx, inputs, args):
        from runtime.codecs.image import decode, parse_image
        from runtime.kernels.registry import sample_args
        data = inputs[0]

        def one(i):
            a = sample_args(ctx, args, i)
            name = _sample_name(data, i)
            roi = None
            x = data[i]
            if window_fn is not None:
                x = parse_image(x, sample=name)     # the decode reuses the parsed header
                info = x.info()
                roi = window_fn((info.height, info.width), a, i)
            return decode(x, output_type=a.get("output_type", "RGB"), roi=roi,
                          dtype=a.get("dtype", "uint8"), sample=name,
                          adjust_orientation=a.get("adjust_orientation", True))
        return [ctx.pool.map(one, ctx.batch_size)]
    return kernel


def _crop_roi(in_hw, a, i):
    from runtime.kernels.cpu.crop_window import crop_window
    y0, x0, h, w = crop_window(in_hw, **_pick(a, _CROP_ARGS))
    return _clamp_roi(y0, x0, h, w, in_hw, "crop window")


def _clamp_roi(y0, x0, h, w, in_hw, what):
    H, W = in_hw
    if y0 < 0 or x0 < 0 or y0 + h > H or x0 + w > W or h <= 0 or w <= 0:
        raise ValueError(f"{what} (y={y0}, x={x0}, h={h}, w={w}) is outside the image of "
                         f"{H}x{W} pixels")
    return (y0, x0, y0 + h, x0 + w)


def _slice_roi(in_hw, a, i, anchor=None, shape=None):
    H, W = in_hw
    names = a.get("axis_names") or "WH"
    axes = a.get("axes")
    if axes is not None:
        names = "".join("HW"[ax] if ax in (0, 1) else "?" for ax in axes)
    extent = {"H": H, "W": W}
    start = {"H": 0.0, "W": 0.0}
    size = {"H": float(H), "W": float(W)}

    def put(vals, target, scale, rel):
        vals = (vals,) if np.isscalar(vals) else tuple(vals)
        if len(vals) != len(names):
            raise ValueError(f"expected {len(names)} coordinates for axis_names {names!r}, got "
                             f"{len(vals)}")
        for ax, v in zip(names, vals):
            if ax not in extent:
                raise ValueError(f"axis_names {names!r}: only H and W can be sliced")
            target[ax] = float(v) * (extent[ax] if rel else 1.0)
    _check_slice_args(a, anchor, shape)
    if anchor is not None:      # DALI: integer anchor/shape inputs are always absolute
        put(anchor, start, None, a.get("normalized_anchor", True) and not _integral(anchor))
    if shape is not None:
        put(shape, size, None, a.get("normalized_shape", True) and not _integral(shape))
    if a.get("shape") is not None:
        put(a["shape"], size, None, False)
    if a.get("rel_start") is not None:
        put(a["rel_start"], start, None, True)
    if a.get("start") is not None:
        put(a["start"], start, None, False)
    if a.get("rel_shape") is not None:
        put(a["rel_shape"], size, None, True)
    end = {}
    if a.get("rel_end") is not None:
        put(a["rel_end"], end, None, True)
    if a.get("end") is not None:
        put(a["end"], end, None, False)
    for ax in end:
        size[ax] = end[ax] - start[ax]
    if shape is None and not any(a.get(k) is not None for k in ("shape", "rel_shape", "end",
                                                                  "rel_end")):
        for ax in names:        # a start without an extent: to the end of the image (DALI)
            size[ax] = extent[ax] - start[ax]
    y0 = int(np.floor(start["H"] + 0.5))
    x0 = int(np.floor(start["W"] + 0.5))
    y1 = int(np.floor(start["H"] + size["H"] + 0.5))
    x1 = int(np.floor(start["W"] + size["W"] + 0.5))
    return _clamp_roi(y0, x0, y1 - y0, x1 - x0, in_hw, "slice window")


def _integral(values) -> bool:
    return np.asarray(values).dtype.kind in "iub"


def _check_slice_args(a, anchor, shape):
    """DALI's rules for the slice window: at most one way to give the start (``anchor`` input,
    ``start``, ``rel_start``) and one to give the extent (``shape`` input, ``shape``,
    ``rel_shape``, ``end``, ``rel_end``), and some window at all."""
    starts = [n for n, v in (("the anchor input", anchor), ("start", a.get("start")),
                             ("rel_start", a.get("rel_start"))) if v is not None]
    extents = [n for n, v in (("the shape input", shape), ("shape", a.get("shape")),
                              ("rel_shape", a.get("rel_shape")), ("end", a.get("end")),
                              ("rel_end", a.get("rel_end"))) if v is not None]
    for group, what in ((starts, "start"), (extents, "extent")):
        if len(group) > 1:
            raise ValueError(f"the slice {what} is given twice ({' and '.join(group)}); give "
                             f"one of them")
    if not starts and not extents:
        raise ValueError("no slice window: give the anchor and shape inputs, or start/rel_start "
                         "with end/rel_end/shape/rel_shape")


def _random_roi(in_hw, a, i):
    from runtime.kernels.cpu.crop_window import random_crop_window
    from runtime.kernels.cpu.random import sample_rng
    rng = sample_rng(a["_seeds"], i)
    y0, x0, h, w = random_crop_window(in_hw, rng, random_area=a["random_area"],
                                      random_aspect_ratio=a["random_aspect_ratio"],
                                      num_attempts=a["num_attempts"])
    return (y0, x0, y0 + h, x0 + w)


register("decoders.image")(_decode_kernel(None))
register("decoders.image_crop")(_decode_kernel(_crop_roi))
register("decoders.image_random_crop")(_decode_kernel(_random_roi))


@register("decoders.image_slice")
def _image_slice(ctx, inputs, args):
    from runtime.codecs.image import decode, parse_image
    from runtime.kernels.registry import sample_args
    data = inputs[0]
    anchors = inputs[1] if len(inputs) > 1 else None
    shapes = inputs[2] if len(inputs) > 2 else None

    def one(i):
        a = sample_args(ctx, args, i)
        name = _sample_name(data, i)
        x = parse_image(data[i], sample=name)     # the decode reuses the parsed header
        info = x.info()
        anc = None if anchors is None else anchors[i if len(anchors) > 1 else 0].tolist()
        shp = None if shapes is None else shapes[i if len(shapes) > 1 else 0].tolist()
        roi = _slice_roi((info.height, info.width), a, i, anc, shp)
        return decode(x, output_type=a.get("output_type", "RGB"), roi=roi,
                      dtype=a.get("dtype", "uint8"), sample=name,
                      adjust_orientation=a.get("adjust_orientation", True))
    return [ctx.pool.map(one, ctx.batch_size)]


@register("peek_image_shape")
@per_sample
def _peek(ctx, ins, a, i):
    from runtime.codecs.image import peek_shape
    shape = peek_shape(ins[0], sample=f"sample {i}", image_type=a.get("image_type", "RGB"),
                       adjust_orientation=a.get("adjust_orientation", True))
    return np.asarray(shape, dtype=a.get("dtype", "int64"))


# ------------------------------------------------------------------ geometry
def _resize_sample(image, layout, a, size_args):
    from runtime.kernels.cpu.resize import resample
    from runtime.kernels.cpu.resize_params import resize_output_shape
    if layout.startswith("F"):      # a sequence: every frame alike
        frames = [_resize_sample(f, layout[1:], a, size_args) for f in image]
        return np.stack(frames) if frames else np.empty((0,) + image.shape[1:], image.dtype)
    hw_axes = (0, 1) if layout in ("HWC", "HW") else (1, 2)
    in_hw = (image.shape[hw_axes[0]], image.shape[hw_axes[1]])
    params = resize_output_shape(in_hw, **size_args)
    return resample(image, params, interp_type=a.get("interp_type", "linear"),
                    antialias=a.get("antialias", True), dtype=a.get("dtype"),
                    min_filter=a.get("min_filter"), mag_filter=a.get("mag_filter"), layout=layout)


def resize_size_args(a: dict) -> dict:
    """The size arguments of a ``resize`` (those given) as :func:`resize_output_shape` takes
    them (a single ``size`` / ``max_size`` value applies to both axes there, as in DALI)."""
    return _pick(a, _SIZE_ARGS)


@register("resize")
@per_sample
def _resize(ctx, ins, a, i):
    return _resize_sample(ins[0], _layout(ctx), a, resize_size_args(a))


@register("random_resized_crop")
@per_sample
def _rrc(ctx, ins, a, i):
    from runtime.kernels.cpu.crop_window import random_crop_window
    layout = _layout(ctx)
    img = ins[0]
    in_hw = img.shape[:2] if layout in ("HWC", "HW") else img.shape[1:3]
    from runtime.kernels.cpu.random import sample_rng
    rng = sample_rng(a["_seeds"], i)
    y0, x0, h, w = random_crop_window(in_hw, rng, random_area=a["random_area"],
                                      random_aspect_ratio=a["random_aspect_ratio"],
                                      num_attempts=a["num_attempts"])
    size_args = {"size": a["size"], "roi_start": (y0, x0), "roi_end": (y0 + h, x0 + w)}
    return _resize_sample(img, layout, a, size_args)


@register("crop")
@per_sample
def _crop(ctx, ins, a, i):
    from runtime.kernels.cpu.crop import crop
    return crop(ins[0], layout=_layout(ctx), **_pick(a, _CROP_ARGS + (
        "out_of_bounds_policy", "fill_values", "dtype")))


_CMN_ARGS = ("out_of_bounds_policy", "fill_values", "dtype", "mirror", "mean", "std", "scale",
             "shift", "output_layout", "pad_output")


@register("crop_mirror_normalize")
def _cmn(ctx, inputs, args):
    """crop_mirror_normalize; when every sample's output has the same shape, the outputs are
    views of one preallocated batch array, so ``Batch.torch()`` needs no copy.

    Batch path (:func:`runtime.kernels.cpu.cmn_batch.cmn_batch`, arguments folded once, one
    pool task per thread): HWC/CHW input, no ``pad_output``, windows of one size inside their
    images (policy "error") and constant normalization arguments (``mirror`` and the
    crop may vary per sample).  Anything else goes sample by sample."""
    from runtime.kernels.cpu.cast import to_numpy_dtype
    from runtime.kernels.cpu.cmn import cmn_to_window
    from runtime.kernels.cpu.cmn_batch import cmn_batch, cmn_batch_fits
    from runtime.kernels.cpu.crop_window import crop_window
    from runtime.kernels.registry import sample_arg, sample_args
    layout = _layout(ctx)
    images = inputs[0]
    n = ctx.batch_size
    h_ax, w_ax = (0, 1) if layout in ("HWC", "HW") else (1, 2)
    tensor = set(ctx.tensor_arg_names or ())
    policy = args.get("out_of_bounds_policy", "error")
    policy = getattr(policy, "name", policy)
    constant = ("out_of_bounds_policy", "fill_values", "dtype", "mean", "std", "scale", "shift",
                "output_layout", "pad_output")
    if (n > 0 and len(images) == n and layout in ("HWC", "CHW") and not args.get("pad_output")
            and isinstance(policy, str) and policy.lower() == "error"
            and not tensor.intersection(constant)):
        if tensor.intersection(_CROP_ARGS):
            windows = [crop_window((images[i].shape[h_ax], images[i].shape[w_ax]),
                                   **_pick(sample_args(ctx, args, i), _CROP_ARGS))
                       for i in range(n)]
        else:
            crop = _pick(args, _CROP_ARGS)
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
                            **_pick(args, ("mean", "std", "scale", "shift", "output_layout",
                                           "dtype")))
            return [[out[i] for i in range(n)]]

    per = [sample_args(ctx, args, i) for i in range(n)]
    windows = [crop_window((images[i].shape[h_ax], images[i].shape[w_ax]),
                           **_pick(per[i], _CROP_ARGS)) for i in range(n)]
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
                             **_pick(per[i], _CMN_ARGS))
    return [ctx.pool.map(one, n)]


@register("flip")
@per_sample
def _flip(ctx, ins, a, i):
    from runtime.kernels.cpu.flip import flip
    return flip(ins[0], layout=_layout(ctx), horizontal=a.get("horizontal", 1),
                vertical=a.get("vertical", 0), depthwise=a.get("depthwise", 0))


# ------------------------------------------------------------------ types and layouts
@register("cast")
@per_sample
def _cast(ctx, ins, a, i):
    from runtime.kernels.cpu.cast import cast
    return cast(ins[0], a["dtype"])


@register("copy")
@per_sample
def _copy(ctx, ins, a, i):
    return np.array(ins[0], copy=True)


@register("transpose")
@per_sample
def _transpose(ctx, ins, a, i):
    x = ins[0]
    perm = a.get("perm")
    perm = tuple(range(x.ndim - 1, -1, -1)) if perm is None else tuple(perm)
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"perm {perm} is not a permutation of the {x.ndim} axes of the sample")
    return np.ascontiguousarray(np.transpose(x, perm))


@register("reshape")
@per_sample
def _reshape(ctx, ins, a, i):
    from runtime.kernels.cpu.layout_ops import reshape
    out, _ = reshape(ins[0], shape=a.get("shape"), rel_shape=a.get("rel_shape"),
                     layout=a.get("layout"), src_layout=ctx.in_metas[0].layout or None)
    return out


@register("subscript")
@per_sample
def _subscript(ctx, ins, a, i):
    x = ins[0]
    index = []
    for k, item in enumerate(a["spec"]):
        kind = item[0]
        if kind == "ellipsis":
            index.append(Ellipsis)
        elif kind == "new":
            index.append(None)
        elif kind == "idx":
            v = a[f"at_{k}"] if item[1] == ("t",) else item[1]
            index.append(int(v))
        else:
            lo = a[f"lo_{k}"] if item[1] == ("t",) else item[1]
            hi = a[f"hi_{k}"] if item[2] == ("t",) else item[2]
            index.append(slice(None if lo is None else int(lo), None if hi is None else int(hi),
                               item[3]))
    try:
        out = np.asarray(x[tuple(index)])  # integers on every axis: a 0-d sample (DALI)
        return out if out.flags.c_contiguous else np.ascontiguousarray(out)
    except IndexError as exc:
        raise IndexError(f"sample {i} of shape {x.shape}: {exc}") from None


@register("arithmetic")
@per_sample
def _arith(ctx, ins, a, i):
    from runtime.kernels.cpu.arithmetic import apply
    ops = [ins[item[1]] if item[0] == "t" else item[1] for item in a["operands"]]
    return apply(a["op"], *ops, out_dtype=ctx.out_metas[0].dtype)


@register("transfer")
def _transfer(ctx, inputs, args):
    if args["device"] != "cpu" or ctx.in_metas[0].device.kind != "cpu":
        from runtime.device import require_gpu
        require_gpu("transfer")
        raise NotImplementedError("GPU transfers are not implemented yet")
    return [list(inputs[0])]
