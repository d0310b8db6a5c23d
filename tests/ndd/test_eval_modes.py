"""EvalMode stack, error reporting (op name + user's file:line), deferred == eager, threads."""
import pickle
import threading
import traceback

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


def _failing_reshape():
    t = ndd.tensor(np.arange(3, dtype=np.int32))
    return ndd.reshape(t, shape=[2])  # FAILING-RESHAPE


def test_later_errors_come_from_the_call_stack_of_the_op():
    """eager/deferred: the consuming call raises a new exception of the sync error's type and
    message, from the op's error whose traceback ends at the line calling the op (DALI)."""
    with EvalMode.sync_cpu:
        with pytest.raises(ValueError) as sync:
            _failing_reshape()
    call_line = _line_of("# FAILING-RESHAPE")
    for mode in (EvalMode.eager, EvalMode.deferred):
        with mode:
            out = _failing_reshape()
            for consume in (lambda: out.evaluate(), lambda: np.asarray(out)):
                with pytest.raises(ValueError) as later:
                    consume()
                cause = later.value.__cause__
                assert type(later.value) is type(sync.value) is type(cause)
                assert str(later.value) == str(cause) == str(sync.value)
                frames = traceback.extract_tb(cause.__traceback__)
                assert frames[-1].filename == __file__ and frames[-1].lineno == call_line
                assert frames[-1].line.strip() == "return ndd.reshape(t, shape=[2])  " \
                                                  "# FAILING-RESHAPE"
                assert frames[-1].name == "_failing_reshape"
                assert frames[-2].name == "test_later_errors_come_from_the_call_stack_of_the_op"
                # the kernel's own error (and its traceback) is still one step further
                assert "cannot reshape" in str(cause.__cause__)
                assert traceback.extract_tb(cause.__cause__.__traceback__)


def test_sync_errors_are_raised_as_they_are():
    with EvalMode.sync_cpu:
        with pytest.raises(ValueError) as ei:
            _failing_reshape()
    assert "cannot reshape" in str(ei.value.__cause__)     # the kernel's own error
    assert "called at" not in str(ei.value.__cause__)


def test_error_copies_pickle_as_plain_text():
    with EvalMode.eager:
        out = _failing_reshape()
        with pytest.raises(ValueError) as ei:
            out.evaluate()
    site = ei.value.__cause__._ndd_site
    assert isinstance(site, str) and site.stack
    back = pickle.loads(pickle.dumps(site))
    assert back == site and type(back) is str
    err = pickle.loads(pickle.dumps(ei.value))      # e.g. sent back by a DataLoader worker
    assert type(err) is type(ei.value) and str(err) == str(ei.value)
    assert isinstance(err, ValueError) and isinstance(err, RuntimeError)
    assert "".join(traceback.format_exception(ei.value)).count("_failing_reshape") >= 1


@pytest.mark.parametrize("mode", [EvalMode.eager, EvalMode.deferred])
def test_external_arrays_run_at_once(mode):
    """A call given the user's own array runs in the call in every mode (DALI 2.4): its
    errors are raised there, and changing the array afterwards changes nothing."""
    img = np.zeros((6, 6), np.float32)
    with mode:
        with pytest.raises(ValueError, match="resize"):
            ndd.resize(img)  # no size: the error is the call's
        src = np.arange(4, dtype=np.int32)
        out = ndd.flip(src.reshape(2, 2), horizontal=1)
        doubled = ndd.tensor(src) * 2        # an ndd handle: follows the mode
        assert out._value.data is not None   # already computed
        src[:] = 100
    np.testing.assert_array_equal(np.asarray(out), [[1, 0], [3, 2]])
    np.testing.assert_array_equal(np.asarray(doubled), [0, 2, 4, 6])


@pytest.mark.oracle
def test_later_errors_like_dali():
    """DALI 2.4 raises the same type from a cause ending at the op call's line."""
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    for lib in (dalidyn, ndd):
        with lib.EvalMode.deferred:
            t = lib.tensor(np.zeros((4, 4, 3), np.uint8))
            out = lib.crop(t, crop=(8, 8))  # ORACLE-CROP
            with pytest.raises(Exception) as ei:
                out.evaluate()
        cause = ei.value.__cause__
        assert cause is not None and type(cause) is type(ei.value)
        last = traceback.extract_tb(cause.__traceback__)[-1]
        assert (last.filename, last.lineno) == (__file__, _line_of("# ORACLE-CROP"))


def test_numpy_scalars_and_lists_are_values_not_external():
    t = ndd.tensor(np.arange(3, dtype=np.float32))
    with EvalMode.deferred:
        a = t * np.float32(2)
        b = ndd.flip(ndd.tensor([[1, 2], [3, 4]]), horizontal=1) + 1
        c = t * np.float64(0.5)
        d = ndd.cast(np.float32(2.5), dtype=ndd.float64)          # a numpy scalar input
        e = ndd.cast([1.5, 2.5], dtype=ndd.float64)               # a list input
        for x in (a, c, d, e):
            assert x._value.data is None                           # still deferred
    np.testing.assert_array_equal(np.asarray(a), [0, 2, 4])
    np.testing.assert_array_equal(np.asarray(b), [[3, 2], [5, 4]])
    np.testing.assert_array_equal(np.asarray(c), [0, 0.5, 1])
    assert np.asarray(d) == 2.5 and np.asarray(d).dtype == np.float64
    np.testing.assert_array_equal(np.asarray(e), [1.5, 2.5])


@pytest.mark.parametrize("mode", list(EvalMode))
def test_kernel_errors_are_also_runtime_errors(mode):
    """An op failing while it runs raises a RuntimeError, as DALI's operators do, that is also
    the kernel's ValueError (so both ``except`` clauses catch it), in every mode."""
    with mode:
        with pytest.raises(RuntimeError, match="cannot reshape") as ei:
            _failing_reshape().evaluate()
    assert isinstance(ei.value, ValueError) and type(ei.value).__name__ == "ValueError"
    later = mode in (EvalMode.eager, EvalMode.deferred)
    # later: from the op's error (rebuilt traceback); sync: from the kernel's own error
    assert ("reshape (called at" in str(ei.value.__cause__)) == later
    with mode:
        with pytest.raises(TypeError, match="bogus"):   # argument errors: at the call, as is
            ndd.reshape(ndd.tensor([1, 2]), bogus=1)


@pytest.mark.oracle
def test_kernel_errors_are_runtime_errors_in_dali_too():
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    for lib in (dalidyn, ndd):
        with lib.EvalMode.eager:
            with pytest.raises(RuntimeError):
                lib.reshape(lib.tensor([1, 2, 3]), shape=[2]).evaluate()
