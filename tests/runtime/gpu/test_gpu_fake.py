"""The fake GPU's order checker finds what CUDA would get wrong (so the tests built on it can
fail): cross-stream reads without the producer's event, buffer reuse while another stream reads,
host reads before the copy finished, allocation during capture, streams not rejoined."""
from __future__ import annotations

import numpy as np
import pytest

from runtime.gpu.api import CaptureError
from runtime.gpu.fake import FakeApi, OrderViolation


def _fill(value):
    def fill(grid, block, args):
        args[0].host[...] = value
    return fill


def _add(grid, block, args):
    out, a, b = args
    out.host[...] = a.host + b.host


def _setup(api):
    s1, s2 = api.new_stream(), api.new_stream()
    a = api.array(api.alloc(64), 0, (4,), np.float32)
    b = api.array(api.alloc(64), 0, (4,), np.float32)
    return s1, s2, a, b


def test_cross_stream_read_needs_the_producers_event():
    api = FakeApi()
    s1, s2, a, b = _setup(api)
    api.launch(_fill(2), (1,), (1,), (a,), s1, writes=[a])
    api.launch(_fill(0), (1,), (1,), (b,), s2, reads=[a], writes=[b])
    assert len(api.violations) == 1 and "missing event" in api.violations[0]
    api2 = FakeApi()
    s1, s2, a, b = _setup(api2)
    api2.launch(_fill(2), (1,), (1,), (a,), s1, writes=[a])
    api2.wait_event(s2, api2.record_event(s1))
    api2.launch(_fill(0), (1,), (1,), (b,), s2, reads=[a], writes=[b])
    assert api2.violations == []


def test_same_stream_is_ordered_and_data_is_real():
    api = FakeApi()
    s1, _, a, b = _setup(api)
    api.launch(_fill(2), (1,), (1,), (a,), s1, writes=[a])
    api.launch(_fill(5), (1,), (1,), (b,), s1, writes=[b])
    api.launch(_add, (1,), (1,), (a, a, b), s1, reads=[a, b], writes=[a])
    assert api.violations == []
    np.testing.assert_array_equal(a.get(), np.full(4, 7, np.float32))


def test_overwrite_while_another_stream_reads_is_reported():
    api = FakeApi()
    s1, s2, a, b = _setup(api)
    api.launch(_fill(1), (1,), (1,), (a,), s1, writes=[a])
    api.wait_event(s2, api.record_event(s1))
    api.launch(_fill(0), (1,), (1,), (b,), s2, reads=[a], writes=[b])     # s2 reads a
    api.launch(_fill(9), (1,), (1,), (a,), s1, writes=[a])                # s1 reuses a: race
    assert any("may still read" in v for v in api.violations)


def test_host_observed_completion_orders_later_work():
    api = FakeApi()
    s1, s2, a, b = _setup(api)
    api.launch(_fill(1), (1,), (1,), (a,), s1, writes=[a])
    ev = api.record_event(s1)
    assert api.event_done(ev) is False          # the pessimistic GPU: nothing finishes by itself
    api.sync_event(ev)
    assert api.event_done(ev) is True
    api.launch(_fill(0), (1,), (1,), (b,), s2, reads=[a], writes=[b])
    assert api.violations == []


def test_host_read_of_an_async_copy_needs_a_sync():
    api = FakeApi()
    s1, _, a, _ = _setup(api)
    api.launch(_fill(3), (1,), (1,), (a,), s1, writes=[a])
    host = api.pinned_empty(16).view(np.float32)
    api.copy_d2h(host, a, s1)
    api.host_access(host)
    assert any("host reads pinned" in v for v in api.violations)
    api.violations.clear()
    api.sync_stream(s1)
    api.host_access(host)
    assert api.violations == [] and host.tolist() == [3, 3, 3, 3]


def test_strict_mode_raises_at_the_first_violation():
    api = FakeApi(strict=True)
    s1, s2, a, b = _setup(api)
    api.launch(_fill(2), (1,), (1,), (a,), s1, writes=[a])
    with pytest.raises(OrderViolation, match="missing event"):
        api.launch(_fill(0), (1,), (1,), (b,), s2, reads=[a], writes=[b])


def test_no_allocation_sync_or_query_during_capture():
    api = FakeApi()
    s1, _, a, _ = _setup(api)
    api.begin_capture(s1)
    for call in (lambda: api.alloc(8), lambda: api.pinned_empty(8), lambda: api.sync_stream(s1),
                 lambda: api.event_done(api.record_event(s1))):
        with pytest.raises(CaptureError):
            call()
    assert len(api.violations) == 4
    api.end_capture(s1)


def test_capture_replays_with_the_data_of_replay_time():
    api = FakeApi()
    s1, s2, a, b = _setup(api)
    pinned = api.pinned_empty(16).view(np.float32)
    api.begin_capture(s1)
    api.copy_h2d(a, pinned, s1)                      # reads the pinned buffer when it runs
    fork = api.record_event(s1)
    api.wait_event(s2, fork)                         # s2 joins the capture
    api.launch(_add, (1,), (1,), (b, a, a), s2, reads=[a], writes=[b])
    api.wait_event(s1, api.record_event(s2))         # and rejoins the origin
    graph = api.end_capture(s1)
    assert graph.num_ops == 2 and b.get().tolist() != [2, 4, 6, 8]    # nothing ran yet
    for k in (1, 10):
        api.sync_stream(s1)
        api.host_access(pinned, write=True)
        pinned[...] = np.arange(1, 5) * k
        api.launch_graph(graph, s1)
        api.sync_stream(s1)
        assert b.get().tolist() == [2 * k, 4 * k, 6 * k, 8 * k]
    assert api.violations == []


def test_a_stream_not_rejoined_before_end_capture_is_reported():
    api = FakeApi()
    s1, s2, a, _ = _setup(api)
    api.begin_capture(s1)
    api.wait_event(s2, api.record_event(s1))
    api.launch(_fill(1), (1,), (1,), (a,), s2, writes=[a])
    api.end_capture(s1)
    assert any("did not rejoin" in v for v in api.violations)


def test_race_inside_a_graph_is_found_at_replay():
    api = FakeApi()
    s1, s2, a, b = _setup(api)
    api.begin_capture(s1)
    api.launch(_fill(4), (1,), (1,), (a,), s1, writes=[a])
    fork = api.record_event(s1)                      # recorded before... (fork event)
    api.wait_event(s2, fork)
    api.launch(_fill(5), (1,), (1,), (a,), s1, writes=[a])   # after the fork: unordered with s2
    api.launch(_add, (1,), (1,), (b, a, a), s2, reads=[a], writes=[b])
    api.wait_event(s1, api.record_event(s2))
    graph = api.end_capture(s1)
    api.launch_graph(graph, s1)
    assert any("missing event" in v or "may still read" in v for v in api.violations)
