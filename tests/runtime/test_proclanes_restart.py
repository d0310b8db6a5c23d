"""Process lanes after a worker died: the batch is redone on threads and new workers start
(in a module of its own: the module-scoped lanes of test_proclanes.py stay usable there)."""
from __future__ import annotations

import glob
import os
import time

import numpy as np
import pytest

import ndd
from runtime import proclanes


@pytest.fixture
def lanes():
    ndd.set_num_threads(2)
    proclanes.set_enabled(True)
    deadline = time.monotonic() + 180
    while (got := proclanes.get_lanes(2)) is None:
        if proclanes._state["failed"] or time.monotonic() > deadline:
            pytest.fail("process lanes did not start")
        time.sleep(0.05)
    yield got
    proclanes.set_enabled(None)
    proclanes.shutdown()


def test_lanes_start_again_after_a_worker_died(sample_dataset, lanes, monkeypatch):
    """A worker killed (e.g. for memory) costs one batch on threads; the next batches get
    new workers, with the same results."""
    monkeypatch.setitem(proclanes._state, "deaths", 0)
    files = sorted(glob.glob(os.path.join(sample_dataset, "*", "*.jpg")))[:8]
    enc = ndd.batch([np.fromfile(f, np.uint8) for f in files])

    def run():
        with ndd.EvalMode.deferred:
            out = ndd.crop_mirror_normalize(ndd.decoders.image(enc), crop=(32, 32))
            return np.stack([np.asarray(t) for t in out])
    want = run()
    old = proclanes.get_lanes(2)
    assert old is lanes
    victim = old._workers[0].proc
    victim.kill()
    victim.wait(10)
    with pytest.warns(RuntimeWarning, match="died.*new lanes start in the background"):
        got = run()                         # redone on threads
    np.testing.assert_array_equal(got, want)
    assert not proclanes._state["failed"] and proclanes._state["deaths"] == 1
    deadline = time.monotonic() + 180
    while (new := proclanes.get_lanes(2)) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert new is not None and new is not old and new.ready.is_set()
    calls = new.calls
    np.testing.assert_array_equal(run(), want)
    assert new.calls > calls                # this batch ran on the new workers
    deadline = time.monotonic() + 30
    while old._workers and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not old._workers and victim.returncode is not None
