"""The stream-ordered device pool and pinned staging (``runtime/gpu/memory.py``) on the fake GPU:
a block is reused only when nobody holds it, and only after the other streams that used it have
passed an event; reserved blocks are handed out under capture with nothing allocated."""
from __future__ import annotations

import numpy as np
import pytest

from runtime.gpu.fake import FakeApi
from runtime.gpu.memory import CaptureMismatch, DevicePool, PinnedStaging


def _write(value):
    def fill(grid, block, args):
        args[0].host[...] = value
    return fill


def _read(grid, block, args):
    args[1].host[...] = args[0].host


def _use(api, pool, arr, stream, *, write):
    """A kernel on ``stream`` writing (or reading) ``arr``, noted in the pool as the runner
    notes a step."""
    scratch = api.array(api.alloc(arr.nbytes), 0, arr.shape, arr.dtype)
    if write:
        api.launch(_write(7), (1,), (1,), (arr,), stream, writes=[arr])
    else:
        api.launch(_read, (1,), (1,), (arr, scratch), stream, reads=[arr], writes=[scratch])
    pool.note_use([arr], stream, api.record_event(stream))


def test_a_held_block_is_never_handed_out_again():
    api = FakeApi()
    pool = DevicePool(api)
    s = api.new_stream()
    a = pool.empty((16,), np.float32, s)
    view = a[2:5]
    del a
    b = pool.empty((16,), np.float32, s)
    assert api.memory_of(b) is not api.memory_of(view)      # the view keeps block 1 alive
    first = api.memory_of(view).id
    del view, b
    c = pool.empty((16,), np.float32, s)
    assert api.memory_of(c).id == first                        # free again: recycled
    assert pool.hits >= 1


def test_reuse_on_another_stream_waits_for_the_readers_event():
    api = FakeApi()
    pool = DevicePool(api)
    s1, s2 = api.new_stream(), api.new_stream()
    a = pool.empty((8,), np.uint8, s1)
    _use(api, pool, a, s1, write=True)
    api.wait_event(s2, api.record_event(s1))
    _use(api, pool, a, s2, write=False)             # s2 still reads it ...
    del a                                           # ... when the user drops it
    b = pool.empty((8,), np.uint8, s1)              # the same block, for s1
    assert pool.waits == 1
    _use(api, pool, b, s1, write=True)
    assert api.violations == []
    waits = [i for i, (s, what) in enumerate(api.log) if s == s1.name and what.startswith("wait")]
    writes = [i for i, (s, what) in enumerate(api.log) if s == s1.name and "launch fill" in what]
    assert waits and waits[-1] < writes[-1]


def test_without_the_pools_ordering_the_checker_sees_the_race(monkeypatch):
    """The previous test can fail: the same steps with the ordering switched off race."""
    api = FakeApi()
    pool = DevicePool(api)
    monkeypatch.setattr(pool, "_order_after_uses", lambda blk, stream: None)
    s1, s2 = api.new_stream(), api.new_stream()
    a = pool.empty((8,), np.uint8, s1)
    _use(api, pool, a, s1, write=True)
    api.wait_event(s2, api.record_event(s1))
    _use(api, pool, a, s2, write=False)
    del a
    b = pool.empty((8,), np.uint8, s1)
    _use(api, pool, b, s1, write=True)
    assert any("may still read" in v for v in api.violations)


def test_a_finished_readers_event_needs_no_wait():
    api = FakeApi(events_complete=True)
    pool = DevicePool(api)
    s1, s2 = api.new_stream(), api.new_stream()
    a = pool.empty((8,), np.uint8, s1)
    _use(api, pool, a, s2, write=True)
    del a
    b = pool.empty((8,), np.uint8, s1)
    assert pool.waits == 0 and pool.hits == 1
    _use(api, pool, b, s1, write=True)
    assert api.violations == []


def test_an_exported_block_waits_for_its_consumer_stream():
    api = FakeApi()
    pool = DevicePool(api)
    s1, consumer = api.new_stream(), api.external_stream(0x77)
    a = pool.empty((8,), np.uint8, s1)
    _use(api, pool, a, s1, write=True)
    api.wait_event(consumer, api.record_event(s1))
    api.launch(_read, (1,), (1,), (a, api.array(api.alloc(8), 0, (8,), np.uint8)), consumer,
               reads=[a])
    pool.note_use([a], consumer, None)          # handed to torch: no event of ours there
    del a
    b = pool.empty((8,), np.uint8, s1)
    _use(api, pool, b, s1, write=True)
    assert api.violations == [] and pool.waits == 1
    assert any(s == consumer.name and what.startswith("record") for s, what in api.log)


def test_recording_and_reserved_blocks():
    api = FakeApi()
    pool = DevicePool(api)
    s = api.new_stream()
    with pool.recording() as sizes:
        pool.empty((10,), np.float32, s)
        pool.empty((3, 300), np.uint8, s)
    assert sizes == [256, 1024]
    blocks = pool.reserve(sizes)
    before = api.allocations
    with pool.reserved(blocks):
        x = pool.empty((10,), np.float32, s)
        y = pool.empty((3, 300), np.uint8, s)
        with pytest.raises(CaptureMismatch):
            pool.empty((1,), np.uint8, s)
    assert api.allocations == before
    assert api.memory_of(x) is blocks[0].mem and api.memory_of(y) is blocks[1].mem
    with pool.reserved(blocks), pytest.raises(CaptureMismatch, match="2048"):
        pool.empty((2048,), np.uint8, s)


def test_pinned_staging_never_rewrites_a_buffer_a_copy_still_reads():
    api = FakeApi()
    staging = PinnedStaging(api, max_buffers=2)
    s = api.new_stream()
    dst = [api.array(api.alloc(64), 0, (16,), np.float32) for _ in range(5)]
    for k, d in enumerate(dst):
        staging.upload(np.full(16, k, np.float32), d, s)
    api.sync_stream(s)
    assert api.violations == []
    assert [d.get()[0] for d in dst] == [0, 1, 2, 3, 4]
    assert sum(1 for _, what in api.log if what.startswith("pinned")) == 2     # then waits
    assert any(what.startswith("sync e") for _, what in api.log)
