"""The front end shared by ndd's readers (``readers.File``, ``readers.Numpy``...).

:class:`ReaderFront` holds what DALI's readers have in common -- ``next_epoch`` (batches or
samples, compile mode), direct calls, ``get_metadata``, ``get_state``/``set_state``, ``close``
-- over a reader core of ``runtime/readers`` (a ``FileReaderCore`` or a subclass). A reader
class sets up its core with :meth:`ReaderFront._setup` and says how one loaded item becomes
Tensors/Batches (:meth:`ReaderFront.convert_batch`, :meth:`ReaderFront.convert_sample`).
"""

import inspect

from ndd._epoch_rules import start_epoch as _start_epoch
from ndd._eval_mode import EvalContext as _EvalContext
from ndd.compile import compiled_epoch as _compiled_epoch
from ndd.compile.early import drop_early as _drop_early
from ndd._state_strings import (decode_reader_state as _decode_reader_state,
                                encode_reader_state as _encode_reader_state,
                                reader_state_from_legacy as _reader_state_from_legacy,
                                state_text as _state_text)
from runtime.readers.file_reader import ShardCountError as _ShardCountError

__all__ = ["ReaderFront", "EpochItems", "check_max_batch_size", "core_arguments"]

#: DALI reader arguments that tune its own memory and caching; accepted and ignored
IGNORED_KNOBS = ("skip_cached_images", "tensor_init_bytes", "bytes_per_sample_hint", "preserve",
                 "read_ahead")
#: FileReaderCore parameters that a format reader (not readers.File) does not take
_FILE_ONLY = {"self", "defer_shard_check", "kwargs", "file_root", "file_list", "files", "labels",
              "file_filters", "case_sensitive_filter", "dir_filters", "read_ahead"}


def check_max_batch_size(max_batch_size, who: str):
    """``max_batch_size`` checked: None or a positive integer (ValueError otherwise)."""
    if max_batch_size is not None and (isinstance(max_batch_size, bool) or
                                       not isinstance(max_batch_size, int) or
                                       max_batch_size < 1):
        raise ValueError(f"{who}: max_batch_size must be a positive integer, got "
                         f"{max_batch_size!r}")
    return max_batch_size


def core_arguments(kind: str, core_cls, kwargs: dict, *, max_batch_size, name, device) -> dict:
    """The keyword arguments of a format reader's constructor, checked and ready for its core
    (``core_cls``, a FileReaderCore subclass): ``device`` must be the CPU, ``max_batch_size``
    None or positive, DALI's memory knobs dropped, ``name`` passed on.

    Raises
    ------
    ValueError
        Another device, or a bad ``max_batch_size``.
    TypeError
        An argument neither the core nor its base accepts (the valid ones are listed).
    """
    if device not in ("cpu", None):
        raise ValueError(f"{kind}: device={device!r}; the reader runs on the CPU; "
                         f"expected 'cpu'")
    check_max_batch_size(max_batch_size, kind)
    kwargs = {k: v for k, v in kwargs.items() if k not in IGNORED_KNOBS}
    if name is not None:
        kwargs["name"] = name
    valid = set(inspect.signature(core_cls.__init__).parameters) | set(
        inspect.signature(core_cls.__mro__[1].__init__).parameters)
    valid -= _FILE_ONLY
    unknown = sorted(set(kwargs) - valid)
    if unknown:
        raise TypeError(f"{kind} got unexpected argument(s) {', '.join(unknown)}; valid: "
                        f"enable_checkpointing, {', '.join(sorted(valid))}")
    return kwargs


class ReaderFront:
    """Base of the reader classes: iteration, direct calls, metadata, state.

    Subclasses call :meth:`_setup` in their constructor and define ``convert_batch(item)``
    and ``convert_sample(item)``: the tuple of Batches (Tensors) of one loaded batch (sample)
    of their core, whose last element is the dataset indices (index).
    """

    #: the reader's name in messages, and the kind of its state strings
    KIND = "readers.File"
    STATE_KIND = "ndd.readers.File"

    def _setup(self, core, max_batch_size, enable_checkpointing, name):
        self._core = core
        self._max_batch_size = max_batch_size
        self.enable_checkpointing = bool(enable_checkpointing)
        self._compiled = None      # True/False once next_epoch decided the mode
        #: compile mode's traced per-batch template (``ndd.compile``), set by the first compiled
        #: epoch and replayed by the later ones (False: that epoch made no replayable calls)
        self.compile_template = None
        #: compile mode: the runs begun on the next epoch's first batches (ndd/compile/early.py)
        self.compile_early = None
        self._iterated = False
        self._api = None           # "next_epoch" or "__call__": DALI forbids mixing them
        self._call_epoch = None    # the epoch direct calls read from
        self._call_batch_size = None
        self.name = name

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

    def peek_next_batch(self):
        """Compile mode (``ndd/compile/early.py``): the next batch of the next epoch, taken
        before that epoch's ``next_epoch`` as the epoch will give it (the reader still
        delivers it there), when the reader began that epoch early; else None."""
        peek = getattr(self._core, "peek_ahead", None)
        item = peek() if peek is not None else None
        return None if item is None else self.convert_batch(tuple(item))

    def _batches(self, it):
        return EpochItems(it, self.convert_batch)

    def _samples(self, it):
        return EpochItems(it, self.convert_sample)

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
        return _encode_reader_state(self._core.get_state(), self.STATE_KIND)

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
        text = _state_text(state, f"{self.KIND}.set_state", "ReaderState")
        self._core.set_state(
            _decode_reader_state(text, self.STATE_KIND, self._core.state_format)
            if text is not None else _reader_state_from_legacy(state))

    def close(self) -> None:
        """End the epoch in progress (also the one direct calls read from) and stop reading
        ahead; the next read starts the following epoch."""
        self._core.close()
        self._call_epoch = None
        _drop_early(self)           # the next epoch's batches begun early (compile mode)


class EpochItems:
    """The iterator ``next_epoch`` returns: tuples of Batches (or Tensors in sample mode),
    made by ``convert`` from the core's items.

    ``close()`` ends the epoch early (after a ``break``, keep the iterator to close it:
    ``it = reader.next_epoch(...)``); merely dropping it leaves the epoch open, so the next
    ``next_epoch`` raises until the epoch is consumed or closed (DALI's rule).
    """

    def __init__(self, it, convert):
        self._it = it
        self._convert = convert

    def __iter__(self):
        return self

    def __next__(self):
        return self._convert(next(self._it))

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

