"""GPU image decoders: ``decoders.image`` / ``image_crop`` / ``image_random_crop`` /
``image_slice`` with ``device="gpu"`` (DALI's "mixed" decoders): encoded files in host memory in,
decoded HWC images on the GPU out.

Two paths, one result layout (per-sample device arrays of the stream-ordered pool, on the
decode stream, ``runtime.gpu.state.GpuState.decode_stream``):

* **nvImageCodec's GPU decoder** (a real device, cupy's device interface, nvImageCodec built
  with CUDA; ``decoders.image``, and the regions of ``image_crop`` / ``image_random_crop`` /
  ``image_slice``, the CPU kernel's windows; the boxes of a decoding ``fused.image``,
  :func:`decode_regions`): the batch's upright 8-bit JPEGs go to one batched nvImageCodec
  decode on the node's stream (the hardware JPEG decoder for ``hw_decoder_load`` of them, default 0.9
  as in DALI, the CUDA decoder for the rest; ``hw_decoder_load=0``: CUDA only), with the CPU
  path's parameters (RGB / BGR / GRAY); each image is copied into the pool (device to device)
  and nvImageCodec's buffers are released once that copy has passed. Every other sample --
  other formats, CMYK, 16-bit, an EXIF-rotated file (the CPU path rotates from its own EXIF
  reading), a JPEG the GPU decoder rejects, other output types or dtypes -- is decoded by the
  CPU kernel's decode on the pool threads, with its errors, and they go up with one H2D copy
  (DALI's CPU fallback per sample).
* **Everywhere else** (the fake GPU of the tests and of ``gpu_check --dry-run``, nvImageCodec
  without CUDA): the CPU kernel decodes the batch (same parameters, same
  per-sample errors naming the file) and one packed H2D copy moves it
  (:func:`runtime.gpu.moves.transfer`), so the graph, placement, streams and results are those
  of the GPU decode but for its codec tolerance.

Decoders run ahead of CUDA graphs (``runtime/gpu/capture.py``: never captured). Their encoded
input is read on the host (``compiler.passes.place.reads_on_host``).
"""
from __future__ import annotations

import collections
import os
import threading

import numpy as np

from runtime.codecs import nvimgcodec_backend as nvb
from runtime.codecs.image import decode, parse_image
from runtime.gpu import moves
from runtime.kernels.cpu.decode import crop_roi, random_roi    # (also registers the CPU kernels)
from runtime.kernels.params.slices import slice_roi
from runtime.kernels.registry import lookup, register, sample_args
from runtime.storage import sample_name

__all__ = ["gpu_decoder_available", "gpu_decoder_problem", "decode_image_gpu", "decode_regions",
           "HW_DECODER_LOAD",
           "GPU_OUTPUT_TYPES", "last_backend", "slice_window", "image_slice_gpu"]

#: DALI's default share of a batch for the hardware JPEG decoder (``hw_decoder_load``)
HW_DECODER_LOAD = 0.9
#: output types nvImageCodec's GPU decoder produces exactly as the CPU path asks for them
GPU_OUTPUT_TYPES = ("RGB", "BGR", "GRAY")

_lock = threading.Lock()
_local = threading.local()        # each thread its own decoders (compile mode's prefetcher and
                                  # the eager worker may decode at once)
_held: collections.deque = collections.deque()       # (event, nvImageCodec images) in flight
_state = {"module": None, "why": None, "backend": None}


def _nvimgcodec():
    """nvImageCodec's module when it can decode on a GPU here, else None (checked once)."""
    if _state["module"] is None and _state["why"] is None:
        with _lock:
            if _state["module"] is None and _state["why"] is None:
                os.environ.setdefault("PYNVIMGCODEC_VERBOSITY", "0")
                try:
                    from nvidia import nvimgcodec
                    nvimgcodec.Decoder(device_id=0,
                                       backends=[nvimgcodec.Backend(
                                           nvimgcodec.BackendKind.GPU_ONLY)])
                    _state["module"] = nvimgcodec
                except Exception as exc:  # noqa: BLE001 - a CPU-only build, no CUDA runtime
                    _state["why"] = f"{type(exc).__name__}: {exc}"
    return _state["module"]


def gpu_decoder_available(ctx) -> bool:
    """Whether ``ctx`` runs on a real device where nvImageCodec can decode on the GPU."""
    return getattr(ctx.gpu, "name", "") == "cupy" and _nvimgcodec() is not None


def gpu_decoder_problem() -> str | None:
    """Why nvImageCodec cannot decode on a GPU here (None: it can, or not checked yet)."""
    return _state["why"]


def last_backend() -> str | None:
    """What decoded the last GPU batch: ``"nvimgcodec-gpu"`` (with ``+cpu`` when some samples
    fell back), ``"cpu+h2d"``, or None before the first (``gpu_check`` reports it)."""
    return _state["backend"]


def _decoder(nv, device: int, hw_load: float, fancy: bool):
    key = (device, round(hw_load, 3), fancy)
    decoders = getattr(_local, "decoders", None)
    if decoders is None:
        decoders = _local.decoders = {}
    dec = decoders.get(key)
    if dec is None:
        backends = [nv.Backend(nv.BackendKind.GPU_ONLY)]
        if hw_load > 0:
            backends.insert(0, nv.Backend(nv.BackendKind.HW_GPU_ONLY, load_hint=hw_load))
        dec = decoders[key] = nv.Decoder(device_id=device, backends=backends,
                                          options=":fancy_upsampling=1" if fancy else "")
    return dec


def _params(nv, mode: str):
    """The CPU path's decode parameters (``runtime/codecs/nvimgcodec_backend.py``); the EXIF
    orientation is never nvImageCodec's (the GPU decodes only upright files, :func:`_on_gpu`)."""
    spec = nv.ColorSpec.GRAY if mode == "GRAY" else nv.ColorSpec.SRGB
    fmt = nv.SampleFormat.I_BGR if mode == "BGR" else nv.SampleFormat.I_AUTO_COMPONENTS
    return nv.DecodeParams(apply_exif_orientation=False, color_spec=spec,
                           allow_any_depth=False, sample_format=fmt)


def _on_gpu(parsed, adjust_orientation: bool) -> bool:
    """A stream nvImageCodec's GPU decoder decodes as the CPU path does: an 8-bit JPEG, not
    CMYK / YCCK, stored upright (EXIF orientation 1 as ndd reads it) unless the orientation is
    not applied. (The CPU path applies a rotation itself, from its own EXIF reading; a rotated
    file stays there.)"""
    s = parsed.stream
    if s is None or parsed.fmt != "jpeg" or nvb.is_cmyk(s):
        return False
    info = parsed.info()
    return info.bit_depth == 8 and (not adjust_orientation or info.orientation == 1)


def _release(api) -> None:
    """Drop nvImageCodec images whose copies into the pool have passed."""
    while _held and api.event_done(_held[0][0]):
        _held.popleft()


def decode_image_gpu(ctx, data, args, window_fn=None, per=None, parsed=None) -> list:
    """``decoders.image`` of the host batch ``data`` through nvImageCodec's GPU decoder (see
    the module docstring), or only sample ``i``'s region ``window_fn((H, W), args_i, i)``
    (``decoders.image_crop`` / ``image_random_crop``: the CPU kernel's windows; a fused
    decode's source box). ``per`` / ``parsed``: each sample's decoder arguments / parsed file,
    when the caller has them (else from ``args`` / ``data``). Returns the per-sample device
    arrays."""
    nv = _nvimgcodec()
    n = ctx.batch_size
    if per is None:
        per = [sample_args(ctx, args, i) for i in range(n)]
    modes = {str(a.get("output_type", "RGB")).rpartition(".")[2].upper() for a in per}
    dtypes = {str(a.get("dtype", "uint8")).rpartition(".")[2].lower() for a in per}
    if parsed is None:
        parsed = [parse_image(data[i], sample=sample_name(data, i)) for i in range(n)]
    rois = [None] * n
    if window_fn is not None:
        for i, x in enumerate(parsed):
            info = x.info()
            rois[i] = window_fn((info.height, info.width), per[i], i)
    mode = modes.pop() if len(modes) == 1 else None
    orient = bool(per[0].get("adjust_orientation", True)) if n else True
    gpu_ok = mode in GPU_OUTPUT_TYPES and dtypes == {"uint8"}
    picks = [i for i in range(n) if gpu_ok and _on_gpu(parsed[i], orient)]
    images: dict = {}
    if picks:
        a = per[0]
        hw = a.get("hw_decoder_load")
        dec = _decoder(nv, ctx.device, HW_DECODER_LOAD if hw is None else float(hw),
                       bool(a.get("jpeg_fancy_upsampling")))
        streams = [parsed[i].stream if rois[i] is None else parsed[i].stream.
                   get_sub_code_stream(region=nv.Region(*[int(v) for v in rois[i]]))
                   for i in picks]
        res = dec.decode(streams, params=_params(nv, mode),
                         cuda_stream=ctx.gpu.stream_handle(ctx.stream))
        images = {i: img for i, img in zip(picks, res) if img is not None}
    rest = [i for i in range(n) if i not in images]

    def on_cpu(k):              # the CPU kernel's decode, with its errors
        i = rest[k]
        a = per[i]
        return decode(parsed[i], output_type=a.get("output_type", "RGB"), roi=rois[i],
                      dtype=a.get("dtype", "uint8"), sample=sample_name(data, i),
                      adjust_orientation=a.get("adjust_orientation", True))
    host = dict(zip(rest, ctx.pool.map(on_cpu, len(rest)))) if rest else {}
    out = [None] * n
    if host:
        order = sorted(host)
        up = moves.transfer(ctx, [[host[i] for i in order]], {"device": f"gpu:{ctx.device}"})[0]
        for i, arr in zip(order, up):
            out[i] = arr
    if images:
        _release(ctx.gpu)
        for i, img in images.items():
            src = ctx.gpu.wrap(img)
            if src.ndim == 2:
                src = src.reshape(src.shape + (1,))
            dst = ctx.empty(src.shape, src.dtype)
            ctx.copy(dst, src)
            out[i] = dst
        _held.append((ctx.gpu.record_event(ctx.stream), list(images.values())))
    _state["backend"] = ("nvimgcodec-gpu" + ("+cpu" if host else "")) if images else "cpu+h2d"
    return out


def decode_regions(ctx, data, per, parsed, regions) -> list:
    """Sample ``i`` of the host batch ``data`` (``parsed[i]`` its parsed file, ``per[i]`` its
    decoder arguments) decoded on the GPU, only its region ``regions[i]`` ``(y0, x0, y1, x1)``
    of the oriented image (None: all of it) -- a fused decode's source box. nvImageCodec's GPU
    decoder on a real device (:func:`decode_image_gpu`), else the CPU decode of each region on
    the pool threads (its errors) and one H2D copy. Returns the per-sample device arrays (HWC)."""
    if gpu_decoder_available(ctx):
        return decode_image_gpu(ctx, data, None, lambda hw, a, i: regions[i], per, parsed)

    def on_cpu(i):
        a = per[i]
        return decode(parsed[i], output_type=a.get("output_type", "RGB"), roi=regions[i],
                      dtype=a.get("dtype", "uint8"), sample=sample_name(data, i),
                      adjust_orientation=a.get("adjust_orientation", True))
    host = ctx.pool.map(on_cpu, len(per)) if per else []
    _state["backend"] = "cpu+h2d"
    if not host:
        return []
    return list(moves.transfer(ctx, [list(host)], {"device": f"gpu:{ctx.device}"})[0])


def _mixed(cpu_op: str, gpu_first: bool, window_fn=None):
    """The GPU kernel of decoder ``cpu_op``: nvImageCodec's GPU decode where it can
    (``gpu_first``, on a real device; of the regions ``window_fn`` gives), else the CPU kernel
    and one H2D copy."""
    def kernel(ctx, inputs, args):
        if gpu_first and gpu_decoder_available(ctx):
            return [ctx.samples(decode_image_gpu(ctx, inputs[0], args, window_fn))]
        decoded = lookup(cpu_op, "cpu")(ctx, inputs, args)[0]
        _state["backend"] = "cpu+h2d"
        return moves.transfer(ctx, [decoded], {"device": f"gpu:{ctx.device}"})
    kernel.__name__ = f"{cpu_op.replace('.', '_')}_gpu"
    kernel.__doc__ = f"``{cpu_op}`` with ``device='gpu'`` (see the module docstring)."
    return kernel


register("decoders.image", "gpu")(_mixed("decoders.image", True))
register("decoders.image_crop", "gpu")(_mixed("decoders.image_crop", True, crop_roi))
register("decoders.image_random_crop", "gpu")(
    _mixed("decoders.image_random_crop", True, random_roi))
def slice_window(inputs):
    """The region function of ``decoders.image_slice`` over ``inputs`` (encoded files, then its
    optional ``anchor`` / ``shape`` inputs: one per sample or one for all), as the CPU kernel
    reads them (:func:`runtime.kernels.params.slices.slice_roi`)."""
    anchors = inputs[1] if len(inputs) > 1 else None
    shapes = inputs[2] if len(inputs) > 2 else None

    def window(in_hw, a, i):
        anc = None if anchors is None else np.asarray(anchors[i if len(anchors) > 1 else 0])
        shp = None if shapes is None else np.asarray(shapes[i if len(shapes) > 1 else 0])
        return slice_roi(in_hw, a, None if anc is None else anc.tolist(),
                         None if shp is None else shp.tolist())
    return window


@register("decoders.image_slice", "gpu")
def image_slice_gpu(ctx, inputs, args):
    """``decoders.image_slice`` with ``device='gpu'``: nvImageCodec's region decode of each
    sample's slice window on a device, else the CPU kernel and one H2D copy (see the module
    docstring)."""
    if gpu_decoder_available(ctx):
        return [ctx.samples(decode_image_gpu(ctx, inputs[0], args, slice_window(inputs)))]
    decoded = lookup("decoders.image_slice", "cpu")(ctx, inputs, args)[0]
    _state["backend"] = "cpu+h2d"
    return moves.transfer(ctx, [decoded], {"device": f"gpu:{ctx.device}"})
