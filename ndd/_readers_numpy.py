"""``ndd.readers.Numpy``: batches of arrays read from ``.npy`` files (DALI's
``readers.Numpy`` / ``fn.readers.numpy``, CPU backend).

The reading itself is ``runtime/readers/numpy_reader.py`` (listing, regions of interest)
and ``runtime/readers/npy.py`` (the format); iteration, direct calls and state are those of
every reader (``ndd._reader_front.ReaderFront``).
"""

import inspect as _inspect

import numpy as _np

from compiler.ir import Value as _Value, ValueMeta as _ValueMeta
from ndd._batch import Batch as _Batch
from ndd._reader_front import ReaderFront as _ReaderFront, \
    check_max_batch_size as _check_max_batch_size
from ndd._stream import cuda_device_count as _cuda_device_count
from ndd._tensor import Tensor as _Tensor
from runtime.readers.numpy_reader import NumpyReaderCore as _NumpyReaderCore, \
    ROI_ARGS as _ROI_ARGS
from runtime.storage import SampleList as _SampleList

# Accepted for compatibility with DALI's readers.Numpy and ignored.
_IGNORED = ("skip_cached_images", "tensor_init_bytes", "bytes_per_sample_hint", "preserve",
            "register_buffers", "read_ahead")


def _tensor_value(value, name):
    """A constructor argument given as an ndd Tensor: a scalar for a 0-d one (DALI promotes
    those), else the list of its values (the raw tensor argument)."""
    arr = _np.asarray(value)
    if arr.ndim == 0:
        return arr.item(), False
    if arr.ndim > 1:
        raise ValueError(f"readers.Numpy: `{name}` must be a scalar or a 1-D tensor; got a "
                         f"tensor of shape {arr.shape}")
    return arr.tolist(), True


class Numpy(_ReaderFront):
    """Reads arrays from ``.npy`` files: whole, or a region of interest of each.

    Parameters (DALI 2.4's names and defaults)
    -------------------------------------------
    file_root : str, optional
        Folder of the files; alone, the files matching ``file_filter`` directly in it and in
        its immediate sub-folders are read (root files first, then each sub-folder, all
        sorted by name; names starting with '.' are skipped).
    file_list : str, optional
        Text file with one path per line (relative to ``file_root``, else to the list's
        folder). Exclusive with ``files``.
    files : str or list of str, optional
        Explicit paths (relative to ``file_root`` when given).
    file_filter : str, default "*.npy"
        Case-sensitive glob on file names (``file_root`` mode only).
    roi_start, roi_end, roi_shape : int or list of int, optional
        Region of interest in absolute coordinates, one value per ``roi_axes`` axis (a single
        value applies to every axis); an ndd Tensor is accepted (0-d: a scalar).
    rel_roi_start, rel_roi_end, rel_roi_shape : float or list of float, optional
        The same relative to each axis' extent (``round(rel * extent)``, half away from zero).
    roi_axes : int or list of int, optional
        Axes the ROI arguments refer to (default: all, in order).
    out_of_bounds_policy : {"error", "pad", "trim_to_shape"}, default "error"
    fill_value : float, default 0.0
        The value outside the array with ``"pad"`` (cast to the array's dtype).
    random_shuffle, initial_fill, seed, shard_id, num_shards, stick_to_shard, pad_last_batch,
    shuffle_after_epoch, shuffle_after_epoch_seed, prefetch_queue_depth, lazy_init
        As ``readers.File`` (the shared machinery of ``runtime/readers``).
    cache_header_information : bool, default False
        Parse each file's header once.
    dont_use_mmap : bool, default False
        Read regions with one ``pread`` per contiguous run instead of a memory map.
    use_o_direct, register_buffers, read_ahead, skip_cached_images, tensor_init_bytes,
    bytes_per_sample_hint, preserve
        Accepted for compatibility with DALI and ignored.
    max_batch_size, name : positional or keyword, optional (DALI's order)
    device : "cpu" or "gpu"
        "gpu" reads on the CPU and moves each batch to the GPU; without a CUDA device it
        raises RuntimeError.
    enable_checkpointing : bool, default False

    Outputs per batch: a 1-tuple ``(arrays,)``: a Batch of the arrays, C-contiguous in the
    machine's byte order, with the files' dtype (bool, integers, float16/32/64) and no
    layout. All the samples of a batch must have one dtype and number of dimensions.
    The dataset is listed at the first use (an epoch, ``len``, ``get_state``), as DALI's
    reader initializes its backend then.

    Raises
    ------
    ValueError / TypeError
        For bad arguments (naming them); at the first use, an empty dataset or a missing
        file; while reading, a bad ``.npy`` file or a region outside the array (naming the
        file and offset or region).
    """

    KIND = "readers.Numpy"
    STATE_KIND = "ndd.readers.Numpy"

    def __init__(self, max_batch_size=None, name=None, *, enable_checkpointing: bool = False,
                 device="cpu", **kwargs):
        if device not in ("cpu", "gpu", None):
            raise ValueError(f"readers.Numpy: device={device!r}; expected 'cpu' or 'gpu'")
        if device == "gpu" and _cuda_device_count() == 0:
            raise RuntimeError("readers.Numpy(device='gpu'): no CUDA device is available; "
                               "use device='cpu'")
        self.device = device or "cpu"
        _check_max_batch_size(max_batch_size, "readers.Numpy")
        if name is not None:
            kwargs["name"] = name
        for knob in _IGNORED:
            kwargs.pop(knob, None)
        #: the ROI arguments DALI takes as tensor arguments, and those given as (non-0-d)
        #: tensors; ``_init_args``: the constructor's arguments, 0-d tensors as scalars
        self._tensor_arg_names = frozenset(_ROI_ARGS)
        self._raw_tensor_args = {}
        for key in _ROI_ARGS:
            if isinstance(kwargs.get(key), _Tensor):
                kwargs[key], raw = _tensor_value(kwargs[key], key)
                if raw:
                    self._raw_tensor_args[key] = kwargs[key]
            elif isinstance(kwargs.get(key), _Batch):
                raise TypeError(f"readers.Numpy: `{key}` given as a Batch (one region per "
                                f"sample) is not supported; give one region (a list or a "
                                f"Tensor) for every sample")
        self._init_args = dict(kwargs)
        valid = set(_inspect.signature(_NumpyReaderCore.__init__).parameters) | set(
            _inspect.signature(_NumpyReaderCore.__mro__[1].__init__).parameters)
        valid -= {"self", "defer_shard_check", "kwargs", "file_filters",
                  "case_sensitive_filter", "dir_filters", "labels", "read_ahead"}
        unknown = sorted(set(kwargs) - valid)
        if unknown:
            raise TypeError(f"readers.Numpy got unexpected argument(s) {', '.join(unknown)}; "
                            f"valid: enable_checkpointing, {', '.join(sorted(valid))}")
        # listed at the first use: DALI's dynamic readers create their backend then
        kwargs["lazy_init"] = True
        self._setup(_NumpyReaderCore(**kwargs), max_batch_size, enable_checkpointing,
                    kwargs.get("name"))

    def _meta(self, arrays, files):
        dt, nd = arrays[0].dtype, arrays[0].ndim
        for a, f in zip(arrays, files):
            if a.dtype != dt or a.ndim != nd:
                raise ValueError(
                    f"readers.Numpy: the samples of a batch must have one dtype and number of "
                    f"dimensions: {files[0]!r} is {dt} with {nd} dimension(s), {f!r} is "
                    f"{a.dtype} with {a.ndim}")
        return _ValueMeta(dtype=str(dt), ndim=nd, layout="", batch_size=len(arrays))

    def convert_batch(self, item):
        """``(arrays,)``: the Batch of one loaded batch (each sample knows its file)."""
        arrays, idx = item
        files = self._core.files
        info = [files[i] for i in idx]
        b = _Batch(_Value(self._meta(arrays, info), data=_SampleList(arrays, info)))
        return (b.gpu() if self.device == "gpu" else b),

    def convert_sample(self, item):
        """``(array,)``: the Tensor of one loaded sample."""
        arr, i = item
        src = [self._core.files[i]]
        t = _Tensor(_Value(self._meta([arr], src).with_(batch_size=1),
                           data=_SampleList([arr], src)))
        return (t.gpu() if self.device == "gpu" else t),

    def __repr__(self) -> str:
        return f"ndd.readers.Numpy(name={self.name!r})"


__all__ = ["Numpy"]
