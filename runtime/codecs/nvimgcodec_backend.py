"""nvImageCodec CPU decoding: one decoder per thread, created lazily.

nvImageCodec's CPU-only decoder (libjpeg-turbo, libpng, libtiff, libwebp, OpenCV, OpenJPEG
plug-ins) limits itself to one thread, so each worker thread gets its own
:class:`nvimgcodec.Decoder` (``threading.local``) and the caller's thread pool provides the
parallelism. Nothing is imported or created at module import time.
"""

import os
import threading

import numpy as np

from runtime.profile import measured

__all__ = ["available", "parse", "usable", "decode_stream"]

_local = threading.local()
_import_lock = threading.Lock()
_module = None
_import_error = None


def _nvimgcodec():
    """Import nvImageCodec once; return the module or None when it cannot be used here."""
    global _module, _import_error
    if _module is not None or _import_error is not None:
        return _module
    with _import_lock:
        if _module is None and _import_error is None:
            # Our DecodeError messages replace the library's own stderr logging.
            os.environ.setdefault("PYNVIMGCODEC_VERBOSITY", "0")
            try:
                from nvidia import nvimgcodec
                _module = nvimgcodec
            except Exception as exc:  # ImportError, or a missing CUDA runtime library
                _import_error = exc
    return _module


def _decoder():
    dec = getattr(_local, "decoder", None)
    if dec is None:
        nv = _nvimgcodec()
        dec = nv.Decoder(device_id=nv.NVIMGCODEC_DEVICE_CPU_ONLY, max_num_cpu_threads=1,
                         backends=[nv.Backend(nv.BackendKind.CPU_ONLY)])
        _local.decoder = dec
    return dec


def available():
    """Return True when nvImageCodec can be imported and a CPU decoder created."""
    if _nvimgcodec() is None:
        return False
    try:
        _decoder()
    except Exception:
        return False
    return True


def parse(buf):
    """Parse a stream's header.

    Parameters
    ----------
    buf : numpy.ndarray
        1-D uint8 array holding the encoded file (must stay alive while the stream is used).

    Returns
    -------
    nvimgcodec.CodeStream or None
        None when nvImageCodec does not recognise the data.
    """
    nv = _nvimgcodec()
    try:
        stream = nv.CodeStream(buf)
        stream.codec_name  # the header is parsed lazily; force it here
    except RuntimeError:
        return None
    return stream


def usable(stream):
    """True when a parsed stream describes an image nvImageCodec can decode.

    nvImageCodec parses some damaged headers into streams of size 0, no channels or no
    sample type (e.g. a BMP of 15 bits per pixel, a JPEG of precision 255); those are left to
    Pillow, which names the problem.
    """
    try:
        np.dtype(stream.dtype)
        return stream.width > 0 and stream.height > 0 and stream.num_channels > 0
    except (TypeError, ValueError, RuntimeError):
        return False


_CMYK_SPECS = None


def is_cmyk(stream):
    """True when the stream stores CMYK or YCCK samples."""
    global _CMYK_SPECS
    if _CMYK_SPECS is None:
        nv = _nvimgcodec()
        # as ints: comparing the enum members themselves costs ~1.5 us a sample
        _CMYK_SPECS = frozenset((int(nv.ColorSpec.CMYK), int(nv.ColorSpec.YCCK)))
    return int(stream.color_spec) in _CMYK_SPECS


def _decode_params(mode, native_depth, adjust_orientation):
    """The calling thread's ``DecodeParams`` for these settings (made once per thread)."""
    cache = getattr(_local, "params", None)
    if cache is None:
        cache = _local.params = {}
    key = (mode, bool(native_depth), bool(adjust_orientation))
    params = cache.get(key)
    if params is None:
        nv = _nvimgcodec()
        spec = {"RGB": nv.ColorSpec.SRGB, "BGR": nv.ColorSpec.SRGB, "GRAY": nv.ColorSpec.GRAY,
                "UNCHANGED": nv.ColorSpec.UNCHANGED}[mode]
        fmt = nv.SampleFormat.I_BGR if mode == "BGR" else nv.SampleFormat.I_AUTO_COMPONENTS
        params = cache[key] = nv.DecodeParams(apply_exif_orientation=bool(adjust_orientation),
                                              color_spec=spec, allow_any_depth=bool(native_depth),
                                              sample_format=fmt)
    return params


@measured("decode")
def decode_stream(stream, mode, roi=None, native_depth=False, adjust_orientation=True):
    """Decode a parsed stream to an interleaved (HWC) numpy array.

    Parameters
    ----------
    stream : nvimgcodec.CodeStream
        From :func:`parse`.
    mode : {"RGB", "BGR", "GRAY", "UNCHANGED"}
        Colour output: 3 channels RGB or BGR, 1 channel luma (libjpeg-turbo's Y for JPEG), or
        the file's own channels.
    roi : tuple of int, optional
        ``(y0, x0, y1, x1)`` end-exclusive box in oriented (post-EXIF) coordinates; only that
        region is decoded (nvImageCodec ``Region``; bit-exact with decode-then-crop).
    native_depth : bool
        Keep the file's bit depth (e.g. uint16 for 16-bit PNG) instead of scaling to uint8.
    adjust_orientation : bool
        Apply the EXIF orientation.

    Returns
    -------
    numpy.ndarray or None
        C-contiguous array, layout HWC; None when the codec failed to decode the stream.
    """
    params = _decode_params(mode, native_depth, adjust_orientation)
    if roi is not None:
        stream = stream.get_sub_code_stream(region=_nvimgcodec().Region(*[int(v) for v in roi]))
    try:
        image = _decoder().decode(stream, params=params)
    except (RuntimeError, ValueError):
        return None
    if image is None:
        return None
    out = np.asarray(image.cpu())
    if out.ndim == 2:
        out = out[:, :, None]
    return np.ascontiguousarray(out)
