"""The whole GPU path with the real GPU kernels (``runtime/kernels/gpu/``, built as host C++ for
the fake GPU): ``ndd.<op>`` on a GPU batch -> device inferred -> placement -> ``(op, "gpu")``
kernel -> one launch on the lane's stream; results equal the CPU kernels bit for bit in eager and
deferred mode, and under CUDA-graph replay.

The schemas of these ops declare ``"gpu"`` (the executor loads the GPU catalogue beside the CPU
one); the fixture still sets it for its duration, so the test holds whatever a schema says.
"""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import ndd
from compiler.schema import REGISTRY
from runtime.device import use_api
from runtime.gpu import capture
from runtime.gpu.fake import FakeApi

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="host build needs g++")

OPS = ("flip", "crop", "cast", "crop_mirror_normalize", "transpose")


@pytest.fixture
def gpu(monkeypatch):
    catalog = pytest.importorskip("runtime.kernels.gpu.catalog")
    for op in OPS:
        if op not in catalog.GPU_OPS:
            pytest.skip(f"no GPU kernel for {op} yet")
        monkeypatch.setattr(REGISTRY[op], "devices", ("cpu", "gpu"))
    api = FakeApi()
    with use_api(api):
        yield api
    assert api.violations == []


def _images(rng, n=3):
    shapes = [(17, 23, 3), (31, 9, 3), (8, 8, 3)][:n]
    return [rng.integers(0, 255, s, dtype=np.uint8) for s in shapes]


CASES = [("flip", {"horizontal": 1, "vertical": 1}), ("crop", {"crop": (5, 6)}),
         ("cast", {"dtype": ndd.float32}), ("transpose", {"perm": [2, 0, 1]}),
         ("crop_mirror_normalize", {"crop": (6, 7), "mean": [1.0, 2.0, 3.0],
                                    "std": [2.0, 3.0, 4.0], "mirror": 1})]


def _same(cpu, gpu):
    assert gpu.device.kind == "gpu"
    host = gpu.cpu()
    assert host.dtype == cpu.dtype and host.layout == cpu.layout
    for c, g in zip(cpu.tensors, host.tensors):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(c))


@pytest.mark.parametrize("op, kwargs", CASES, ids=[c[0] for c in CASES])
def test_gpu_kernels_equal_cpu_kernels_eager_and_deferred(gpu, op, kwargs):
    imgs = _images(np.random.default_rng(0))
    b = ndd.batch(imgs, layout="HWC")
    cpu = getattr(ndd, op)(b, **kwargs)
    _same(cpu, getattr(ndd, op)(b.gpu(), **kwargs))                 # eager
    with ndd.EvalMode.deferred:
        _same(cpu, getattr(ndd, op)(b.gpu(), **kwargs))
        _same(cpu, getattr(ndd, op)(b, device="gpu", **kwargs))     # placement copies b


def test_graph_replay_of_real_kernels_equals_eager(gpu):
    rng = np.random.default_rng(1)
    capture.set_enabled(True)
    try:
        for _ in range(5):
            imgs = [rng.integers(0, 255, (20, 30, 3), dtype=np.uint8) for _ in range(4)]
            mirror = ndd.batch([np.int32(v) for v in rng.integers(0, 2, 4)])
            args = dict(crop=(10, 12), mean=[1.0, 2.0, 3.0], std=[2.0, 3.0, 4.0], mirror=mirror)
            b = ndd.batch(imgs, layout="HWC")
            want = ndd.crop_mirror_normalize(ndd.flip(b, horizontal=1), **args)
            with ndd.EvalMode.deferred:
                got = ndd.crop_mirror_normalize(ndd.flip(b, horizontal=1, device="gpu"), **args)
                _same(want, got)
        stats = capture.cache().stats
    finally:
        capture.set_enabled(False)
    assert stats["replay"] >= 2 and stats["fallback"] == 0
