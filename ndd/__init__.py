"""ndd: NVIDIA DALI's dynamic-mode API (``nvidia.dali.experimental.dynamic``), re-implemented
on numpy / torch / nvImageCodec with a graph compiler underneath.

    import ndd
    reader = ndd.readers.File(file_root="photos/", random_shuffle=True)
    for jpegs, labels in reader.next_epoch(batch_size=64):
        images = ndd.decoders.image(jpegs)
        images = ndd.resize(images, size=[224, 224])
"""
from __future__ import annotations

from compiler.types import Device, DType, parse_device as _parse_device
from ndd import _handle_operators  # noqa: F401 - attaches operators and indexing to the handles
from ndd import capture, checkpoint, compile, decoders, math, noise, random, readers, tfrecord, types
from ndd import experimental, io, reductions, segmentation, transforms
from ndd._batch import Batch
from ndd._construct import as_batch, as_tensor, batch, tensor
from ndd._dtypes import (DataType, ImageType, InterpType, bfloat16, bool_ as bool, dtype, float16,
                         float32, float64, int8, int16, int32, int64, type_id, uint8, uint16,
                         uint32, uint64)
from ndd._eval_mode import EvalContext, EvalMode, ThreadPool
from ndd._explain import explain
from ndd._imread import imread
from ndd._op_functions import make_reshape as _make_reshape, namespace_functions as _functions
from ndd._stream import (Stream, get_current_stream, get_default_stream, set_current_stream,
                         set_default_stream, stream)
from ndd._tensor import Tensor
from ndd.external_source import ExternalSource
from runtime.codecs.limits import get_max_image_pixels, set_max_image_pixels
from runtime.threadpool import get_num_threads, set_num_threads

__version__ = "0.1.0"


def device(spec="cpu", id: int | None = None) -> Device | None:
    """``ndd.device("cpu" | "gpu" | "gpu:N" | torch.device | Device, id=None)`` -> ``ndd.Device``
    (DALI's ``ndd.device``; None gives None)."""
    if spec is None:
        return None
    return _parse_device(spec, id)


# ndd.resize, ndd.crop, ...: one function per schema whose public name has no namespace
_ops = _functions("")
globals().update(_ops)
reshape = _make_reshape(_ops["reshape"])   # DALI's positional shape_input (see make_reshape)

__all__ = [
    "Batch", "Tensor", "ExternalSource", "DType", "Device", "EvalMode", "EvalContext",
    "ThreadPool",
    "tensor", "as_tensor", "batch", "as_batch", "dtype", "device",
    "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float16",
    "float32", "float64", "bfloat16", "bool", "DataType", "ImageType", "InterpType", "type_id",
    "set_num_threads", "get_num_threads", "capture", "checkpoint", "compile", "decoders", "math",
    "noise", "random", "readers", "types", "reductions", "transforms", "tfrecord", "experimental",
    "io", "segmentation",
    *_ops,
    "Stream", "stream", "get_default_stream", "set_default_stream", "get_current_stream",
    "set_current_stream", "imread", "explain", "set_max_image_pixels", "get_max_image_pixels",
]
