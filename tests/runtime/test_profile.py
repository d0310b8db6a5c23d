"""runtime/profile.py: thread-CPU counters of marked calls (ndd bench --breakdown)."""
import threading
import time

from runtime import profile


def _spin(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


@profile.measured("decode")
def _outer(seconds):
    _spin(seconds)
    _inner(seconds)


@profile.measured("resample")
def _inner(seconds):
    _spin(seconds)


def test_off_by_default_and_nested_calls_count_once():
    profile.take()
    assert not profile.active()
    _outer(0.01)
    assert profile.take() == {}
    profile.enable(True)
    try:
        _outer(0.02)                   # 0.04 s of CPU, all under the outermost category
        _inner(0.02)
    finally:
        profile.enable(False)
    got = profile.take()
    assert set(got) == {"decode", "resample"}
    assert 0.04 <= got["decode"] < 0.08 and 0.02 <= got["resample"] < 0.05
    assert profile.take() == {}        # take() zeroes


def test_sleeping_and_other_threads_are_not_counted_as_this_threads_work():
    profile.take()
    profile.enable(True)
    try:
        waiter = profile.measured("normalize")(lambda: time.sleep(0.1))
        t = threading.Thread(target=_outer, args=(0.02,))
        t.start()
        waiter()                       # wall 0.1 s, almost no CPU
        t.join()
    finally:
        profile.enable(False)
    got = profile.take()
    assert got["normalize"] < 0.02
    assert got["decode"] >= 0.04       # the other thread's calls, counted on their own
