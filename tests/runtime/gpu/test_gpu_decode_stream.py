"""Decoders on a stream of their own (``runtime/gpu/state.py`` ``decode_stream``), checked on the
fake GPU's vector clocks: the decode of batch k+1 is not ordered after the kernels of batch k on
the lane stream (they may overlap), every read of a decoded batch on the lane stream is ordered
after its decode (the event), and a decoded block reused by the next decode is not written
before the lane stream's reads of it have passed (no violation over several batches)."""
from __future__ import annotations

import gc
import io
import shutil

import numpy as np
import pytest

import compiler.ops  # noqa: F401 - the schemas
from compiler.ir import Node, Value, ValueMeta
from compiler.types import CPU, Device
from runtime.codecs.image import decode
from runtime import executor
from runtime.gpu import moves, runner, state
from runtime.kernels.cpu import catalog  # noqa: F401 - the CPU decode kernels

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="host build needs g++")

GPU = Device("gpu", 0)


def _files(seed, n=3):
    from PIL import Image
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        img = rng.integers(0, 256, (int(rng.integers(9, 30)), int(rng.integers(9, 30)), 3),
                           dtype=np.uint8)
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="PNG")
        out.append(np.frombuffer(buf.getvalue(), np.uint8))
    return out


def _batch(files):
    """decoders.image(device="gpu") -> flip(horizontal=1) as two GPU nodes."""
    enc = Value(ValueMeta("uint8", 1, "", CPU, len(files)), data=list(files))
    dec = Node("decoders.image", [enc], {}, None,
               [ValueMeta("uint8", 3, "HWC", GPU, len(files))], device=GPU, callsite="t:dec")
    flip = Node("flip", [dec.outputs[0]], {"horizontal": 1}, None,
                [ValueMeta("uint8", 3, "HWC", GPU, len(files))], device=GPU, callsite="t:flip")
    return dec, flip


def test_decode_runs_on_its_own_stream_and_overlaps_the_previous_batch(fake):
    st = state.current()
    lane, dstream = st.lane_stream(0, 0), st.decode_stream(0)
    assert lane is not dstream
    dec1, flip1 = _batch(_files(1))
    runner.run_gpu_node(dec1, executor.wrap_error)
    assert dec1.outputs[0].data.stream is dstream
    runner.run_gpu_node(flip1, executor.wrap_error)
    assert flip1.outputs[0].data.stream is lane
    flip_tick = fake.tick_of(lane)
    # the flip waited on the decode's event (its read is ordered after the decode's copy)
    assert fake.covers(lane, dstream, fake.tick_of(dstream))
    # batch 2's decode is enqueued while batch 1's flip may still run: not ordered after it
    assert not fake.covers(dstream, lane, flip_tick)
    dec2, flip2 = _batch(_files(2))
    runner.run_gpu_node(dec2, executor.wrap_error)
    assert not fake.covers(dstream, lane, flip_tick)
    runner.run_gpu_node(flip2, executor.wrap_error)
    for files, node in ((_files(1), flip1), (_files(2), flip2)):
        for f, got in zip(files, moves.to_host(node.outputs[0].data)):
            np.testing.assert_array_equal(got, decode(f)[:, ::-1])
    assert fake.violations == []


def test_decoded_blocks_are_reused_only_after_the_lane_read_them(fake):
    """Several batches, each decoded block dropped after its flip was enqueued (never synced):
    the pool hands it to the next decode on the decode stream only after that stream waited for
    the lane's use of it -- the checker sees no write over a read still running."""
    outs = []
    waits0 = state.current().pool.waits
    for k in range(5):
        dec, flip = _batch(_files(10 + k))
        runner.run_gpu_node(dec, executor.wrap_error)
        runner.run_gpu_node(flip, executor.wrap_error)
        outs.append((k, flip.outputs[0].data))
        dec.outputs[0].data = None          # the decoded batch is free for the next decode
        del dec, flip
        gc.collect()
    assert state.current().pool.waits > waits0      # reuse across the streams waited
    assert fake.violations == []
    for k, data in outs:
        for f, got in zip(_files(10 + k), moves.to_host(data)):
            np.testing.assert_array_equal(got, decode(f)[:, ::-1])
