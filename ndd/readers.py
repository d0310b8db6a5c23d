"""Readers (``ndd.readers.File``, ``Numpy``, ``TFRecord``,
``Webdataset``, ``MXNet``, ``Caffe``, ``Caffe2``): stateful objects producing
batches of samples read from files.

Create once, reuse across epochs; ``batch_size`` goes to ``next_epoch``. Source: DALI
``readers.File`` (dynamic mode) / ``fn.readers.file``. The machinery every reader shares
(iteration, direct calls, state) is ``ndd._reader_front.ReaderFront``.
"""

import inspect as _inspect

from compiler.ir import Value as _Value, ValueMeta as _ValueMeta
from ndd._batch import Batch as _Batch
from ndd._construct import ENCODED as _ENC, encoded_batch as _encoded_batch
from ndd._reader_front import ReaderFront as _ReaderFront, \
    check_max_batch_size as _check_max_batch_size
from ndd._readers_caffe import Caffe, Caffe2
from ndd._readers_coco import COCO
from ndd._readers_mxnet import MXNet
from ndd._readers_nemo import NemoAsr
from ndd._readers_numpy import Numpy
from ndd._readers_tfrecord import TFRecord
from ndd._readers_webdataset import Webdataset
from ndd._tensor import Tensor as _Tensor
from runtime.readers.file_reader import FileReaderCore as _FileReaderCore
from runtime.storage import SampleList as _SampleList

# Accepted for compatibility with DALI's readers.File and ignored.
_IGNORED = ("skip_cached_images", "tensor_init_bytes", "bytes_per_sample_hint", "preserve")

_LAB = _ValueMeta(dtype="int32", ndim=1, layout="")


class File(_ReaderFront):
    """Reads files and labels from a folder tree, a file list, or explicit paths.

    Parameters (DALI's names and defaults)
    --------------------------------------
    file_root : str, optional
        Folder with one sub-folder per class; labels are the indices of the sorted class names.
        Hidden files and folders (names starting with '.') are ignored.
    file_list : str, optional
        Text file with ``path label`` lines (paths relative to ``file_root`` or the list).
    files : list of str, optional
        Explicit paths; ``labels`` optional (default 0..N-1).
    random_shuffle : bool, default False
    seed : int, optional
    shard_id, num_shards : int, default 0, 1
    stick_to_shard : bool, default False
    pad_last_batch : bool, default False
    enable_checkpointing : bool, default False
    max_batch_size, name : positional or keyword, optional (DALI's order)
        ``max_batch_size`` (a positive integer) is ``next_epoch``'s batch size when it is
        given none, and the largest batch size of ``next_epoch`` and of calls, as DALI's.
    device : "cpu"
    skip_cached_images, tensor_init_bytes, bytes_per_sample_hint, preserve
        Accepted for compatibility with DALI and ignored.

    Outputs per batch: ``(encoded, labels)``: Batches of uint8 1-D encoded files and int32
    labels of shape (1,). Read them with ``next_epoch`` (an iterator over one epoch) or by
    calling the reader (``reader(batch_size=N)``: the next batch; ``reader()``: the next
    sample), not both.

    Raises
    ------
    ValueError / TypeError
        For bad arguments, an empty folder, a missing file, or a bad ``file_list`` line
        (naming the path and what was expected).
    """

    def __init__(self, max_batch_size=None, name=None, *, enable_checkpointing: bool = False,
                 device="cpu", **kwargs):
        if device not in ("cpu", None):
            raise ValueError(f"readers.File: device={device!r}; the reader runs on the CPU "
                             f"(its outputs are the encoded files); expected 'cpu'")
        _check_max_batch_size(max_batch_size, "readers.File")
        if name is not None:
            kwargs["name"] = name
        for knob in _IGNORED:       # DALI's memory/caching knobs: nothing to tune here
            kwargs.pop(knob, None)
        valid = set(_inspect.signature(_FileReaderCore.__init__).parameters) - {
            "self", "defer_shard_check"}
        unknown = sorted(set(kwargs) - valid)
        if unknown:
            raise TypeError(f"readers.File got unexpected argument(s) {', '.join(unknown)}; "
                            f"valid: enable_checkpointing, {', '.join(sorted(valid))}")
        # DALI reports too many shards when the first epoch starts (see _begin)
        self._setup(_FileReaderCore(defer_shard_check=True, **kwargs), max_batch_size,
                    enable_checkpointing, kwargs.get("name"))

    def convert_batch(self, item):
        """``(encoded, labels)`` Batches of one loaded batch (each knows its files)."""
        encoded, labels, idx = item
        files = self._core.files
        info = [files[i] for i in idx]
        lab = _Value(_LAB.with_(batch_size=len(labels)), data=_SampleList(labels, info))
        return _encoded_batch(encoded, info), _Batch(lab)

    def convert_sample(self, item):
        """``(encoded, label)`` Tensors of one loaded sample."""
        encoded, label, idx = item
        src = [self._core.files[idx]]
        return _Tensor(_Value(_ENC, data=_SampleList([encoded], src))), \
            _Tensor(_Value(_LAB, data=_SampleList([label], src)))

    def __repr__(self) -> str:
        return f"ndd.readers.File({len(self)} samples, name={self.name!r})"


__all__ = ["File", "Numpy", "COCO", "TFRecord", "Webdataset", "MXNet", "Caffe", "Caffe2",
           "NemoAsr"]
