"""The op-call path's shortcuts keep every behaviour: cheap eager ops run in the calling thread
(same data, errors still raised where the value is consumed, with the call's stack), cached
argument conversion tells apart values that compare equal, and Batch construction names dtypes
as before."""
import traceback

import numpy as np
import pytest

import ndd
from ndd import _invoke


def _batch():
    rng = np.random.default_rng(3)
    return ndd.as_batch([rng.integers(0, 255, (4, 6, 3), dtype=np.uint8),
                         rng.integers(0, 255, (5, 2, 3), dtype=np.uint8)], layout="HWC")


@pytest.fixture
def inline(monkeypatch):
    """Every op measured once counts as cheap (the machine's speed does not matter)."""
    monkeypatch.setattr(_invoke, "INLINE_MAX_S", 10.0)


@pytest.fixture
def never_inline(monkeypatch):
    monkeypatch.setattr(_invoke, "INLINE_MAX_S", -1.0)


def _expand_three_times():
    b = _batch()
    outs = []
    for _ in range(3):
        outs.append(ndd.expand_dims(b, axes=1, new_axis_names="F"))
        outs[-1].evaluate()
    return b, outs


def test_a_cheap_eager_op_runs_at_the_call(inline):
    b, outs = _expand_three_times()
    # the later calls at the same site ran in the call itself: computed when it returned
    assert outs[2]._value.data is not None and outs[2]._value.producer is None
    for o in outs:
        assert o.layout == "HFWC"
        for i in range(2):
            np.testing.assert_array_equal(np.asarray(o.tensors[i]),
                                          np.asarray(b.tensors[i])[:, None])


def test_inline_and_worker_give_the_same_data(inline, monkeypatch):
    _, inl = _expand_three_times()
    monkeypatch.setattr(_invoke, "INLINE_MAX_S", -1.0)
    _, wrk = _expand_three_times()
    for a, w in zip(inl, wrk):
        for i in range(2):
            np.testing.assert_array_equal(np.asarray(a.tensors[i]), np.asarray(w.tensors[i]))
            assert np.asarray(a.tensors[i]).shape == np.asarray(w.tensors[i]).shape


def _failing_reinterpret():
    """reinterpret at one call site: twice on a fitting batch, then on one whose sizes in bytes
    do not match (a kernel error, unknown before it runs)."""
    good = ndd.as_batch([np.zeros((4, 6), np.uint8)] * 2)
    bad = ndd.as_batch([np.zeros((4, 5), np.uint8)] * 2)
    outs = []
    for b in (good, good, bad):
        outs.append(ndd.reinterpret(b, shape=(6, 4)))  # the call line
        if len(outs) < 3:
            outs[-1].evaluate()
    return outs[-1]


@pytest.mark.parametrize("where", ["inline", "never_inline"])
def test_an_inline_error_is_raised_at_consumption_as_the_workers(where, request):
    request.getfixturevalue(where)
    out = _failing_reinterpret()                 # the call itself does not raise
    with pytest.raises(ValueError) as info:
        out.evaluate()
    msg = str(info.value)
    assert "same size in bytes" in msg
    call_line = next(i for i, s in enumerate(open(__file__).read().splitlines(), 1)
                     if "# the call line" in s)
    assert f"reinterpret (called at test_call_path.py:{call_line})" in msg
    # the cause's traceback ends at the op call (ndd/_errors.py), as for the worker's errors
    last = traceback.extract_tb(info.value.__cause__.__traceback__)[-1]
    assert last.lineno == call_line and last.name == "_failing_reinterpret"


class _Clock:
    """A perf_counter that advances ``step`` seconds per reading (every run looks slow)."""

    def __init__(self, step):
        self.now, self.step = 0.0, step

    def perf_counter(self):
        self.now += self.step
        return self.now


def test_the_cost_estimate_rises_twofold_per_run(monkeypatch):
    """One slow run does not send a cheap op back to the worker; a few do."""
    b = _batch()
    outs = []

    def call():
        outs.append(ndd.expand_dims(b, axes=0, new_axis_names="F"))    # one call site
    call()
    outs[-1].evaluate()
    line = next(i for i, s in enumerate(open(__file__).read().splitlines(), 1)
                if "# one call site" in s)
    key = ("expand_dims", f"test_call_path.py:{line}")
    assert key in _invoke._cost
    monkeypatch.setattr(_invoke, "time", _Clock(1.0))     # each run measures 1 s
    _invoke._cost[key] = 0.4 * _invoke.INLINE_MAX_S
    call()                                  # cheap: in the call; the estimate doubles only
    assert outs[-1]._value.data is not None
    assert _invoke._cost[key] == pytest.approx(0.8 * _invoke.INLINE_MAX_S)
    call()                                  # still cheap; now estimated above the limit
    assert outs[-1]._value.data is not None
    assert _invoke._cost[key] > _invoke.INLINE_MAX_S
    before = _invoke._queued
    call()                                  # on the eager worker
    assert _invoke._queued is not before
    outs[-1].evaluate()
    np.testing.assert_array_equal(np.asarray(outs[-1].tensors[1]),
                                  np.asarray(b.tensors[1])[None])


def test_equal_but_different_constants_convert_apart():
    """0.0 and -0.0 (equal, same hash) and 1 / 1.0 / True at one call site."""
    b = ndd.as_batch([np.ones((2, 3), np.float32), np.ones((3, 3), np.float32)])
    signs = []
    for fill in (0.0, -0.0, 0.0, -0.0):
        out = ndd.pad(b, fill_value=fill)
        signs.append(bool(np.signbit(np.asarray(out.tensors[0])[2]).all()))
    assert signs == [False, True, False, True]
    x = ndd.as_batch([np.array([1.5, -2.5], np.float32)])
    got = [np.asarray(ndd.cast(x, dtype=d).tensors[0]).dtype for d in ("int32", "float64",
                                                                     "int32")]
    assert got == [np.int32, np.float64, np.int32]
    for shape in ((6, 4), [6, 4], (24,), [24]):
        out = ndd.reinterpret(ndd.as_batch([np.zeros((4, 6), np.uint8)]), shape=shape)
        assert np.asarray(out.tensors[0]).shape == tuple(shape)


@pytest.mark.parametrize("dt", [np.uint8, np.dtype(">u2"), np.dtype("<i4"), np.float32, bool])
def test_batch_dtype_names_are_numpys(dt):
    arrays = [np.zeros((2, 2), dt)] * 2
    want = np.dtype(dt).name
    for _ in range(2):          # the second from the dtype-name cache
        assert ndd.as_batch(arrays).dtype == ndd.dtype(want)
    with pytest.raises(TypeError, match="not supported"):
        ndd.as_batch([np.zeros(2, "U3")])
