"""EvalMode stack, error reporting (op name + user's file:line), deferred == eager, threads."""
import threading

import numpy as np
import pytest

import ndd
from ndd import EvalMode


def _line_of(marker):
    """1-based line number of the line of this file carrying ``marker``."""
    with open(__file__) as f:
        for k, line in enumerate(f, start=1):
            if marker in line and "_line_of" not in line:
                return k
    raise AssertionError(marker)


def test_default_is_eager_and_stack_nests():
    assert EvalMode.current() is EvalMode.eager
    with EvalMode.deferred:
        assert EvalMode.current() is EvalMode.deferred
        with EvalMode.sync_cpu:
            assert EvalMode.current() is EvalMode.sync_cpu
            with EvalMode.default:
                assert EvalMode.current() is EvalMode.eager
            assert EvalMode.current() is EvalMode.sync_cpu
        assert EvalMode.current() is EvalMode.deferred
    assert EvalMode.current() is EvalMode.eager


def test_stack_unwinds_on_exception():
    with pytest.raises(KeyError):
        with EvalMode.sync_full:
            raise KeyError("x")
    assert EvalMode.current() is EvalMode.eager


def test_mode_is_thread_local():
    seen = {}
    inside = threading.Event()
    release = threading.Event()

    def other():
        inside.wait(5)
        seen["other"] = EvalMode.current()
        release.set()

    th = threading.Thread(target=other)
    th.start()
    with EvalMode.deferred:
        inside.set()
        release.wait(5)
    th.join(5)
    assert seen["other"] is EvalMode.eager


def _garbage():
    return ndd.batch([np.frombuffer(b"this is not an image at all", np.uint8)])


def test_sync_cpu_raises_at_call_line_naming_op():
    enc = _garbage()
    with EvalMode.sync_cpu:
        with pytest.raises(Exception) as ei:
            ndd.decoders.image(enc)  # SYNC-CALL
    msg = str(ei.value)
    assert "decoders.image" in msg
    assert f"test_eval_modes.py:{_line_of('# SYNC-CALL')}" in msg
    # the error surfaces inside the call: the traceback's user frame is this line
    tb_lines = [tb.lineno + 1 for tb in ei.traceback if tb.path.name == "test_eval_modes.py"]
    assert _line_of("# SYNC-CALL") in tb_lines


@pytest.mark.parametrize("mode", [EvalMode.eager, EvalMode.deferred])
def test_async_error_names_op_and_call_site(mode):
    enc = _garbage()
    with mode:
        out = ndd.decoders.image(enc)  # ASYNC-CALL
        with pytest.raises(Exception) as ei:
            out.evaluate()
    msg = str(ei.value)
    assert "decoders.image" in msg
    assert f"test_eval_modes.py:{_line_of('# ASYNC-CALL')}" in msg
    # asking again raises again (the failure is sticky, not lost)
    with pytest.raises(Exception):
        np.asarray(out.tensors[0])


def test_argument_errors_raise_at_call_even_when_deferred():
    t = ndd.tensor(np.zeros((4, 4, 3), np.uint8), layout="HWC")
    with EvalMode.deferred:
        with pytest.raises(TypeError, match="bogus"):
            ndd.resize(t, bogus=3)


def _pipeline(b):
    f = ndd.cast(b, dtype=ndd.float32)
    g = (f * 0.5 + 3) / 2
    h = ndd.flip(g, horizontal=1)
    return ndd.math.sqrt(h) - g.slice[..., 0:1]


def test_deferred_equals_eager():
    rng = np.random.default_rng(1)
    samples = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in [(5, 7), (8, 3)]]
    b = ndd.batch(samples, layout="HWC")
    eager = _pipeline(b)
    with EvalMode.deferred:
        deferred = _pipeline(b)
    with EvalMode.sync_cpu:
        sync = _pipeline(b)
    for i, s in enumerate(samples):
        f = s.astype(np.float32)
        g = (f * 0.5 + 3) / 2
        ref = np.sqrt(g[:, ::-1]) - g[..., 0:1]
        # exact: the same float32 operations (* + / -, correctly rounded sqrt) in numpy
        np.testing.assert_array_equal(np.asarray(eager.tensors[i]), ref)
        np.testing.assert_array_equal(np.asarray(deferred.tensors[i]),
                                      np.asarray(eager.tensors[i]))
        np.testing.assert_array_equal(np.asarray(sync.tensors[i]), np.asarray(eager.tensors[i]))


def test_deferred_value_usable_after_leaving_block():
    t = ndd.tensor(np.arange(4, dtype=np.int32))
    with EvalMode.deferred:
        out = t * 3 + 1
    np.testing.assert_array_equal(np.asarray(out), [1, 4, 7, 10])


def _unfused(b):
    f = ndd.flip(b, horizontal=1, vertical=1)
    c = ndd.cast(f, dtype=ndd.float32)
    return c.slice[1:, :, 0] * 2


def test_deferred_equals_eager_without_fusion():
    rng = np.random.default_rng(2)
    samples = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in [(5, 7), (8, 3)]]
    b = ndd.batch(samples, layout="HWC")
    eager = _unfused(b)
    with EvalMode.deferred:
        deferred = _unfused(b)
    assert deferred.layout == eager.layout == "HW"
    for i, s in enumerate(samples):
        ref = s[::-1, ::-1].astype(np.float32)[1:, :, 0] * 2
        np.testing.assert_array_equal(np.asarray(eager.tensors[i]), ref)
        np.testing.assert_array_equal(np.asarray(deferred.tensors[i]), ref)


def test_set_get_num_threads():
    old = ndd.get_num_threads()
    try:
        ndd.set_num_threads(3)
        assert ndd.get_num_threads() == 3
        with ndd.EvalContext(num_threads=1):
            assert ndd.get_num_threads() == 1
        assert ndd.get_num_threads() == 3
        for bad in (0, -1, 1.5, "2"):
            with pytest.raises((ValueError, TypeError)):
                ndd.set_num_threads(bad)
        assert ndd.get_num_threads() == 3
    finally:
        ndd.set_num_threads(old)
    with pytest.raises(ValueError, match="num_threads"):
        ndd.EvalContext(num_threads=0)


def test_evaluate_all_drains():
    t = ndd.tensor(np.ones(3, np.float32))
    outs = [t + i for i in range(5)]
    ndd.EvalContext.current().evaluate_all()
    for i, o in enumerate(outs):
        np.testing.assert_array_equal(np.asarray(o), np.full(3, 1 + i, np.float32))
