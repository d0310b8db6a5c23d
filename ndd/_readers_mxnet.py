"""``ndd.readers.MXNet``: the encoded images and labels of MXNet RecordIO files (DALI's
``readers.MXNet`` / ``fn.readers.mxnet``, CPU).

Reading is ``runtime/readers/mxnet.py`` (framing, image header, index files); iteration,
direct calls and state are every reader's (``ndd._reader_front.ReaderFront``).
"""

from compiler.ir import Value as _Value, ValueMeta as _ValueMeta
from ndd._batch import Batch as _Batch
from ndd._construct import ENCODED as _ENC, encoded_batch as _encoded_batch
from ndd._reader_front import ReaderFront as _ReaderFront, core_arguments as _core_arguments
from ndd._tensor import Tensor as _Tensor
from runtime.readers.mxnet import MXNetReaderCore as _Core
from runtime.storage import SampleList as _SampleList

_LAB = _ValueMeta(dtype="float32", ndim=1, layout="")


class MXNet(_ReaderFront):
    """Reads the image records of MXNet RecordIO files.

    Parameters (DALI 2.4's names and defaults)
    -------------------------------------------
    path : str or list of str
        ``.rec`` files, read in this order (records in the order of their index files).
    index_path : str or list of str
        One ``.idx`` file (``"key<TAB>offset"`` lines, MXNet's ``im2rec.py`` / DALI's
        ``rec2idx``) per ``.rec`` file.
    random_shuffle, initial_fill, seed, shard_id, num_shards, stick_to_shard, pad_last_batch,
    shuffle_after_epoch, shuffle_after_epoch_seed, prefetch_queue_depth, lazy_init
        As ``readers.File``.
    dont_use_mmap : bool, default False
        Read records with ``pread`` one by one instead of from memory maps of the files (as
        DALI; the same outputs).
    use_o_direct, read_ahead, skip_cached_images, tensor_init_bytes, bytes_per_sample_hint,
    preserve
        Accepted for compatibility and ignored.
    max_batch_size, name : positional or keyword, optional
    device : "cpu"
    enable_checkpointing : bool, default False

    Outputs per batch: ``(images, labels)``: Batches of the encoded images (uint8, 1-D) and
    the labels (float32, shape ``(1,)``, or ``(flag,)`` for records with ``flag`` labels).

    Raises
    ------
    ValueError / TypeError
        Bad arguments, a missing or malformed index (naming it), an offset past the end of
        its file; while reading (RuntimeError), a bad magic word (an index that does not
        match its file), a truncated record or header (naming the file and offset).
    """

    KIND = "readers.MXNet"
    STATE_KIND = "ndd.readers.MXNet"

    def __init__(self, max_batch_size=None, name=None, *, enable_checkpointing: bool = False,
                 device="cpu", **kwargs):
        kwargs = _core_arguments("readers.MXNet", _Core, kwargs, max_batch_size=max_batch_size,
                                 name=name, device=device)
        self._setup(_Core(defer_shard_check=True, **kwargs), max_batch_size,
                    enable_checkpointing, kwargs.get("name"))

    def convert_batch(self, item):
        """``(images, labels)`` Batches of one loaded batch."""
        images, labels, idx = item
        files = self._core.files
        info = [files[i] for i in idx]
        lab = _Value(_LAB.with_(batch_size=len(labels)), data=_SampleList(labels, info))
        return _encoded_batch(images, info), _Batch(lab)

    def convert_sample(self, item):
        """``(image, label)`` Tensors of one loaded sample."""
        image, label, i = item
        src = [self._core.files[i]]
        return _Tensor(_Value(_ENC, data=_SampleList([image], src))), \
            _Tensor(_Value(_LAB, data=_SampleList([label], src)))

    def __repr__(self) -> str:
        return f"ndd.readers.MXNet({len(self)} samples, name={self.name!r})"


__all__ = ["MXNet"]
