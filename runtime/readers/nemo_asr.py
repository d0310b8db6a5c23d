"""``readers.NemoAsr``'s dataset and loading: NeMo ASR manifests (one JSON object per line:
``audio_filepath``, optional ``duration``, ``offset``, ``text``), the audio decoded as
``decoders.audio`` does (:mod:`runtime.kernels.cpu.audio_decode`).

Semantics observed on DALI 2.4's CPU reader (docs/semantics.md, "Audio"): entries are read in
manifest order (manifests in the order given); ``min_duration`` / ``max_duration`` (seconds;
0: no bound) drop entries by their manifest ``duration`` and the entries left are numbered
0.. (the ``read_idxs`` output); paths are used as written (relative ones from the working
directory); a missing ``text`` is an empty transcript; ``offset`` and ``duration`` do not cut
the audio (DALI: "not yet implemented").
"""
from __future__ import annotations

import json
import threading

import numpy as np

from runtime.kernels.cpu.audio_decode import decode_sample
from runtime.threadpool import ThreadPool, get_pool

from .file_index import FileIndex
from .file_io import path_list
from .file_reader import FileReaderCore

__all__ = ["NemoAsrReaderCore", "read_manifest", "STATE_FORMAT"]

STATE_FORMAT = "ndd.readers.NemoAsr/1"


_decoders: dict = {}        # decoding threads -> ThreadPool, for _decoders_of op threads
_decoders_of = [0]
_decoders_lock = threading.Lock()


def decode_pool(share: float = 1.0) -> ThreadPool:
    """The reader's decoding threads: a pool of its own with ``share`` of the
    ``ndd.set_num_threads`` threads (at least one; re-made when that number changes), apart
    from the pool the ops run on, as DALI's reader decodes on threads of its own; its ``map``
    hands samples out one at a time and raises the lowest failing sample's error."""
    ops = get_pool().num_threads
    n = max(1, int(ops * share))
    with _decoders_lock:
        if _decoders_of[0] != ops:
            for pool in _decoders.values():
                pool.shutdown()
            _decoders.clear()
            _decoders_of[0] = ops
        pool = _decoders.get(n)
        if pool is None:
            pool = _decoders[n] = ThreadPool(n)
        return pool


def read_manifest(path: str) -> list[dict]:
    """The entries of one manifest file: dicts with ``audio_filepath`` (str), ``duration``
    (float or None), ``text`` (str).

    Raises
    ------
    ValueError
        Unreadable file, a line that is not a JSON object, or an entry without
        ``audio_filepath`` (naming the file and the line number).
    """
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise ValueError(f"NeMo manifest {path!r} cannot be read: {e.strerror or e}") from None
    out = []
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError as e:
            raise ValueError(f"NeMo manifest {path!r}, line {no}: not a JSON object ({e})") \
                from None
        if not isinstance(entry, dict) or not isinstance(entry.get("audio_filepath"), str):
            raise ValueError(f"NeMo manifest {path!r}, line {no}: an entry needs an "
                             f"\"audio_filepath\" string")
        duration = entry.get("duration")
        if duration is not None and not isinstance(duration, (int, float)):
            raise ValueError(f"NeMo manifest {path!r}, line {no}: \"duration\" must be a "
                             f"number, got {duration!r}")
        text = entry.get("text", "")
        out.append({"audio_filepath": entry["audio_filepath"],
                    "duration": None if duration is None else float(duration),
                    "text": text if isinstance(text, str) else str(text)})
    return out


class NemoAsrReaderCore(FileReaderCore):
    """Reads ``(audio, sample rate, text bytes, entry index)`` per manifest entry.

    Parameters
    ----------
    manifest_filepaths : str or list of str
    min_duration, max_duration : float
        Seconds; entries outside ``[min, max]`` (by their manifest duration) are dropped; 0
        means no bound.
    sample_rate : float
        Resample to this rate (<= 0: keep each file's rate).
    quality : float
        Resampling quality, 0-100.
    downmix : bool
        Average the channels (1-D output); else ``(time, channels)``.
    dtype : str
        ``"float32"``, ``"int16"`` or ``"int32"``.
    **kwargs
        Sharding, shuffling, padding, prefetching: those of ``FileReaderCore``.
    """

    kind = "NemoAsr reader"
    state_format = STATE_FORMAT
    #: the share of the op threads that decode (see :func:`decode_pool`): all of them, in
    #: every mode.  (Compiled loops decoded on half of them from the fourth to the fifth
    #: 2026-12-02 session; once the next epoch's first batches also ran early, all of them
    #: were faster on both speech sets: docs/benchmarks.md, issue 19.)
    decode_share = 1.0

    def __init__(self, *, manifest_filepaths=None, min_duration=0.0, max_duration=0.0,
                 sample_rate=-1.0, quality=50.0, downmix=True, dtype="float32",
                 dont_use_mmap=False, lazy_init=False, defer_shard_check=False, **kwargs):
        self.manifests = path_list(manifest_filepaths, "manifest_filepaths", "readers.NemoAsr")
        self.min_duration, self.max_duration = float(min_duration), float(max_duration)
        if self.min_duration < 0 or self.max_duration < 0:
            raise ValueError(f"readers.NemoAsr: min_duration / max_duration must be >= 0, got "
                             f"{min_duration} / {max_duration}")
        if self.max_duration and self.min_duration > self.max_duration:
            raise ValueError(f"readers.NemoAsr: min_duration ({min_duration}) is larger than "
                             f"max_duration ({max_duration})")
        self.decode_args = dict(dtype=dtype, do_downmix=bool(downmix),
                                sample_rate=max(0.0, float(sample_rate)),
                                quality=float(quality))
        super().__init__(lazy_init=True, **kwargs)
        self._entries = None
        self.list_now(lazy_init, defer_shard_check)

    def _keep(self, duration) -> bool:
        if duration is None:
            return True
        if self.min_duration and duration < self.min_duration:
            return False
        return not (self.max_duration and duration > self.max_duration)

    def build_index(self):
        entries = [e for m in self.manifests for e in read_manifest(m) if self._keep(
            e["duration"])]
        if not entries:
            raise ValueError(f"readers.NemoAsr: no entries left in {self.manifests} (after "
                             f"min_duration={self.min_duration}, "
                             f"max_duration={self.max_duration})")
        self._entries = entries
        return FileIndex(tuple(e["audio_filepath"] for e in entries),
                         np.zeros(len(entries), np.int32), f"NeMo manifests {self.manifests}")

    def make_loader(self, index, with_indices):
        entries, args = self._entries, self.decode_args

        def one(i):
            path = entries[i]["audio_filepath"]
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError as e:
                raise RuntimeError(f"NemoAsr reader: cannot read {path!r} (entry {i}): "
                                   f"{e.strerror or e}") from e
            # the bytes as read (the codec takes bytes-like data: no copy into an array)
            return decode_sample(data, sample=repr(path), **args)

        def load(indices):
            order = indices.tolist()
            # libsndfile and the resampler run without the GIL: decode on the reader's own
            # threads (as many as the pool's), so the next batches
            # decode while the pool runs the ops of this one (as DALI's readers.NemoAsr)
            decoded = decode_pool(self.decode_share).map(lambda k: one(order[k]),
                                                          len(order))
            audio = [a for a, _ in decoded]
            rates = [np.array(rate, np.float32) for _, rate in decoded]
            texts = [np.frombuffer(entries[i]["text"].encode("utf-8"), np.uint8)
                     for i in order]
            idxs = [np.array([i], np.int64) for i in order]
            out = [audio, rates, texts, idxs]
            return [*out, order] if with_indices else out

        return load
