"""``ndd.readers.TFRecord``: the features of ``tf.train.Example`` records of TFRecord files
(DALI's ``readers.TFRecord`` / ``fn.readers.tfrecord``, CPU).

Reading is ``runtime/readers/tfrecord_reader.py`` (features) over ``tfrecord.py`` (framing,
CRCs, index files, protobuf); iteration, direct calls and state are every reader's
(``ndd._reader_front.ReaderFront``). Feature descriptions: ``ndd.tfrecord``.
"""

from compiler.ir import Value as _Value, ValueMeta as _ValueMeta
from ndd._batch import Batch as _Batch
from ndd._reader_front import ReaderFront as _ReaderFront, core_arguments as _core_arguments
from ndd._tensor import Tensor as _Tensor
from runtime.readers.tfrecord_reader import TFRecordReaderCore as _Core
from runtime.storage import SampleList as _SampleList



class TFRecord(_ReaderFront):
    """Reads features of the records of TFRecord files.

    Parameters (DALI 2.4's names and defaults)
    -------------------------------------------
    path : str or list of str
        TFRecord files, read in this order (records in file order).
    index_path : str or list of str
        One index file per TFRecord file: ``"offset size"`` lines (DALI's ``tfrecord2idx``;
        ``ndd tfrecord-index FILE INDEX`` writes them). An index that does not match its file
        raises naming both.
    features : dict of str -> ndd.tfrecord.FixedLenFeature / VarLenFeature
        The outputs: int64 -> int64, float32 -> float32, string -> uint8 (the bytes).
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

    Outputs per batch: a dict ``name -> Batch`` (per sample: ``name -> Tensor``), in the
    order of ``features`` (as DALI), no layout.

    Raises
    ------
    ValueError / TypeError
        Bad arguments, a missing or malformed index (naming it), an index that does not match
        its file; while reading (RuntimeError), a corrupt record (CRC), a malformed Example
        or a feature of another type or size than described (naming the file and offset).
    """

    KIND = "readers.TFRecord"
    STATE_KIND = "ndd.readers.TFRecord"

    def __init__(self, max_batch_size=None, name=None, *, enable_checkpointing: bool = False,
                 device="cpu", **kwargs):
        kwargs = _core_arguments("readers.TFRecord", _Core, kwargs, max_batch_size=max_batch_size,
                                 name=name, device=device)
        self._setup(_Core(defer_shard_check=True, **kwargs), max_batch_size,
                    enable_checkpointing, kwargs.get("name"))

    def next_epoch(self, batch_size=None, ctx=None, *, compile=False, capture=None,
                   queue_depth=None):
        """As ``readers.File.next_epoch``; items are dicts ``name -> Batch`` (``Tensor``).

        In compile mode the compiled loop runs over the tuple of the features' batches
        (in the order of ``features``), handed to the loop body as a dict again.
        """
        compiled = capture if capture is not None else compile
        self._as_tuples = bool(compiled)
        it = super().next_epoch(batch_size, ctx, compile=compile, capture=capture,
                                queue_depth=queue_depth)
        return _DictEpoch(it, list(self._core.features)) if compiled else it

    def _batch(self, arrays, info):
        a = arrays[0]
        for x, f in zip(arrays, info):
            if x.ndim != a.ndim:
                raise ValueError(f"readers.TFRecord: the samples of a batch must have one "
                                 f"number of dimensions: {info[0]!r} has {a.ndim}, {f!r} "
                                 f"{x.ndim}")
        meta = _ValueMeta(dtype=str(a.dtype), ndim=a.ndim, layout="", batch_size=len(arrays))
        return _Value(meta, data=_SampleList(arrays, info))

    def convert_batch(self, item):
        """``{name: Batch}`` of one loaded batch."""
        *outs, idx = item
        files = self._core.files
        info = [files[i] for i in idx]
        batches = tuple(_Batch(self._batch(v, info)) for v in outs)
        if getattr(self, "_as_tuples", False):     # a compiled epoch (see next_epoch)
            return batches
        return dict(zip(self._core.features, batches))

    def convert_sample(self, item):
        """``{name: Tensor}`` of one loaded sample."""
        *outs, i = item
        src = [self._core.files[i]]
        return {k: _Tensor(self._batch([v], src)) for k, v in zip(self._core.features, outs)}

    def __repr__(self) -> str:
        return f"ndd.readers.TFRecord({len(self)} samples, name={self.name!r})"


class _DictEpoch:
    """A compiled epoch's iterator whose items (tuples of the features' batches) are handed
    out as dicts ``name -> batch``."""

    def __init__(self, it, keys):
        self._it = it
        self._keys = keys

    def __iter__(self):
        return self

    def __next__(self):
        return dict(zip(self._keys, next(self._it)))

    def close(self) -> None:
        """End the epoch now (as the compiled epoch's ``close``)."""
        self._it.close()


__all__ = ["TFRecord"]
