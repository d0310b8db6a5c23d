"""OpenCV (``cv2``, the ``opencv-python-headless`` wheel) for the CPU kernels that DALI 2.4 runs
on the OpenCV it bundles: ``debayer`` (``demosaicing``), ``clahe``'s 8-bit RGB <-> Lab
conversions and ``jpeg_compression_distortion`` (libjpeg-turbo through ``imencode`` /
``imdecode``).

Only integer / fixed-point OpenCV routines are used, so results do not depend on the CPU:
OpenCV's ``demosaicing`` and 8-bit Lab code are compiled for the wheel's baseline (SSE3 on
x86-64, not dispatched per CPU) and compute in integers; libjpeg-turbo's SIMD routines
(integer DCTs, colour conversion, upsampling) give the same bits as its C code. Two process
settings make that and the thread use predictable, applied at the first use in each thread
(:func:`opencv`), not when ndd is imported (importing cv2 takes ~0.2 s):

* ``cv2.setNumThreads(1)`` (process-wide): OpenCV's own ``parallel_for_`` runs on the calling
  thread; ndd's pool already parallelises over samples (OpenCV releases the GIL);
* ``cv2.ipp.setUseIPP(False)`` (a per-thread setting in OpenCV): Intel IPP picks its code per
  CPU at run time, so none of its routines may stand in for OpenCV's own.
"""
from __future__ import annotations

import threading

__all__ = ["opencv"]

_MODULE = []
_LOCK = threading.Lock()
_THREAD = threading.local()


def opencv():
    """The ``cv2`` module, with OpenCV's threads set to 1 (once per process) and IPP off (once
    per calling thread).

    Returns
    -------
    module
        ``cv2``.
    """
    if not _MODULE:
        with _LOCK:
            if not _MODULE:
                import cv2 as module
                module.setNumThreads(1)
                _MODULE.append(module)
    module = _MODULE[0]
    if not getattr(_THREAD, "ready", False):
        module.ipp.setUseIPP(False)
        _THREAD.ready = True
    return module
