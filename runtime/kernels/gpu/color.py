"""GPU kernels of the colour ops: ``brightness_contrast``, ``brightness``, ``contrast`` (a scale
and offset per element) and ``hsv``, ``hue``, ``saturation``, ``color_twist`` (a 3 x 3 matrix and
offset per RGB pixel): ``color.cu``, one launch per batch.

The parameters are the CPU kernel's own (``runtime/kernels/cpu/color.py``:
``brightness_contrast_params``, ``hsv_matrix``, ``color_twist_params``), computed per sample on
the host and uploaded as one float32 table; the pixels are computed as the CPU's compiled loops
compute them (float32, no contraction, then DALI's cast), so results are equal bit for bit.
"""
from __future__ import annotations

import numpy as np

from runtime.kernels.cpu.color import brightness_contrast_params, color_twist_params, hsv_matrix
from runtime.kernels.registry import register, sample_args

from .copies import dense_copies
from .launch import address, family_kernel, launch_batch

__all__ = ["TYPES", "scale_batch", "mat3_batch", "PARAMS", "param_row"]

#: element types read and written (color.cu's instantiations)
TYPES = ("uint8", "int8", "uint16", "int16", "int32", "float16", "float32")
_F = np.float32
#: "no offset": x + -0.0 is x for every float32 x (the CPU loops add it too)
_NO_OFF = (-0.0, -0.0, -0.0)


def _launch(ctx, kind, samples, params, out_dtype, per_pixel):
    n = len(samples)
    out_dtype = np.dtype(out_dtype)
    outs = [ctx.empty(tuple(x.shape), out_dtype) for x in samples]
    if n == 0:
        return outs
    in_dtype = np.dtype(samples[0].dtype)
    if in_dtype.name not in TYPES or out_dtype.name not in TYPES:
        raise NotImplementedError(f"colour ops on the GPU: {in_dtype} -> {out_dtype} is not "
                                  f"supported (types {TYPES})")
    samples = dense_copies(ctx, samples)
    table = ctx.upload(np.ascontiguousarray(params, dtype=_F))
    width = table.shape[1] * 4
    base = address(table)
    counts = [int(np.prod(x.shape)) // (3 if per_pixel else 1) for x in samples]
    descs = np.array([(address(x), address(o), base + i * width, c, 0)
                      for i, (x, o, c) in enumerate(zip(samples, outs, counts))],
                     np.int64).reshape(n, 5)
    kernel = family_kernel(ctx, "color", f"color_{kind}_{in_dtype.name}_{out_dtype.name}")
    launch_batch(ctx, kernel, descs, max(counts), reads=[*samples, table], writes=outs)
    return outs


def scale_batch(ctx, samples, mul_add, out_dtype) -> list:
    """``out = cast(float32(x) * mul + add)`` of every sample (``mul_add[i]`` float32 pairs)."""
    return _launch(ctx, "scale", samples, np.asarray(mul_add, _F).reshape(-1, 2), out_dtype,
                   False)


def mat3_batch(ctx, samples, mats, offs, out_dtype, what) -> list:
    """``out_i = cast(((m_i0 r + m_i1 g) + m_i2 b) + off_i)`` of every RGB sample (channels
    last; ``mats[i]`` 3 x 3, ``offs[i]`` 3 float32 values).

    Raises
    ------
    ValueError
        A sample without 3 channels (``what`` names the op).
    """
    for x in samples:
        if x.shape[-1] != 3:
            raise ValueError(f"{what} expects RGB images (3 channels), got {x.shape[-1]} "
                             f"channels")
    params = np.concatenate([np.asarray(mats, _F).reshape(-1, 9),
                             np.asarray(offs, _F).reshape(-1, 3)], axis=1)
    return _launch(ctx, "mat3", samples, params, out_dtype, True)


def _samples(ctx, inputs):
    n = ctx.batch_size
    return [inputs[0][i] if len(inputs[0]) > 1 else inputs[0][0] for i in range(n)]


def _scale_kernel(fn):
    """A batch kernel from ``fn(a, in_dtype, out_dtype) -> (mul, add)`` of one sample."""
    def kernel(ctx, inputs, args):
        samples = _samples(ctx, inputs)
        out_dt = np.dtype(ctx.out_metas[0].dtype)
        pairs = [fn(sample_args(ctx, args, i), x.dtype, out_dt) for i, x in enumerate(samples)]
        return [ctx.samples(scale_batch(ctx, samples, pairs, out_dt))]
    kernel.__doc__ = fn.__doc__
    return kernel


def _mat3_kernel(what, fn):
    """A batch kernel from ``fn(a, in_dtype) -> (m, off)`` of one sample."""
    def kernel(ctx, inputs, args):
        samples = _samples(ctx, inputs)
        out_dt = np.dtype(ctx.out_metas[0].dtype)
        mo = [fn(sample_args(ctx, args, i), x.dtype) for i, x in enumerate(samples)]
        return [ctx.samples(mat3_batch(ctx, samples, [m for m, _ in mo], [o for _, o in mo],
                                       out_dt, what))]
    kernel.__doc__ = fn.__doc__
    return kernel


def _bc(a, in_dt, out_dt):
    """``brightness_contrast`` on the GPU."""
    return brightness_contrast_params(in_dt, out_dt, a.get("brightness", 1.0),
                                      a.get("brightness_shift", 0.0), a.get("contrast", 1.0),
                                      a.get("contrast_center"))


def _brightness(a, in_dt, out_dt):
    """``brightness`` on the GPU (``brightness_contrast`` with ``contrast`` 1)."""
    return brightness_contrast_params(in_dt, out_dt, a.get("brightness", 1.0),
                                      a.get("brightness_shift", 0.0))


def _contrast(a, in_dt, out_dt):
    """``contrast`` on the GPU (``brightness_contrast`` with ``brightness`` 1)."""
    return brightness_contrast_params(in_dt, out_dt, contrast=a.get("contrast", 1.0),
                                      contrast_center=a.get("contrast_center"))


def _hsv(a, in_dt):
    """``hsv`` on the GPU."""
    return hsv_matrix(a.get("hue", 0.0), a.get("saturation", 1.0), a.get("value", 1.0)), _NO_OFF


def _hue(a, in_dt):
    """``hue`` on the GPU (``hsv`` with only ``hue``)."""
    return hsv_matrix(hue=a.get("hue", 0.0)), _NO_OFF


def _saturation(a, in_dt):
    """``saturation`` on the GPU (``hsv`` with only ``saturation``)."""
    return hsv_matrix(saturation=a.get("saturation", 1.0)), _NO_OFF


def _twist(a, in_dt):
    """``color_twist`` on the GPU."""
    m, off = color_twist_params(in_dt, a.get("hue", 0.0), a.get("saturation", 1.0),
                                a.get("brightness", 1.0), a.get("contrast", 1.0))
    return m, (off, off, off)


register("brightness_contrast", "gpu")(_scale_kernel(_bc))
register("brightness", "gpu")(_scale_kernel(_brightness))
register("contrast", "gpu")(_scale_kernel(_contrast))
register("hsv", "gpu")(_mat3_kernel("hsv", _hsv))
register("hue", "gpu")(_mat3_kernel("hsv", _hue))
register("saturation", "gpu")(_mat3_kernel("hsv", _saturation))
register("color_twist", "gpu")(_mat3_kernel("color_twist", _twist))


#: op -> (kind, its per-sample parameters: ``fn(a, in_dtype, out_dtype)`` for "scale",
#: ``fn(a, in_dtype)`` for "mat3"), for the fused kernels reading a colour op's pixels
PARAMS = {"brightness_contrast": ("scale", _bc), "brightness": ("scale", _brightness),
          "contrast": ("scale", _contrast), "hsv": ("mat3", _hsv), "hue": ("mat3", _hue),
          "saturation": ("mat3", _saturation), "color_twist": ("mat3", _twist)}


def param_row(op: str, a, in_dtype, out_dtype) -> tuple[int, np.ndarray]:
    """(kind: 0 scale / 1 mat3, 12 float32 parameters) of colour op ``op`` on one sample with
    arguments ``a``: ``(mul, add)`` or the 3 x 3 matrix and the 3 offsets, as the unfused GPU
    kernel uploads them."""
    kind, fn = PARAMS[op]
    row = np.zeros(12, _F)
    if kind == "scale":
        row[:2] = np.asarray(fn(a, np.dtype(in_dtype), np.dtype(out_dtype)), _F).reshape(2)
        return 0, row
    m, off = fn(a, np.dtype(in_dtype))
    row[:9] = np.asarray(m, _F).reshape(9)
    row[9:] = np.asarray(off, _F).reshape(3)
    return 1, row
