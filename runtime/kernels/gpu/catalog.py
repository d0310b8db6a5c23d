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
``fused``          ``fused.image``: [decode (region) ->] resize/rrc [-> [flip]  ``resize.cu``,
                   -> crop_mirror_normalize]; flip -> crop_mirror_normalize  ``resize_cmn.cu``
``fused_color``    ``fused.color`` of 1-4 colour ops [-> crop_mirror_normalize] ``color_cmn.cu``,
                                                                              ``color_chain.cu``
``decode``         ``decoders.image`` (nvImageCodec's GPU decoder on a        nvImageCodec
                   device), ``image_crop`` / ``image_random_crop`` /
                   ``image_slice`` (CPU decode + one H2D copy)
=================  =========================================================  ==================

The schemas of these ops declare ``"gpu"`` in their ``devices``; the executor imports this
catalogue beside the CPU one (``runtime.executor.kernel_for``), so the catalogue test sees every
declared kernel. The aliases of :mod:`compiler.ops.aliases` (``experimental.resize``...) get the
GPU kernels of their originals here, as the CPU catalogue does for the CPU kernels.
"""
from __future__ import annotations

from compiler.ops.aliases import ALIASES
from runtime.kernels import registry

from . import cmn, color, copies, decode, elementwise, fused, fused_color, resize

__all__ = ["MODULES", "GPU_OPS", "register_gpu_aliases"]

#: the kernel modules, in the order above
MODULES = (copies, cmn, elementwise, resize, fused, color, fused_color, decode)

#: op -> the kernel module that registers its GPU kernel
GPU_OPS = {
    "crop": copies, "flip": copies, "transpose": copies, "cast": copies, "cast_like": copies,
    "crop_mirror_normalize": cmn, "arithmetic": elementwise, "elementwise_fused": elementwise,
    "resize": resize, "random_resized_crop": resize, "fused.image": fused,
    "brightness_contrast": color, "brightness": color, "contrast": color, "hsv": color,
    "hue": color, "saturation": color, "color_twist": color,
    "fused.color": fused_color,
    "decoders.image": decode, "decoders.image_crop": decode, "decoders.image_random_crop": decode,
    "decoders.image_slice": decode,
}


def register_gpu_aliases() -> list[str]:
    """Register each alias's original GPU kernel under the alias (not registered yet); returns
    the aliases registered now. (Not ``runtime.kernels.cpu.aliases``: importing it here, maybe
    before the CPU catalogue, would run its registration before the CPU kernels exist.)"""
    done = []
    for alias, original in ALIASES.items():
        kernel = registry.KERNELS.get((original, "gpu"))
        if kernel is not None and (alias, "gpu") not in registry.KERNELS:
            registry.register(alias, "gpu")(kernel)
            done.append(alias)
    return done


register_gpu_aliases()      # after every module above: the aliases' originals are registered
