"""``ndd.readers.Webdataset``: components of the samples of tar archives (DALI's
``readers.Webdataset`` / ``fn.readers.webdataset``, CPU).

Reading is ``runtime/readers/webdataset.py``; iteration, direct calls and state are every
reader's (``ndd._reader_front.ReaderFront``).
"""

from compiler.ir import Value as _Value, ValueMeta as _ValueMeta
from ndd._batch import Batch as _Batch
from ndd._dtypes import dtype as _dtype
from ndd._reader_front import ReaderFront as _ReaderFront, core_arguments as _core_arguments
from ndd._tensor import Tensor as _Tensor
from runtime.readers.webdataset import WebdatasetReaderCore as _Core
from runtime.storage import SampleList as _SampleList



class Webdataset(_ReaderFront):
    """Reads samples of webdataset tar archives: one output per extension set.

    Parameters (DALI 2.4's names and defaults)
    -------------------------------------------
    paths : str or list of str
        The tar archives, read in this order (samples in archive order).
    ext : str or list of str
        One extension set per output; alternatives separated by ';' (``"jpg;png"``). A
        component's extension is the text after the first '.' of its name's last part.
    index_paths : str or list of str, optional
        DALI's index files (``wds2idx``, v1.1/v1.2), one per archive; without them the
        archives are listed with ``tarfile`` at the first use.
    missing_component_behavior : {"", "empty", "skip", "error"}, default ""
        A sample lacking an output's component: an empty output ("" and "empty"), left out
        ("skip"), or RuntimeError ("error", DALI's "Underful sample" message).
    dtypes : DType or list of DType, optional
        One per output (default uint8): each component's bytes viewed as that type (its size
        must be a multiple of the item size).
    case_sensitive_extensions : bool, default True
    random_shuffle, initial_fill, seed, shard_id, num_shards, stick_to_shard, pad_last_batch,
    shuffle_after_epoch, shuffle_after_epoch_seed, prefetch_queue_depth, lazy_init
        As ``readers.File``.
    dont_use_mmap : bool, default False
        Read components with ``pread`` one by one instead of from memory maps of the files (as
        DALI; the same outputs).
    use_o_direct, read_ahead, skip_cached_images, tensor_init_bytes, bytes_per_sample_hint,
    preserve
        Accepted for compatibility and ignored.
    max_batch_size, name : positional or keyword, optional
    device : "cpu"
    enable_checkpointing : bool, default False

    Outputs per batch: a tuple of Batches, one per ``ext`` entry, 1-D, no layout.

    Raises
    ------
    ValueError / TypeError
        Bad arguments; at the first use, an unreadable archive or index, an index that does
        not match its archive (naming both), no samples.
    """

    KIND = "readers.Webdataset"
    STATE_KIND = "ndd.readers.Webdataset"

    def __init__(self, max_batch_size=None, name=None, *, enable_checkpointing: bool = False,
                 device="cpu", **kwargs):
        kwargs = _core_arguments("readers.Webdataset", _Core, kwargs, max_batch_size=max_batch_size,
                                 name=name, device=device)
        dts = kwargs.get("dtypes")
        if dts is not None:
            dts = list(dts) if isinstance(dts, (list, tuple)) else [dts]
            kwargs["dtypes"] = [_dtype(d).ir_name for d in dts]
        kwargs["lazy_init"] = True      # listed at the first use, as DALI's backend
        self._setup(_Core(**kwargs), max_batch_size, enable_checkpointing, kwargs.get("name"))

    @staticmethod
    def _value(arrays, info):
        meta = _ValueMeta(dtype=str(arrays[0].dtype), ndim=1, layout="",
                          batch_size=len(arrays))
        return _Value(meta, data=_SampleList(arrays, info))

    def convert_batch(self, item):
        """The Batches (one per ``ext``) of one loaded batch."""
        *outs, idx = item
        files = self._core.files
        info = [files[i] for i in idx]
        return tuple(_Batch(self._value(v, info)) for v in outs)

    def convert_sample(self, item):
        """The Tensors (one per ``ext``) of one loaded sample."""
        *outs, i = item
        src = [self._core.files[i]]
        return tuple(_Tensor(self._value([v], src)) for v in outs)

    def __repr__(self) -> str:
        return f"ndd.readers.Webdataset(name={self.name!r})"


__all__ = ["Webdataset"]
