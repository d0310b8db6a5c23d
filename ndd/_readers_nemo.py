"""``ndd.readers.NemoAsr``: speech and transcripts from NeMo ASR manifests (DALI's
``readers.NemoAsr`` / ``fn.readers.nemo_asr``, CPU).

Reading and decoding are ``runtime/readers/nemo_asr.py``; iteration, direct calls and state
are every reader's (``ndd._reader_front.ReaderFront``).
"""

from compiler.ir import Value as _Value, ValueMeta as _ValueMeta
from ndd._batch import Batch as _Batch
from ndd._dtypes import dtype as _dtype, to_numpy as _to_numpy
from ndd._reader_front import ReaderFront as _ReaderFront, core_arguments as _core_arguments
from ndd._tensor import Tensor as _Tensor
from runtime.readers.nemo_asr import NemoAsrReaderCore as _Core
from runtime.storage import SampleList as _SampleList

_RATE = _ValueMeta(dtype="float32", ndim=0, layout="")
_TEXT = _ValueMeta(dtype="uint8", ndim=1, layout="")
_IDX = _ValueMeta(dtype="int64", ndim=1, layout="")
_DTYPES = ("float32", "int16", "int32")


def _dtype_name(spec) -> str:
    name = _to_numpy(_dtype(spec)).name
    if name not in _DTYPES:
        raise ValueError(f"readers.NemoAsr: dtype={spec!r} is not supported; expected one of "
                         f"{', '.join(_DTYPES)}")
    return name


class NemoAsr(_ReaderFront):
    """Reads speech (decoded) and transcripts listed in NeMo ASR manifests.

    Parameters (DALI 2.4's names and defaults)
    -------------------------------------------
    manifest_filepaths : str or list of str
        JSON-lines manifests: ``{"audio_filepath": ..., "duration": ..., "text": ...}``.
    read_sample_rate : bool, default True
        Output the sampling rate (float32 scalar).
    read_text : bool, default True
        Output the transcript as UTF-8 bytes (uint8, 1-D; empty when missing).
    read_idxs : bool, default False
        Output the entry's index (int64, shape ``(1,)``), counted after the duration filter.
    sample_rate : float, default -1
        Resample to this rate (<= 0: keep the file's rate).
    quality : float, default 50
        Resampling quality, 0-100.
    downmix : bool, default True
        Average the channels (1-D output); else ``(time, channels)``.
    dtype : DType, default float32
        float32 in [-1, 1], int16 or int32 at full scale.
    min_duration, max_duration : float, default 0
        Drop entries whose manifest duration (seconds) is outside the bounds (0: none).
    random_shuffle, initial_fill, seed, shard_id, num_shards, stick_to_shard, pad_last_batch,
    shuffle_after_epoch, shuffle_after_epoch_seed, prefetch_queue_depth, lazy_init
        As ``readers.File``.
    max_batch_size, name : optional
    device : "cpu"
    enable_checkpointing : bool, default False

    Outputs per batch: ``audio``, then ``sample_rate``, ``text``, ``idx`` as selected.

    Raises
    ------
    ValueError / TypeError
        Bad arguments, an unreadable manifest or a malformed line (naming the file and line),
        no entries left; while reading (RuntimeError / DecodeError), a missing or corrupt
        audio file (naming it).
    """

    KIND = "readers.NemoAsr"
    STATE_KIND = "ndd.readers.NemoAsr"

    def __init__(self, max_batch_size=None, name=None, *, enable_checkpointing: bool = False,
                 device="cpu", read_sample_rate=True, read_text=True, read_idxs=False,
                 dtype="float32", **kwargs):
        kwargs = _core_arguments("readers.NemoAsr", _Core, kwargs,
                                 max_batch_size=max_batch_size, name=name, device=device)
        self._outputs = (True, bool(read_sample_rate), bool(read_text), bool(read_idxs))
        dtype = _dtype_name(dtype)
        self._audio_meta = _ValueMeta(dtype=dtype, ndim=1 if kwargs.get("downmix", True)
                                      else 2, layout="")
        self._setup(_Core(defer_shard_check=True, dtype=dtype, **kwargs), max_batch_size,
                    enable_checkpointing, kwargs.get("name"))

    def _selected(self, values):
        return tuple(v for v, on in zip(values, self._outputs) if on)

    def convert_batch(self, item):
        """The selected outputs of one loaded batch, as Batches."""
        audio, rates, texts, idxs, idx = item
        info = [self._core.files[i] for i in idx]
        metas = (self._audio_meta, _RATE, _TEXT, _IDX)
        out = [_Batch(_Value(m.with_(batch_size=len(v)), data=_SampleList(v, info)))
               for m, v in zip(metas, (audio, rates, texts, idxs))]
        return self._selected(out)

    def convert_sample(self, item):
        """The selected outputs of one loaded sample, as Tensors."""
        *values, i = item
        src = [self._core.files[i]]
        metas = (self._audio_meta, _RATE, _TEXT, _IDX)
        return self._selected([_Tensor(_Value(m, data=_SampleList([v], src)))
                               for m, v in zip(metas, values)])

    def __repr__(self) -> str:
        return f"ndd.readers.NemoAsr({len(self)} entries, name={self.name!r})"


__all__ = ["NemoAsr"]
