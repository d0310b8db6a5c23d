"""Every GPU kernel module, imported so that each registers its ``(op, "gpu")`` kernels.

The GPU runner imports this module lazily, at its first GPU node; importing it imports numpy
and the CPU modules whose argument logic the GPU kernels share, never cupy (kernels are compiled
at their first launch, :mod:`runtime.kernels.gpu.launch`).

=================  =========================================================  ==================
module             ops                                                        CUDA source
=================  =========================================================  ==================
``copies``         ``crop``, ``flip``, ``transpose``, ``cast``, ``cast_like``  ``copy.cu``,
                                                                              ``cast.cu``
``cmn``            ``crop_mirror_normalize``                                  ``cmn.cu``
``elementwise``    ``arithmetic``, ``elementwise_fused``                      generated per
                                                                              program
``resize``         ``resize``, ``random_resized_crop``                        ``resize.cu``
``color``          ``brightness_contrast``, ``brightness``, ``contrast``,       ``color.cu``
                   ``hsv``, ``hue``, ``saturation``, ``color_twist``
``fused``          ``fused.image`` after the decode: resize/rrc -> [flip] ->  ``resize.cu``,
                   crop_mirror_normalize; flip -> crop_mirror_normalize      ``resize_cmn.cu``
=================  =========================================================  ==================

The schemas of these ops declare ``"gpu"`` in their ``devices``; the executor imports this
catalogue beside the CPU one (``runtime.executor.kernel_for``), so the catalogue test sees every
declared kernel. The aliases of :mod:`compiler.ops.aliases` (``experimental.resize``...) get the
GPU kernels of their originals here, as the CPU catalogue does for the CPU kernels.
"""
from __future__ import annotations

from runtime.kernels.cpu.aliases import register_aliases

from . import cmn, color, copies, elementwise, fused, resize

__all__ = ["MODULES", "GPU_OPS"]

#: the kernel modules, in the order above
MODULES = (copies, cmn, elementwise, resize, fused, color)

#: op -> the kernel module that registers its GPU kernel
GPU_OPS = {
    "crop": copies, "flip": copies, "transpose": copies, "cast": copies, "cast_like": copies,
    "crop_mirror_normalize": cmn, "arithmetic": elementwise, "elementwise_fused": elementwise,
    "resize": resize, "random_resized_crop": resize, "fused.image": fused,
    "brightness_contrast": color, "brightness": color, "contrast": color, "hsv": color,
    "hue": color, "saturation": color, "color_twist": color,
}

register_aliases()      # after every module above: the aliases' originals are registered
