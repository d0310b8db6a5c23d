"""``ndd.readers.Caffe`` and ``ndd.readers.Caffe2``: the records of Caffe / Caffe2 LMDB
databases (DALI's ``readers.Caffe`` / ``fn.readers.caffe`` and ``readers.Caffe2`` /
``fn.readers.caffe2``, CPU).

Reading and parsing are ``runtime/readers/caffe.py`` (over ``lmdb_store.py``); iteration,
direct calls and state are every reader's (``ndd._reader_front.ReaderFront``).
"""

from compiler.ir import Value as _Value, ValueMeta as _ValueMeta
from ndd._batch import Batch as _Batch
from ndd._reader_front import ReaderFront as _ReaderFront, core_arguments as _core_arguments
from ndd._tensor import Tensor as _Tensor
from runtime.readers.caffe import Caffe2ReaderCore as _Core2, CaffeReaderCore as _Core
from runtime.storage import SampleList as _SampleList

__all__ = ["Caffe", "Caffe2"]

_COMMON = """
    random_shuffle, initial_fill, seed, shard_id, num_shards, stick_to_shard, pad_last_batch,
    shuffle_after_epoch, shuffle_after_epoch_seed, prefetch_queue_depth, lazy_init
        As ``readers.File`` (``random_shuffle`` permutes the whole shard; DALI draws from a
        buffer of ``initial_fill`` samples: the same samples per epoch, in another order).
    dont_use_mmap, read_ahead, skip_cached_images, tensor_init_bytes, bytes_per_sample_hint,
    preserve
        Accepted for compatibility and ignored.
    max_batch_size, name : positional or keyword, optional
    device : "cpu"
    enable_checkpointing : bool, default False
"""


class _LMDBReader(_ReaderFront):
    """What both LMDB readers share: the construction and the Batches of their outputs."""

    CORE = _Core

    def __init__(self, max_batch_size=None, name=None, *, enable_checkpointing: bool = False,
                 device="cpu", **kwargs):
        kwargs = _core_arguments(self.KIND, self.CORE, kwargs, max_batch_size=max_batch_size,
                                 name=name, device=device)
        self._setup(self.CORE(defer_shard_check=True, **kwargs), max_batch_size,
                    enable_checkpointing, kwargs.get("name"))

    def _value(self, arrays, info, name):
        a = arrays[0]
        for x, f in zip(arrays, info):
            if x.ndim != a.ndim or x.dtype != a.dtype:
                raise ValueError(f"{self.KIND}: the {name} of a batch must have one dtype and "
                                 f"number of dimensions: {info[0]!r} has {a.dtype} with "
                                 f"{a.ndim} dimension(s), {f!r} {x.dtype} with {x.ndim}")
        layout = "HWC" if name == "images" and a.ndim == 3 else ""
        meta = _ValueMeta(dtype=str(a.dtype), ndim=a.ndim, layout=layout,
                          batch_size=len(arrays))
        return _Value(meta, data=_SampleList(arrays, info))

    def convert_batch(self, item):
        """The tuple of Batches (one per output) of one loaded batch."""
        *outs, idx = item
        files = self._core.files
        info = [files[i] for i in idx]
        return tuple(_Batch(self._value(v, info, n))
                     for v, n in zip(outs, self._core.output_names))

    def convert_sample(self, item):
        """The tuple of Tensors (one per output) of one loaded sample."""
        *outs, i = item
        src = [self._core.files[i]]
        return tuple(_Tensor(self._value([v], src, n))
                     for v, n in zip(outs, self._core.output_names))

    @property
    def output_names(self):
        """list of str: what each output holds, in order (``"images"``, ``"labels"``...)."""
        return list(self._core.output_names)

    def __repr__(self) -> str:
        return f"ndd.{self.KIND}({len(self)} samples, name={self.name!r})"


class Caffe(_LMDBReader):
    __doc__ = """Reads (image, label) records of Caffe LMDB databases (``caffe.Datum``).

    Parameters (DALI 2.4's names and defaults)
    -------------------------------------------
    path : str or list of str
        LMDB databases (folders with ``data.mdb``), read one after another, each in key order.
    image_available : bool, default True
        The records hold an image (the first output).
    label_available : bool, default True
        The records hold a label (the last output).""" + _COMMON + """
    Outputs per batch: a tuple of Batches, ``(images, labels)`` (or the one available):
    the images as stored -- encoded (uint8, 1-D) or, for records with ``encoded=False``, raw
    pixels (uint8, ``(height, width, channels)``, layout "HWC") -- and the labels (int32,
    shape (1,)). A record without an image (label) gives an empty one, shape (0,), as DALI.

    Raises
    ------
    ValueError / TypeError
        Bad arguments, a path that is not an LMDB database, databases without records; while
        reading (RuntimeError), a record that is not a ``Datum`` (DALI's words "Error while
        parsing Caffe file"), raw pixels of the wrong size, naming the database and key.
    """

    KIND = "readers.Caffe"
    STATE_KIND = "ndd.readers.Caffe"
    CORE = _Core


class Caffe2(_LMDBReader):
    __doc__ = """Reads the records of Caffe2 LMDB databases (``caffe2.TensorProtos``).

    Parameters (DALI 2.4's names and defaults)
    -------------------------------------------
    path : str or list of str
        LMDB databases (folders), read one after another, each in key order.
    image_available : bool, default True
        The first tensor of a record is the image (STRING: encoded; BYTE: raw pixels).
    label_type : int, default 0
        0 SINGLE_LABEL (one INT32/FLOAT value), 1 MULTI_LABEL_SPARSE (active indices),
        2 MULTI_LABEL_DENSE (a vector), 3 MULTI_LABEL_WEIGHTED_SPARSE (indices, then a FLOAT
        tensor of weights), 4 NO_LABEL.
    num_labels : int, default 1
        Number of classes: the length of the label vector of label types 1 and 3.
    additional_inputs : int, default 0
        Tensors (FLOAT, INT32 or INT64) after the label, one output each.
    bbox : bool, default False
        A last INT32 tensor of 4 values, the last output.""" + _COMMON + """
    Outputs per batch: a tuple of Batches, in this order: images (uint8, 1-D encoded or
    ``(H, W, C)`` raw), the label (type 0: shape (1,); 2: the vector; 1: multi-hot
    ``(num_labels,)`` of the indices' dtype, then the indices; 3: float32 weights
    ``(num_labels,)``, then the indices; 4: none), the additional inputs, the bbox.
    ``output_names`` says which is which.

    Raises
    ------
    ValueError / TypeError
        Bad arguments (a ``label_type`` outside 0..4), a path that is not an LMDB database;
        while reading (RuntimeError), a record that is not a ``TensorProtos`` (DALI's words
        "Error while parsing Caffe2 file"), or whose tensors do not match ``label_type``,
        ``additional_inputs`` and ``bbox``, naming the database and the key.
    """

    KIND = "readers.Caffe2"
    STATE_KIND = "ndd.readers.Caffe2"
    CORE = _Core2
