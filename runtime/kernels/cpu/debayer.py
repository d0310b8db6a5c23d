"""``debayer`` on the CPU: demosaicing of single-channel Bayer images (uint8 / uint16).

DALI 2.4's CPU operator is OpenCV's ``demosaicing``; ndd calls the same routine
(:mod:`.ocv`), one image at a time, written in place into one recycled batch buffer (ndd's
pool runs the samples in parallel; OpenCV releases the GIL), and gets DALI's results bit for
bit for every algorithm (measured):

* the Bayer tile: ``blue_position = (by, bx)`` puts blue at the pixels whose row is ``1 + by``
  and column ``1 + bx`` modulo 2 (OpenCV's naming starts at the second row and column):
  ``(0, 0)`` is OpenCV's ``BayerBG``, ``(0, 1)`` ``BayerGB``, ``(1, 0)`` ``BayerGR``, ``(1, 1)``
  ``BayerRG``; the output is RGB;
* ``bilinear_ocv`` (``default``): the missing colours from the 2 / 4 nearest sites of that
  colour (``(a + b + 1) >> 1``, ``(sum + 2) >> 2``), edges copied from their neighbours;
* ``edgeaware_ocv``: green interpolated along the direction of the smaller gradient;
* ``vng_ocv`` (uint8 only, as DALI): variable number of gradients (images under 8 pixels in
  either extent: bilinear, as OpenCV);
* ``gray_ocv``: ``(4899 R + 9617 G + 1868 B)`` of the bilinear estimates in fixed point.

All four are integer arithmetic in OpenCV (VNG's ``1 / n`` averaging: one float32 product
rounded to nearest, no fused multiply-add), compiled for the wheel's baseline instruction set,
not dispatched per CPU: the same bits on every x86-64 CPU. Registers ``debayer``.
"""
from __future__ import annotations


import numpy as np

from runtime.buffers import batch_views
from runtime.kernels.registry import register, sample_args
from runtime.threadpool import map_runs

from .ocv import opencv

__all__ = ["debayer", "ALGORITHMS", "bayer_code"]

#: DALI 2.4's CPU algorithms (``default_npp`` is GPU-only)
ALGORITHMS = ("bilinear_ocv", "edgeaware_ocv", "vng_ocv", "gray_ocv")

#: OpenCV's Bayer pattern name of each ``blue_position``
_PATTERNS = {(0, 0): "BG", (0, 1): "GB", (1, 0): "GR", (1, 1): "RG"}
#: the conversion-code suffix of each algorithm
_SUFFIX = {"bilinear_ocv": "2RGB", "edgeaware_ocv": "2RGB_EA", "vng_ocv": "2RGB_VNG",
           "gray_ocv": "2GRAY"}


def bayer_code(algorithm: str, blue_position) -> int:
    """OpenCV's ``COLOR_Bayer*`` conversion code of ``algorithm`` at ``blue_position``
    ``(by, bx)`` (both 0 or 1)."""
    return getattr(opencv(), "COLOR_Bayer" + _PATTERNS[tuple(blue_position)]
                   + _SUFFIX[algorithm])


def _checked_args(algorithm, blue_position, dtype):
    """``(by, bx)`` of ``blue_position``, after DALI's checks of the arguments (``dtype``: the
    input's)."""
    if dtype not in (np.uint8, np.uint16):
        raise ValueError(f"debayer supports uint8 and uint16 input, got {dtype}")
    if algorithm == "default_npp":
        raise ValueError("default_npp algorithm is not supported on CPU.")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"Unsupported debayer algorithm was specified: `{algorithm}`.")
    if algorithm == "vng_ocv" and dtype != np.uint8:
        raise ValueError("VNG debayering only supported with UINT8.")
    by, bx = (int(v) for v in np.asarray(blue_position).reshape(-1)[:2])
    if not (0 <= by <= 1 and 0 <= bx <= 1):
        raise ValueError(f"The `blue_position` position must lie within 2x2 tile, got: "
                         f"{by} x {bx}.")
    return by, bx


def _checked_image(img):
    """``img`` as a 2-D array, after DALI's checks of its shape."""
    if img.ndim == 3:
        if img.shape[2] != 1:
            raise ValueError(f"debayer expects single-channel images (HW or HWC with 1 "
                             f"channel), got shape {img.shape}")
        img = img[:, :, 0]
    if img.ndim != 2:
        raise ValueError(f"debayer expects HW images, got {img.ndim} dimensions")
    h, w = img.shape
    if h % 2 or w % 2:
        raise ValueError(f"The height and width of the image to debayer must be even. "
                         f"However, the sample has shape {h} x {w}.")
    return img


def _demosaic_into(img, code, out):
    """OpenCV's demosaicing of 2-D ``img`` (checked) with conversion ``code`` into ``out``."""
    h, w = img.shape
    if h == 0 or w == 0:
        return out
    got = opencv().demosaicing(np.ascontiguousarray(img), code, dst=out)
    if got is not out:          # OpenCV allocated anew (it does not for a matching ``out``)
        out[...] = got.reshape(out.shape)
    return out


def debayer(img, *, algorithm="bilinear_ocv", blue_position=(0, 0), out=None) -> np.ndarray:
    """Demosaic one ``(H, W)`` (or ``(H, W, 1)``) Bayer image (see the module docstring).

    Parameters
    ----------
    img : array-like
        uint8 or uint16, even height and width.
    algorithm : str
        One of :data:`ALGORITHMS`.
    blue_position : sequence of 2 ints
        ``(y, x)`` of blue in the 2 x 2 tile starting at the second row and column.
    out : numpy.ndarray, optional
        A C-contiguous ``(H, W, 3)`` (``(H, W, 1)`` for ``gray_ocv``) array of the input's
        dtype to write the result into (OpenCV writes it in place).

    Returns
    -------
    numpy.ndarray
        ``(H, W, 3)`` RGB (``(H, W, 1)`` for ``gray_ocv``), the input's dtype (``out`` when
        given).

    Raises
    ------
    ValueError
        Not uint8 / uint16, not one channel, odd height or width, an unknown algorithm,
        ``default_npp`` (GPU-only), ``vng_ocv`` on uint16, a blue position outside the 2 x 2
        tile (DALI's messages).
    """
    img = np.asarray(img)
    if img.ndim == 3 and img.shape[2] != 1 or img.ndim not in (2, 3):
        _checked_image(img)                         # DALI's message for the shape first
    bp = _checked_args(algorithm, blue_position, img.dtype)
    img = _checked_image(img)
    h, w = img.shape
    ch = 1 if algorithm == "gray_ocv" else 3
    if out is None:
        out = (np.zeros if h == 0 or w == 0 else np.empty)((h, w, ch), img.dtype)
    return _demosaic_into(img, bayer_code(algorithm, bp), out)


def _out_shape(x: np.ndarray, algorithm: str, sequence: bool) -> tuple:
    """The output shape of input sample ``x`` (``HW``, ``HWC`` or, as a sequence, ``FHW`` /
    ``FHWC``)."""
    lead = 3 if sequence else 2
    return tuple(x.shape[:lead]) + (1 if algorithm == "gray_ocv" else 3,)


@register("debayer", "cpu")
def debayer_kernel(ctx, inputs, args):
    """``debayer`` of the batch (every frame of an ``FHW`` sequence), the samples written into
    views of one recycled batch buffer (:func:`runtime.buffers.batch_views`: warm pages; a
    fresh array per sample faulted all its pages in again, which cost more than OpenCV's
    demosaicing itself), consecutive samples per pool task."""
    images, n = inputs[0], ctx.batch_size
    xs = [np.asarray(images[i] if len(images) > 1 else images[0]) for i in range(n)]
    sequence = (ctx.in_metas[0].layout or "").startswith("F")
    kws = []
    for i in range(n):
        a = sample_args(ctx, args, i)
        alg = a.get("algorithm") or "default"
        kws.append(dict(algorithm="bilinear_ocv" if alg == "default" else alg,
                        blue_position=a["blue_position"]))
    shapes = [_out_shape(x, kw["algorithm"], sequence) for x, kw in zip(xs, kws)]
    dt = np.dtype(ctx.out_metas[0].dtype)
    outs = batch_views(shapes, dt)

    def one(i):
        x, kw, out = xs[i], kws[i], outs[i]
        if x.ndim == (4 if sequence else 3) and x.shape[-1] != 1:   # (the layout's rank:
            raise ValueError(f"debayer expects single-channel images (HW or HWC with 1 "
                             f"channel), got shape {x.shape[-3:]}")  # inferred)
        bp = _checked_args(kw["algorithm"], kw["blue_position"], x.dtype)
        code = bayer_code(kw["algorithm"], bp)
        for img, o in zip(x, out) if sequence else ((x, out),):
            _demosaic_into(_checked_image(img), code, o)
    map_runs(ctx.pool, n, one)
    return [outs]
