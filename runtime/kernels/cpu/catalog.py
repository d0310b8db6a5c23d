"""Every CPU kernel module, imported so that each registers its kernels.

One module per op or small family registers ``(op, "cpu")`` with
:func:`runtime.kernels.registry.register` and holds the implementation:

=========================  ==================================================================
``decode``                 ``decoders.image`` / ``_crop`` / ``_slice`` / ``_random_crop``,
                           ``peek_image_shape``
``resize``                 ``resize``, ``random_resized_crop``
``crop``                   ``crop``
``cmn``                    ``crop_mirror_normalize``
``flip``                   ``flip``
``cast``                   ``cast``
``layout_ops``             ``copy``, ``transpose``, ``reshape``, ``subscript``
``arithmetic``             ``arithmetic``, ``elementwise_fused``
``random``                 ``random.uniform`` / ``normal`` / ``coin_flip`` / ``beta`` /
                           ``choice``
``fused``                  ``fused.image``
``transfer``               ``transfer``
``constant``               ``ones``, ``zeros``, ``full``, ``ones_like``, ``zeros_like``,
                           ``full_like``
``warp``                   ``warp_affine``, ``rotate``
``warp_perspective``       ``experimental.warp_perspective``, ``experimental.remap``
``sphere``                 ``sphere``
``noise``                  ``noise.gaussian`` / ``salt_and_pepper`` / ``shot``
``dims``                   ``expand_dims``, ``stack``, ``per_frame``
``bbox``                   ``bb_flip``, ``random_bbox_crop``, ``bbox_rotate``
``color``                  ``brightness_contrast``, ``hsv``, ``brightness``, ``contrast``,
                           ``hue``, ``saturation``, ``color_twist``,
                           ``color_space_conversion``
``color_hist``             ``equalize``, ``clahe``
``debayer``                ``debayer``
``jpeg_distortion``        ``jpeg_compression_distortion``
``slicing``                ``slice``
``blur``                   ``gaussian_blur``
``filters``                ``laplacian``, ``filter`` (``filters_conv`` / ``filters_corr``: the
                           compiled loops)
``filters_morph``          ``experimental.median_blur`` / ``dilate`` / ``erode``
``detection``              ``coord_flip``, ``bbox_paste``, ``box_encoder``
``shaping``                ``squeeze``, ``cat``, ``pad``, ``one_hot``, ``reinterpret``,
                           ``element_extract``, ``get_property``
``reductions``             ``reductions.sum`` / ``mean`` / ``mean_square`` / ``rms`` / ``min`` /
                           ``max`` / ``std_dev`` / ``variance``
``normalize``              ``normalize``
``transforms``             ``transforms.translation`` / ``scale`` / ``rotation`` / ``shear`` /
                           ``crop`` / ``combine``, ``coord_transform``
``reorder``                ``sequence_rearrange``, ``permute_batch``, ``lookup_table``
``masking``                ``erase``, ``paste``, ``grid_mask``, ``jitter``, ``water``
``file_read``              ``io.file.read``
``numpy_decode``           ``decoders.numpy``
``inflate``                ``decoders.inflate``
``audio``                  ``preemphasis_filter``, ``to_decibels``, ``mel_filter_bank``, ``mfcc``,
                           ``nonsilent_region`` (``audio_jit``: the compiled loops)
``audio_fft``              ``spectrogram``, ``power_spectrum``
``audio_decode``           ``decoders.audio`` (libsndfile: :mod:`runtime.codecs.audio`)
``audio_resample``         ``audio_resample`` (windowed sinc, compiled loop)
``fused_audio``            ``fused.audio`` (the audio front end, one pass per sample)
``multi_paste``            ``multi_paste``
``roi_crop``               ``roi_random_crop``, ``random_crop_generator``
``segmentation``           ``segmentation.select_masks``, ``random_mask_pixel``,
                           ``random_object_bbox``
``tensor_resize``          ``tensor_resize``
``resize_crop_mirror``    ``resize_crop_mirror``
``aliases``                every alias of :mod:`compiler.ops.aliases` (``experimental.*``)
=========================  ==================================================================

The executor imports this module before it runs its first op (lazily: the kernels import
torch and nvImageCodec, which ``import ndd`` does not need).  New worker processes run
:func:`warm_up` before they report ready (:func:`runtime.workers.pool.prepare_with`).
"""
from __future__ import annotations

from runtime.workers.pool import prepare_with

from . import arithmetic, cast, cmn, crop, decode, flip, fused, layout_ops, random, resize
from . import cast_jit, cmn_batch, resize_edges, transfer
from . import bbox, blur, color, constant, dims, noise, slicing, sphere, warp
from . import detection, normalize, reductions, reorder, shaping, transforms
from . import masking
from . import multi_paste, roi_crop, segmentation
from . import color_hist, debayer, jpeg_distortion, warp_perspective
from . import filters, filters_conv, filters_corr, filters_morph
from . import file_read, inflate, numpy_decode
from . import resize_crop_mirror, tensor_resize
from . import audio, audio_decode, audio_fft, audio_jit, audio_resample, fused_audio
from . import aliases  # last: registers the kernels of the aliases' originals

__all__ = ["MODULES", "warm_up"]

#: the kernel modules, in the order of the table above
MODULES = (decode, resize, crop, cmn, flip, cast, layout_ops, arithmetic, random, fused,
           transfer, constant, warp, warp_perspective, sphere,
           noise, dims, bbox, color, color_hist, debayer, jpeg_distortion, slicing, blur,
           shaping, detection,
           reductions, normalize, transforms, reorder, masking, file_read, numpy_decode,
           inflate, tensor_resize, resize_crop_mirror, filters, filters_morph, audio, audio_fft,
           audio_decode, audio_resample, fused_audio, multi_paste, roi_crop, segmentation,
           aliases)


def warm_up() -> None:
    """Compile (or load from numba's cache) every numba kernel now, e.g. before timing or in a
    worker process before it reports ready."""
    resize_edges.warm_up()
    cast_jit.warm_up()
    cmn_batch.warm_up()
    detection.warm_up()
    warp_perspective.warm_up()
    color_hist.warm_up()
    reductions.warm_up()
    tensor_resize.warm_up()
    filters_conv.warm_up()
    filters_corr.warm_up()
    filters_morph.warm_up()
    audio_jit.warm_up()
    audio_resample.warm_up()


prepare_with("runtime.kernels.cpu.catalog:warm_up")
