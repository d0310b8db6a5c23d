"""Readers (``ndd.readers.File``): stateful objects producing batches of encoded files.

Create once, reuse across epochs; ``batch_size`` goes to ``next_epoch``. Source: DALI
``readers.File`` (dynamic mode) / ``fn.readers.file``.
"""

import inspect as _inspect

from compiler.ir import Value as _Value, ValueMeta as _ValueMeta
from ndd._batch import Batch as _Batch
from ndd._construct import ENCODED as _ENC, encoded_batch as _encoded_batch
from ndd._epoch_rules import start_epoch as _start_epoch
from ndd._eval_mode import EvalContext as _EvalContext
from ndd._tensor import Tensor as _Tensor
from ndd.compile import compiled_epoch as _compiled_epoch
from ndd._state_strings import (decode_reader_state as _decode_reader_state,
                                encode_reader_state as _encode_reader_state,
                                reader_state_from_legacy as _reader_state_from_legacy,
                                state_text as _state_text)
from runtime.readers.file_reader import (FileReaderCore as _FileReaderCore,
                                         ShardCountError as _ShardCountError)
from runtime.storage import SampleList as _SampleList

# Accepted for compatibility with DALI's readers.File and ignored.
_IGNORED = ("skip_cached_images", "tensor_init_bytes", "bytes_per_sample_hint", "preserve")

_LAB = _ValueMeta(dtype="int32", ndim=1, layout="")


class File:
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
        if max_batch_size is not None and (isinstance(max_batch_size, bool) or
                                           not isinstance(max_batch_size, int) or
                                           max_batch_size < 1):
            raise ValueError(f"readers.File: max_batch_size must be a positive integer, got "
                             f"{max_batch_size!r}")
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
        self._core = _FileReaderCore(defer_shard_check=True, **kwargs)
        self._max_batch_size = max_batch_size
        self.enable_checkpointing = bool(enable_checkpointing)
        self._compiled = None      # True/False once next_epoch decided the mode
        #: compile mode's traced per-batch template (``ndd.compile``), set by the first compiled
        #: epoch and replayed by the later ones (False: that epoch made no replayable calls)
        self.compile_template = None
        self._iterated = False
        self._api = None           # "next_epoch" or "__call__": DALI forbids mixing them
        self._call_epoch = None    # the epoch direct calls read from
        self._call_batch_size = None
        self.name = kwargs.get("name")

    def _batch_size(self, batch_size):
        """The batch size of a read: ``batch_size``, else the constructor's
        ``max_batch_size`` (None: samples), as DALI's readers; not above ``max_batch_size``."""
        if batch_size is None:
            return self._max_batch_size
        if self._max_batch_size is not None and isinstance(batch_size, int) and \
                not isinstance(batch_size, bool) and batch_size > self._max_batch_size:
            raise ValueError(f"`batch_size` {batch_size} is larger than the `max_batch_size` "
                             f"{self._max_batch_size} specified when the reader was created")
        return batch_size

    def _begin(self, api: str) -> None:
        """The checks of a first read through ``api``: not mixed with the other way of
        reading, and enough samples for the shards (RuntimeError, DALI's message)."""
        if self._api is not None and self._api != api:
            raise RuntimeError("Cannot mix `samples`, `batches` and `_run`/`__call__` on the "
                               "same reader: this reader was read with "
                               f"`{self._api}`, not `{api}`.")
        try:
            self._core.epoch_size()
        except _ShardCountError as e:
            raise RuntimeError(str(e)) from None
        self._api = api

    # ------------------------------------------------------------------ iteration
    def next_epoch(self, batch_size: int | None = None, ctx: _EvalContext | None = None, *,
                   compile: bool = False, capture: bool | None = None,
                   queue_depth: int | None = None):
        """Iterate over one epoch.

        Parameters
        ----------
        batch_size : int, optional
            Yield tuples of Batches of this size (the last one short unless ``pad_last_batch``);
            without it, the constructor's ``max_batch_size`` (as DALI), and without that
            tuples of Tensors (one sample each).
        ctx : EvalContext, optional
            DALI's evaluation context of the epoch; accepted and checked. The files are read
            by the reader's own thread whatever the context, and the loop body's calls run in
            the caller's current context.
        compile : bool, default False
            Trace the loop body once and replay the compiled graph for later batches
            (``capture`` is an alias).
        queue_depth : int, optional
            Batches prepared ahead in compile mode (default 2; an ndd extension).

        Raises
        ------
        RuntimeError
            If the previous epoch was not fully consumed, compiled and non-compiled iteration
            are mixed, the reader was read by calling it, or the dataset has fewer samples
            than ``num_shards`` (DALI's message).
        ValueError
            A batch size other than the first epoch's (as DALI), or above ``max_batch_size``.
        TypeError
            ``ctx`` is not an ``ndd.EvalContext``.
        """
        if ctx is not None and not isinstance(ctx, _EvalContext):
            raise TypeError(f"next_epoch: ctx must be an ndd.EvalContext or None, got "
                            f"{type(ctx).__name__}")
        what = f"reader {self.name!r}" if self.name else "reader"
        self._begin("next_epoch")
        batch_size = self._batch_size(batch_size)
        if _start_epoch(self, batch_size, compile, capture, what):
            it = self._core.next_epoch(batch_size, return_indices=True)
            self._iterated = True
            return _compiled_epoch(self, self._batches(it), queue_depth)
        it = self._core.next_epoch(batch_size, return_indices=True)
        self._iterated = True
        if batch_size is None:
            return self._samples(it)
        return self._batches(it)

    def _batches(self, it):
        return _EpochIterator(it, self._core.files, batched=True)

    def _samples(self, it):
        return _EpochIterator(it, self._core.files, batched=False)

    # ------------------------------------------------------------------ info and state
    def __len__(self) -> int:
        return len(self._core)

    def epoch_size(self) -> int:
        return self._core.epoch_size()

    def __call__(self, *, batch_size: int | None = None):
        """Read the next batch (or, without a batch size, the next sample): DALI's direct
        call of a reader.

        Successive calls go through the epochs one after another: an epoch's last batch is
        short unless ``pad_last_batch`` (see ``docs/semantics.md``, readers.File), and the
        next call starts the next epoch.

        Parameters
        ----------
        batch_size : int, optional
            At most the constructor's ``max_batch_size``; without it, one sample (as DALI's
            ``reader()``, even when ``max_batch_size`` is given).

        Returns
        -------
        tuple
            ``(encoded, labels)``: Batches, or Tensors for a sample.

        Raises
        ------
        RuntimeError
            The reader was iterated with ``next_epoch`` (DALI forbids mixing the two), or
            has fewer samples than shards.
        ValueError
            A batch size other than the first call's, or above ``max_batch_size``.
        """
        self._begin("__call__")
        if batch_size is not None:      # None: a sample, whatever max_batch_size says (DALI)
            batch_size = self._batch_size(batch_size)
        if self._call_epoch is not None and batch_size != self._call_batch_size:
            raise ValueError(f"reader call: batch_size={batch_size!r} differs from the first "
                             f"call's {self._call_batch_size!r}; a reader reads with one batch "
                             f"size")
        while True:
            if self._call_epoch is None:
                it = self._core.next_epoch(batch_size, return_indices=True)
                self._iterated = True
                self._call_batch_size = batch_size
                self._call_epoch = self._samples(it) if batch_size is None else \
                    self._batches(it)
            try:
                return next(self._call_epoch)
            except StopIteration:
                self._call_epoch = None

    def get_metadata(self, batch_size: int | None = None) -> dict:
        """DALI's reader metadata.

        Parameters
        ----------
        batch_size : int, optional
            Accepted as DALI's (checked against ``max_batch_size``); the metadata does not
            depend on it.

        Returns
        -------
        dict
            ``epoch_size`` (samples in the dataset), ``epoch_size_padded``,
            ``number_of_shards``, ``shard_id``, ``pad_last_batch`` and ``stick_to_shard``
            (0/1), the keys and values of DALI's ``GetReaderMeta``.

        Raises
        ------
        RuntimeError
            Fewer samples than shards (DALI's message).
        """
        self._batch_size(batch_size)
        try:
            meta = self._core.get_metadata()
        except _ShardCountError as e:
            raise RuntimeError(str(e)) from None
        return meta

    def get_state(self, *, cuda_stream=None) -> str:
        """The reader's position and shuffle state as one string (see ``ndd.checkpoint``).

        The string is plain ASCII, e.g. ``'ndd.readers.File/2;epoch=1;position=8;...;crc=...'``:
        it survives ``str()``, JSON, pickle and ``torch.save`` unchanged, and :meth:`set_state`
        of a fresh reader over the same dataset takes it back (also as bytes). Taken after the
        last batch of an epoch, it restores to the start of the next epoch; in the middle of
        one, to the next batch of that epoch.

        Before the first epoch it is the state the reader starts from (DALI raises
        RuntimeError there; see ``docs/semantics.md``, "State and checkpoints").

        Parameters
        ----------
        cuda_stream : optional
            Accepted as DALI's (the stream the reader runs on); unused, the reader's outputs
            live on the CPU.

        Returns
        -------
        str
        """
        return _encode_reader_state(self._core.get_state())

    def set_state(self, state) -> None:
        """Continue from a state of :meth:`get_state`; only before the first ``next_epoch``.

        Parameters
        ----------
        state : str or bytes
            :meth:`get_state`'s string (DALI's ``ReaderState``) (the dict earlier ndd versions returned is accepted
            too). The next ``next_epoch`` continues the saved epoch from the next batch (the
            rest of that epoch), or starts the next epoch when the saved one was complete; the
            batch size and mode (batches or samples) are the saved reader's.

        Raises
        ------
        RuntimeError
            If the reader has already been iterated.
        TypeError
            ``state`` is not a str, bytes or dict (the message names DALI's ``ReaderState``).
        ValueError
            Not a File reader state (an RNG's, DALI's, a truncated or altered string), or one
            taken over another dataset (file list, order or labels) or other sharding or
            shuffling arguments.
        """
        if self._iterated:
            raise RuntimeError("set_state: cannot set the reader's state after iteration has "
                               "begun; restore the state into a freshly built reader before "
                               "its first next_epoch")
        text = _state_text(state, "readers.File.set_state", "ReaderState")
        self._core.set_state(_decode_reader_state(text) if text is not None
                             else _reader_state_from_legacy(state))

    def close(self) -> None:
        """End the epoch in progress (also the one direct calls read from) and stop reading
        ahead; the next read starts the following epoch."""
        self._core.close()
        self._call_epoch = None

    def __repr__(self) -> str:
        return f"ndd.readers.File({len(self)} samples, name={self.name!r})"


class _EpochIterator:
    """The iterator ``next_epoch`` returns: tuples of Batches (or Tensors in sample mode).

    ``close()`` ends the epoch early (after a ``break``, keep the iterator to close it:
    ``it = reader.next_epoch(...)``); merely dropping it leaves the epoch open, so the next
    ``next_epoch`` raises until the epoch is consumed or closed (DALI's rule).
    """

    def __init__(self, it, files, batched: bool):
        self._it = it
        self._files = files
        self._batched = batched

    def __iter__(self):
        return self

    def __next__(self):
        if self._batched:
            encoded, labels, idx = next(self._it)
            info = [self._files[i] for i in idx]
            lab = _Value(_LAB.with_(batch_size=len(labels)), data=_SampleList(labels, info))
            return _encoded_batch(encoded, info), _Batch(lab)
        encoded, label, idx = next(self._it)
        src = [self._files[idx]]
        return _Tensor(_Value(_ENC, data=_SampleList([encoded], src))), \
            _Tensor(_Value(_LAB, data=_SampleList([label], src)))

    def __len__(self) -> int:
        return len(self._it)

    def give_back(self, batches: int) -> None:
        """Count the last ``batches`` batches as not read (compile mode's read-ahead)."""
        self._it.give_back(batches)

    def count_delivered(self, delivered) -> None:
        """Compile mode: ``delivered()`` says how many batches the loop body got, so an open
        epoch's "not fully consumed" error counts those (not the read-ahead)."""
        self._it.delivered = delivered

    def close(self) -> None:
        """End this epoch now; the next ``next_epoch`` starts the following epoch."""
        self._it.close()


__all__ = ["File"]
