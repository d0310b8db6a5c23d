"""``ndd bench --breakdown``: where each mode's time goes, per image, measured.

For every measured epoch of an ndd mode, :class:`Breakdown` switches :mod:`runtime.profile` on
(in this process and, through the requests, in the worker processes), then reads the counters:

* per process, the thread CPU of the kernels' heavy calls: ``decode`` (the codec call),
  ``resample`` (resize passes, DALI's edge fix included) and ``normalize``
  (crop-mirror-normalize into the output);
* ``python``: the rest of the process's CPU: in the main process, everything else its threads
  did (reader, graph building or replay, packing, seeds, evaluation, ``.torch()``); in a worker,
  the called function's CPU outside the kernels (per-sample argument handling, headers,
  windows, wrappers);
* ``ipc`` (workers): CPU of a request outside the called function (receive, unpickle, send);
* ``idle`` (workers): wall time a worker waited for its next request during the epoch.

Everything is in milliseconds per image of the epoch.  DALI's modes have no breakdown.
"""
from __future__ import annotations

import time

from runtime import profile
from runtime.workers import pool as worker_pool

__all__ = ["Breakdown"]

_COLUMNS = ("decode", "resample", "normalize", "python", "ipc", "idle", "cpu")


def _workers():
    """The worker pool in use (connected, not closed), or None."""
    pool = worker_pool.state.pool
    if pool is None or pool.closed or not pool.ready.is_set():
        return None
    return pool


def _take_workers(pool) -> list:
    """Every worker's counters (and zeroes them); [] without workers."""
    if pool is None:
        return []
    try:
        return pool.broadcast("runtime.profile:take", queue=True)
    except Exception:  # noqa: BLE001 - a dead pool: no worker rows for this epoch
        return []


class Breakdown:
    """Accumulates, per mode, the counters of its measured epochs (:meth:`start` before an
    epoch, :meth:`stop` after it) and prints them per image (:meth:`table`)."""

    def __init__(self):
        self.rows: dict[str, dict] = {}       # mode -> {"images", "main", "workers": [...]}
        self._cpu0 = 0.0

    def start(self) -> None:
        """Zero the counters everywhere and start counting."""
        profile.take()
        _take_workers(_workers())
        profile.enable(True)
        self._cpu0 = time.process_time()

    def stop(self, mode: str, images: int) -> None:
        """Stop counting; add what the epoch of ``mode`` (``images`` images) counted."""
        cpu = time.process_time() - self._cpu0
        profile.enable(False)
        main = profile.take()
        workers = _take_workers(_workers())     # this request carries the switch off
        row = self.rows.setdefault(mode, {"images": 0, "main": {}, "workers": []})
        row["images"] += images
        main["cpu"] = cpu
        _accumulate(row["main"], main)
        while len(row["workers"]) < len(workers):
            row["workers"].append({})
        for acc, got in zip(row["workers"], workers):
            _accumulate(acc, got)

    def table(self) -> str:
        """The breakdown of every mode, ms per image."""
        head = f"{'mode':<10s} {'process':<10s} " + " ".join(f"{c:>9s}" for c in _COLUMNS)
        lines = ["breakdown, ms per image (CPU; idle: wall time a worker waited):", head]
        for mode, row in self.rows.items():
            n = max(1, row["images"])
            procs = [("main", _main_columns(row["main"]))]
            procs += [(f"worker {k}", _worker_columns(w)) for k, w in enumerate(row["workers"])
                      if w.get("work", 0.0) > 0]       # workers this mode did not use: no row
            total = {c: sum(p[1].get(c, 0.0) for p in procs) for c in _COLUMNS}
            for name, cols in procs + ([("all", total)] if len(procs) > 1 else []):
                cells = " ".join(f"{1e3 * cols[c] / n:>9.3f}" if c in cols else f"{'-':>9s}"
                                 for c in _COLUMNS)
                lines.append(f"{mode:<10s} {name:<10s} {cells}")
        return "\n".join(lines)

    def as_dict(self) -> dict:
        """``{mode: {process: {column: ms per image}}}`` for the JSON report."""
        out = {}
        for mode, row in self.rows.items():
            n = max(1, row["images"])
            procs = {"main": _main_columns(row["main"])}
            procs.update({f"worker {k}": _worker_columns(w)
                          for k, w in enumerate(row["workers"])})
            out[mode] = {p: {c: 1e3 * v / n for c, v in cols.items()} for p, cols in procs.items()}
        return out


def _accumulate(acc: dict, got: dict) -> None:
    for k, v in got.items():
        acc[k] = acc.get(k, 0.0) + v


def _kernels(counts: dict) -> dict:
    return {c: counts.get(c, 0.0) for c in profile.CATEGORIES}


def _main_columns(counts: dict) -> dict:
    cols = _kernels(counts)
    cols["cpu"] = counts.get("cpu", 0.0)
    cols["python"] = max(0.0, cols["cpu"] - sum(_kernels(counts).values()))
    return cols


def _worker_columns(counts: dict) -> dict:
    cols = _kernels(counts)
    cols["python"] = max(0.0, counts.get("work", 0.0) - sum(_kernels(counts).values()))
    cols["ipc"] = max(0.0, counts.get("worker", 0.0) - counts.get("work", 0.0))
    cols["idle"] = counts.get("idle", 0.0)
    cols["cpu"] = counts.get("worker", 0.0)
    return cols
