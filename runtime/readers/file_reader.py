"""Runtime core of ``ndd.readers.File`` (DALI's ``fn.readers.file`` in dynamic mode).

Yields plain numpy arrays (encoded contents, uint8 (size,); label, int32 (1,)) per sample or
per batch, wrapped by the front end. Semantics: ``file_index.py`` (what is listed),
``sharding.py`` (what is read when); differences from DALI 2.4: ``docs/semantics.md``.
"""

from __future__ import annotations

import hashlib
import os
import threading
import weakref

import numpy as np

from runtime.readers.epoch import EpochIterator, EpochRun, ReadAhead
from runtime.readers.file_index import DEFAULT_FILE_FILTERS, build_file_index
from runtime.readers.file_io import make_loader
from runtime.readers.heap import keep_heap_pages
from runtime.readers.prefetch import Prefetcher
from runtime.readers.sharding import ShardSpec, epoch_order, split_batches

__all__ = ["FileReaderCore", "EpochIterator", "STATE_FORMAT", "ShardCountError",
           "dataset_fingerprint"]

#: Tag of the ``get_state`` dictionaries (checked by ``set_state``).
STATE_FORMAT = "ndd.readers.File/1"
_SAMPLE_CHUNK = 16
_CHECKED_STATE_KEYS = ("num_samples", "num_shards", "shard_id", "stick_to_shard",
                       "pad_last_batch", "random_shuffle", "shuffle_after_epoch")


def _check_bool(value, name):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"`{name}` must be a bool; got {value!r} ({type(value).__name__})")
    return bool(value)


def _check_int(value, name, minimum=None):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"`{name}` must be an integer; got {value!r} ({type(value).__name__})")
    if minimum is not None and value < minimum:
        raise ValueError(f"`{name}` must be >= {minimum}; got {value}")
    return int(value)


def _resolve_seed(seed, name):
    """DALI's ``seed=-1`` (or None) means "pick one": draw from OS entropy."""
    if seed is None or (not isinstance(seed, bool) and isinstance(seed, (int, np.integer))
                        and seed == -1):
        return int(np.random.SeedSequence().entropy % (2**63))
    return _check_int(seed, name, minimum=0)


def dataset_fingerprint(paths, labels):
    """16 hex digits naming a dataset: its paths below their deepest common folder, in order,
    and their labels (a copy of the dataset moved to another folder keeps it).

    Parameters
    ----------
    paths : sequence of str
    labels : numpy.ndarray (int32, one per path)

    Returns
    -------
    str
    """
    cut = os.path.commonprefix(list(paths)).rfind(os.sep) + 1
    h = hashlib.blake2b(digest_size=8)
    h.update("\0".join(p[cut:] for p in paths).encode("utf-8", "surrogateescape"))
    h.update(np.ascontiguousarray(labels, dtype="<i4").tobytes())
    return h.hexdigest()


class ShardCountError(ValueError):
    """The dataset has fewer samples than ``num_shards`` (some shard would be empty)."""


class FileReaderCore:
    """Reads (file contents, label) pairs, sharded and optionally shuffled, with prefetching.

    Parameters mirror DALI's ``fn.readers.file`` (names and defaults of DALI 2.4).

    Parameters
    ----------
    file_root : str, optional
        Folder with one sub-folder per class, or the folder ``file_list``/``files`` paths are
        relative to.
    file_list : str, optional
        Text file of ``path label`` lines (exclusive with ``files``).
    files : str or list of str, optional
        Explicit file paths.
    labels : int or list of int, optional
        Labels of ``files``; default ``0..N-1``.
    file_filters : str or list of str
        Glob patterns for the ``file_root`` mode; default DALI's list of image/audio suffixes.
    case_sensitive_filter : bool, default False
    dir_filters : str or list of str, optional
        Glob patterns selecting class folders.
    random_shuffle : bool, default False
        Seeded permutation of the shard, new every epoch (DALI: shuffle buffer).
    seed : int, optional
        Seed of ``random_shuffle``; None or -1 draws one (kept in ``get_state``).
    initial_fill : int, default 1024
        Accepted for compatibility (DALI's shuffle buffer size); the permutation is global.
    shuffle_after_epoch : bool, default False
        Permute the whole dataset every epoch, identically on all shards.
    shuffle_after_epoch_seed : int, optional
        Seed of ``shuffle_after_epoch`` (default 0: fixed, as in DALI).
    shard_id, num_shards : int, default 0, 1
    stick_to_shard : bool, default False
        Without it the shard advances by one every epoch.
    pad_last_batch : bool, default False
        Pad the shard to ``ceil(N/num_shards)`` and the last batch to the batch size by
        repeating the last sample.
    prefetch_queue_depth : int, default 1
        Batches read ahead by the background thread.
    dont_use_mmap, read_ahead, lazy_init : bool
        Accepted for compatibility; every file is read whole with ``readv``. ``lazy_init=True``
        lists the dataset at first use instead of in the constructor.
    name : str, optional
        Reader name (used in thread names and messages).
    defer_shard_check : bool, default False
        Check ``num_shards`` against the dataset size at the first use that needs the shards
        (an epoch, ``len``, the state) instead of in the constructor; DALI's readers report it
        when the first epoch starts.

    Raises
    ------
    ValueError, TypeError
        For bad arguments, an empty dataset, missing files, a bad ``file_list`` line, or a
        ``shard_id`` outside ``[0, num_shards)``.
    ShardCountError
        (a ValueError) Fewer samples than ``num_shards``.
    """

    def __init__(self, *, file_root=None, file_list=None, files=None, labels=None,
                 file_filters=DEFAULT_FILE_FILTERS, case_sensitive_filter=False,
                 dir_filters=None, random_shuffle=False, seed=None, initial_fill=1024,
                 shuffle_after_epoch=False, shuffle_after_epoch_seed=None, shard_id=0,
                 num_shards=1, stick_to_shard=False, pad_last_batch=False,
                 prefetch_queue_depth=1, dont_use_mmap=False, read_ahead=False,
                 lazy_init=False, name=None, defer_shard_check=False):
        self.name = name
        keep_heap_pages()       # batches reuse the freed pages of the last ones (heap.py)
        num_shards = _check_int(num_shards, "num_shards", minimum=1)
        shard_id = _check_int(shard_id, "shard_id")
        if not 0 <= shard_id < num_shards:
            raise ValueError(f"`shard_id` {shard_id} is out of range for num_shards="
                             f"{num_shards}; expected 0 <= shard_id < {num_shards}")
        flags = {k: _check_bool(v, k) for k, v in dict(
            case_sensitive_filter=case_sensitive_filter, random_shuffle=random_shuffle,
            shuffle_after_epoch=shuffle_after_epoch, stick_to_shard=stick_to_shard,
            pad_last_batch=pad_last_batch, dont_use_mmap=dont_use_mmap,
            read_ahead=read_ahead, lazy_init=lazy_init).items()}
        if flags["shuffle_after_epoch"] and (flags["random_shuffle"] or
                                             flags["stick_to_shard"]):
            raise ValueError("`shuffle_after_epoch=True` cannot be combined with "
                             "`random_shuffle=True` or `stick_to_shard=True` (as in DALI)")
        _check_int(initial_fill, "initial_fill", minimum=1)
        self._depth = _check_int(prefetch_queue_depth, "prefetch_queue_depth", minimum=1)
        self._listing_args = dict(
            file_root=file_root, file_list=file_list, files=files, labels=labels,
            file_filters=file_filters, case_sensitive_filter=flags["case_sensitive_filter"],
            dir_filters=dir_filters)
        self._spec_args = dict(
            num_shards=num_shards, shard_id=shard_id,
            stick_to_shard=flags["stick_to_shard"], pad_last_batch=flags["pad_last_batch"],
            random_shuffle=flags["random_shuffle"], seed=_resolve_seed(seed, "seed"),
            shuffle_after_epoch=flags["shuffle_after_epoch"],
            shuffle_after_epoch_seed=0 if shuffle_after_epoch_seed is None else
            _check_int(shuffle_after_epoch_seed, "shuffle_after_epoch_seed", minimum=0))
        self._listed = None      # the file index, before the shard check
        self._index = None
        self._spec = None
        self._lock = threading.RLock()
        self._epoch = 0          # number of the next epoch to start
        self._start_position = 0  # where the next epoch starts (set_state)
        self._run = None          # EpochRun in progress
        self._last_run = None     # the last finished one (a compiled loop may still be in it)
        self._ahead = ReadAhead()  # the next epoch begun early for a compiled loop
        self._mode = None         # "batch" or "sample" once used
        self._batch_size = None
        self._started = False
        self.list_now(flags["lazy_init"], _check_bool(defer_shard_check, "defer_shard_check"))

    # -- dataset ---------------------------------------------------------------------------
    #: what messages call this reader, and the tag of its ``get_state`` dicts (subclasses
    #: reading other formats override both, and :meth:`build_index` / :meth:`make_loader`)
    kind = "File reader"
    state_format = STATE_FORMAT

    def list_now(self, lazy_init: bool, defer_shard_check: bool) -> None:
        """A constructor's end: list now unless ``lazy_init`` (shards checked unless deferred)."""
        if not lazy_init:
            self._listing() if defer_shard_check else self._dataset()

    def build_index(self):
        """The dataset listing (a :class:`FileIndex`): here, of ``fn.readers.file``."""
        return build_file_index(**self._listing_args)

    def make_loader(self, index, with_indices):
        """``indices -> (outputs...[, index list])``, run on the prefetch thread."""
        return make_loader(index.paths, index.labels, with_indices)

    def _listing(self):
        if self._listed is None:
            self._listed = self.build_index()
        return self._listed

    def _dataset(self):
        if self._index is None:
            index = self._listing()
            n, shards = len(index), self._spec_args["num_shards"]
            if n < shards:
                # DALI's words first (its readers' assertion), then which dataset and why
                raise ShardCountError(
                    f'Assert on "num_shards_ <= Size()" failed: The number of input samples: '
                    f'{n}, needs to be at least equal to the requested number of shards: '
                    f'{shards} ({index.source} has {n} sample(s), fewer than num_shards='
                    f'{shards}; every shard needs at least one sample)')
            self._spec = ShardSpec(num_samples=n, **self._spec_args)
            self._index = index
        return self._index

    @property
    def files(self):
        """tuple of str: paths of all samples, in dataset order (all shards)."""
        return self._dataset().paths

    @property
    def labels(self):
        """numpy.ndarray: int32, shape (N,): labels of all samples, in dataset order."""
        return self._dataset().labels.copy()

    def source_info(self, index):
        """Path of dataset sample ``index`` (DALI's ``source_info`` of that sample)."""
        paths = self._dataset().paths
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or \
                not 0 <= index < len(paths):
            raise IndexError(f"sample index {index!r} out of range for {len(paths)} samples")
        return paths[int(index)]

    def epoch_size(self):
        """Dataset size N over all shards (DALI's reader meta ``epoch_size``)."""
        return len(self._dataset())

    def __len__(self):
        """Samples the next (or current) epoch yields, before batch padding: DALI's per-shard
        epoch size (that epoch's shard's size, ``ceil(N/num_shards)`` with ``pad_last_batch``)."""
        self._dataset()
        epoch = self._run.epoch if self._run is not None else self._epoch
        return self._spec.shard_size(epoch)

    def num_batches(self, batch_size):
        """Batches the next (or current) epoch yields with ``batch_size``."""
        batch_size = _check_int(batch_size, "batch_size", minimum=1)
        return -(-len(self) // batch_size)

    def get_metadata(self):
        """DALI-style reader meta: epoch_size, epoch_size_padded, number_of_shards, ..."""
        n = self.epoch_size()
        spec = self._spec
        padded = spec.num_shards * -(-n // spec.num_shards) if spec.pad_last_batch else n
        return {"epoch_size": n, "epoch_size_padded": padded,
                "number_of_shards": spec.num_shards, "shard_id": spec.shard_id,
                "pad_last_batch": int(spec.pad_last_batch),
                "stick_to_shard": int(spec.stick_to_shard)}

    # -- epochs ----------------------------------------------------------------------------
    def next_epoch(self, batch_size=None, *, return_indices=False):
        """Start the next epoch.

        Parameters
        ----------
        batch_size : int, optional
            Yield batches of this size; None yields single samples.
        return_indices : bool, default False
            Also yield the dataset indices of the samples (for ``source_info``).

        Returns
        -------
        EpochIterator
            Per batch: ``(list of uint8 (size,) arrays, list of int32 (1,) arrays)``;
            per sample: ``(uint8 (size,) array, int32 (1,) array)``.

        Raises
        ------
        RuntimeError
            If the previous epoch's iterator was neither consumed nor closed, or the mode
            (batch/sample) or batch size differs from an earlier call.
        ValueError, TypeError
            For a bad ``batch_size``.
        """
        if batch_size is not None:
            batch_size = _check_int(batch_size, "batch_size", minimum=1)
        with self._lock:
            index = self._dataset()
            run = self._run
            if run is None:
                run = ReadAhead.unfinished(self._last_run)
            if run is not None and (not run.finished or run is self._last_run):
                it = run.iterator() if run.iterator is not None else None
                done = it.consumed() if it is not None else run.position
                raise RuntimeError(
                    f"{self._label()}: the iterator of epoch {run.epoch} was not fully "
                    f"consumed ({done} of {len(run.order)} samples read). Consume it "
                    "completely, or close it before calling next_epoch again: keep the "
                    "iterator (it = reader.next_epoch(...); for ... in it: ...; it.close())")
            mode = "sample" if batch_size is None else "batch"
            if self._mode is not None and mode != self._mode:
                raise RuntimeError(
                    f"{self._label()} was used in {self._mode} mode and cannot switch to "
                    f"{mode} mode (next_epoch(batch_size={batch_size}))")
            if mode == "batch" and self._batch_size is not None and \
                    batch_size != self._batch_size:
                raise ValueError(   # DALI: ValueError
                    f"{self._label()} was used with batch_size={self._batch_size}; the batch "
                    f"size cannot change (got batch_size={batch_size})")
            if mode == "batch" and self._start_position % batch_size:
                raise ValueError(
                    f"{self._label()}: the restored position {self._start_position} is not "
                    f"a multiple of batch_size={batch_size}")
            self._mode, self._batch_size, self._started = mode, batch_size, True
            order = epoch_order(self._spec, self._epoch)
            run = EpochRun(self._epoch, order, self._start_position)
            self._start_position = 0
            self._run = run
            rest = order[run.position:]
            if mode == "batch":
                items = split_batches(rest, batch_size, self._spec.pad_last_batch)
            else:
                items = [rest[i:i + _SAMPLE_CHUNK] for i in range(0, len(rest), _SAMPLE_CHUNK)]
            prefetcher = self._ahead.take(run.epoch, batch_size, return_indices,
                                          run.position == 0) or Prefetcher(
                self.make_loader(index, return_indices), items, self._depth,
                name=f"ndd-{self._label()}")
            it = EpochIterator(self, run, prefetcher, batch_size, return_indices)
            run.iterator = weakref.ref(it)
            if run.position >= len(order):
                self.finish(run)
            return it

    def advance(self, run, count):
        """``count`` more samples of ``run`` were handed out (called by its iterator)."""
        with self._lock:
            run.position += count
            if run.position >= len(run.order):
                self.finish(run)

    def unadvance(self, run, count):
        """Undo :meth:`advance` of ``count`` samples (see ``EpochIterator.give_back``); a run
        that reached its end that way is open again, unless another epoch started since."""
        with self._lock:
            run.position = max(0, run.position - count)
            if run.finished and run.position < len(run.order) and self._run is None \
                    and self._epoch == run.epoch + 1:
                self._ahead.drop()
                run.finished = False
                self._run = run
                self._epoch = run.epoch

    def finish(self, run):
        """``run`` is over (consumed or closed): ``next_epoch`` starts the following epoch."""
        with self._lock:
            if not run.finished:
                run.finished = True
                if self._run is run:
                    self._epoch = run.epoch + 1
                    self._run = None
                    self._last_run = run
                    self._ahead.start(run, self._epoch, self._spec, self._depth,
                                      self.make_loader, self._dataset(), f"ndd-{self._label()}")

    def peek_ahead(self):
        """The next epoch's next batch read early, kept for it (``ReadAhead.peek``), or None."""
        return self._ahead.peek()

    def close(self):
        """End the epoch in progress (if any) and stop its prefetch thread (the reader stays
        usable: the next ``next_epoch`` starts the following epoch)."""
        with self._lock:
            self._ahead.drop()
            run = self._run
            if run is None:
                return
            it = run.iterator() if run.iterator is not None else None
            if it is not None:
                it.close()
            else:
                self.finish(run)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _label(self):
        return f"{self.kind} {self.name!r}" if self.name else self.kind

    # -- checkpointing ---------------------------------------------------------------------
    def get_state(self):
        """JSON-serialisable state: where the next delivered sample comes from.

        Returns
        -------
        dict
            ``format``, ``epoch`` (0-based epoch in progress or next), ``position`` (samples
            of that epoch the consumer got: in compile mode without the batches read ahead),
            ``seed``, ``shuffle_after_epoch_seed``, ``mode``, ``batch_size``, the
            dataset/sharding settings that ``set_state`` checks and ``dataset`` (see
            :func:`dataset_fingerprint`).
        """
        with self._lock:
            self._dataset()
            run = self._run if self._run is not None and not self._run.finished else \
                ReadAhead.unfinished(self._last_run)
            if run is not None:
                it = run.iterator() if run.iterator is not None else None
                epoch, position = run.epoch, it.consumed() if it is not None else run.position
            else:
                epoch, position = self._epoch, self._start_position
            spec = self._spec
            state = {"format": self.state_format, "epoch": int(epoch), "position": int(position),
                     "seed": int(spec.seed),
                     "shuffle_after_epoch_seed": int(spec.shuffle_after_epoch_seed),
                     "mode": self._mode, "batch_size": self._batch_size}
            state.update({k: getattr(spec, k) for k in _CHECKED_STATE_KEYS})
            state["dataset"] = self._fingerprint()
            return state

    def _fingerprint(self):
        """``dataset_fingerprint`` of this reader's dataset (computed once)."""
        fp = getattr(self, "_dataset_fp", None)
        if fp is None:
            index = self._dataset()
            fp = self._dataset_fp = dataset_fingerprint(index.paths, index.labels)
        return fp

    def set_state(self, state):
        """Restore a ``get_state`` snapshot; the next epoch continues right after it.

        Raises
        ------
        RuntimeError
            If this reader already started an epoch.
        ValueError
            If the state is malformed or was taken on a different dataset/sharding setup.
        """
        with self._lock:
            if self._started:
                raise RuntimeError(f"{self._label()}: set_state must be called before the "
                                   "first next_epoch")
            if not isinstance(state, dict) or state.get("format") != self.state_format:
                raise ValueError(f"not a {self.kind} state (expected a dict with format="
                                 f"{self.state_format!r}); got {state!r:.200}")
            self._dataset()
            spec = self._spec
            wrong = [f"{k}: state has {state.get(k)!r}, reader has {getattr(spec, k)!r}"
                     for k in _CHECKED_STATE_KEYS if state.get(k) != getattr(spec, k)]
            if wrong:
                raise ValueError(f"{self._label()}: the state belongs to a different "
                                 "dataset or sharding setup (" + "; ".join(wrong) + ")")
            if state.get("dataset") is not None and state["dataset"] != self._fingerprint():
                raise ValueError(
                    f"{self._label()}: the state belongs to a different dataset: its file list "
                    f"(paths below their common folder, order and labels) has fingerprint "
                    f"{state['dataset']!r}, this reader's {self._index.source} has "
                    f"{self._fingerprint()!r}")
            epoch = _check_int(state.get("epoch"), "state['epoch']", minimum=0)
            position = _check_int(state.get("position"), "state['position']", minimum=0)
            mode, batch_size = state.get("mode"), state.get("batch_size")
            if mode not in (None, "batch", "sample") or (mode == "batch") != (
                    batch_size is not None):
                raise ValueError(f"state has inconsistent mode={mode!r} and "
                                 f"batch_size={batch_size!r}")
            if batch_size is not None:
                batch_size = _check_int(batch_size, "state['batch_size']", minimum=1)
            new_spec = ShardSpec(
                **{**{f: getattr(spec, f) for f in spec.__dataclass_fields__},
                   "seed": _check_int(state.get("seed"), "state['seed']", minimum=0),
                   "shuffle_after_epoch_seed": _check_int(
                       state.get("shuffle_after_epoch_seed"),
                       "state['shuffle_after_epoch_seed']", minimum=0)})
            size = new_spec.shard_size(epoch)
            if position > size:
                raise ValueError(f"state['position'] {position} exceeds the {size} samples "
                                 f"of epoch {epoch}")
            if position == size:  # the saved epoch was complete
                epoch, position = epoch + 1, 0
            self._spec = new_spec
            self._epoch, self._start_position = epoch, position
            self._mode, self._batch_size = mode, batch_size
