"""The worker pool after a worker died: the batch is redone on threads and new workers start
(in a module of its own: the module-scoped pool of test_pool.py stays usable there)."""
from __future__ import annotations

import glob
import os
import time

import numpy as np
import pytest

import ndd
from runtime.workers import pool as worker_pool


def test_lanes_start_again_after_a_worker_died(sample_dataset, workers, monkeypatch):
    """A worker killed (e.g. for memory) costs one batch on threads; the next batches get
    new workers, with the same results."""
    monkeypatch.setattr(worker_pool.state, "deaths", 0)
    files = sorted(glob.glob(os.path.join(sample_dataset, "*", "*.jpg")))[:8]
    enc = ndd.batch([np.fromfile(f, np.uint8) for f in files])

    def run():
        with ndd.EvalMode.deferred:
            out = ndd.crop_mirror_normalize(ndd.decoders.image(enc), crop=(32, 32))
            return np.stack([np.asarray(t) for t in out])
    want = run()
    old = worker_pool.get_workers(2)
    assert old is workers
    victim = old.processes()[0]
    victim.kill()
    victim.wait(10)
    with pytest.warns(RuntimeWarning, match="died.*new workers start in the background"):
        got = run()                         # redone on threads
    np.testing.assert_array_equal(got, want)
    assert not worker_pool.state.failed and worker_pool.state.deaths == 1
    deadline = time.monotonic() + 180
    while (new := worker_pool.get_workers(2)) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert new is not None and new is not old and new.ready.is_set()
    calls = new.calls
    np.testing.assert_array_equal(run(), want)
    assert new.calls > calls                # this batch ran on the new workers
    deadline = time.monotonic() + 30
    while old.processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not old.processes() and victim.returncode is not None
