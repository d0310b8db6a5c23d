"""Host waits for GPU streams, observed on the fake GPU (whose events never complete unless the
host synchronised past them): ``EvalMode.sync_full`` waits after each call, ``evaluate()``
waits for the batch's GPU work, ``.cpu()`` waits for its copy (ordered after the producer);
``sync_cpu``, eager and ``.torch()``-style consumers do not block the host."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import ndd

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="host build needs g++")


def _gpu_batch():
    rng = np.random.default_rng(0)
    imgs = [rng.integers(0, 256, s, dtype=np.uint8) for s in ((5, 7, 3), (6, 4, 3))]
    return imgs, ndd.batch(imgs, layout="HWC").gpu()


def _ready(handle):
    data = handle._value.data
    assert data is not None and data.ready is not None
    return data.ready


def test_sync_cpu_does_not_wait_for_the_gpu(gpu):
    _, x = _gpu_batch()
    with ndd.EvalMode.sync_cpu:
        y = ndd.flip(x, horizontal=1)
    assert not gpu.event_done(_ready(y))


def test_sync_full_waits_for_each_call_s_gpu_work(gpu):
    imgs, x = _gpu_batch()
    with ndd.EvalMode.sync_full:
        y = ndd.flip(x, horizontal=1)
        ev = _ready(y)
        assert ("host", f"sync e{ev.id}") in gpu.log
        assert gpu.event_done(ev)
        z = ndd.cast(y, dtype=ndd.float32)
        assert gpu.event_done(_ready(z))
    for g, s in zip(z.cpu().tensors, imgs):
        np.testing.assert_array_equal(np.asarray(g), s[:, ::-1].astype(np.float32))


def test_evaluate_waits_for_the_batch_s_gpu_work(gpu):
    _, x = _gpu_batch()
    with ndd.EvalMode.deferred:
        y = ndd.flip(x, horizontal=1)
        assert y.evaluate() is y
        assert gpu.event_done(_ready(y))
        t = ndd.flip(x, vertical=1).tensors[1]
        assert t.evaluate() is t
        assert gpu.event_done(_ready(t))


def test_cpu_waits_for_the_copy_after_the_producer(gpu):
    imgs, x = _gpu_batch()
    y = ndd.flip(x, horizontal=1)           # eager: queued, the host does not wait
    host = y.cpu()
    assert gpu.event_done(_ready(y))        # the copy's sync covers the producer's kernel
    for g, s in zip(host.tensors, imgs):
        np.testing.assert_array_equal(np.asarray(g), s[:, ::-1])


def test_a_dlpack_consumer_is_ordered_without_a_host_wait(gpu):
    _, x = _gpu_batch()
    with ndd.EvalMode.sync_cpu:
        y = ndd.flip(x, horizontal=1)
    ev = _ready(y)
    y.tensors[0].__dlpack__(stream=0x77)
    assert (gpu.external_stream(0x77).name, f"wait e{ev.id}") in gpu.log
    assert not gpu.event_done(ev)
