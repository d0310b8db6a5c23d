"""ndd.ExternalSource called as in DALI 2.4: src() / src(batch_size=N), cycle, device,
per-output layout and dtype, DALI's errors; and how the call API and next_epoch coexist."""
import functools
import itertools

import numpy as np
import pytest

import ndd


def _items(n):
    return [np.arange(4, dtype=np.int16).reshape(2, 2) + 10 * k for k in range(n)]


def _pull_all(src, limit=20):
    out = []
    for _ in range(limit):
        try:
            out.append(np.asarray(src()).copy())
        except StopIteration:
            out.append("stop")
    return out


def test_callable_is_called_once_per_call_and_returns_a_tensor():
    calls = itertools.count()
    src = ndd.ExternalSource(lambda: np.full((3,), next(calls), np.int32))
    for k in range(4):
        t = src()
        assert isinstance(t, ndd.Tensor) and not isinstance(t, ndd.Batch)
        np.testing.assert_array_equal(np.asarray(t), [k, k, k])
    assert next(calls) == 4


def test_batch_items_stay_batches_and_batch_size_broadcasts_tensors():
    samples = [np.full((2,), k, np.float32) for k in range(3)]
    src = ndd.ExternalSource(lambda: ndd.batch(samples))
    b = src()
    assert isinstance(b, ndd.Batch) and b.batch_size == 3
    np.testing.assert_array_equal(np.asarray(ndd.as_tensor(b)), np.stack(samples))
    assert src(batch_size=3).batch_size == 3
    with pytest.raises(ValueError, match="Expected batch size 5, got 3"):
        src(batch_size=5)
    sample = np.array([[1, 2], [3, 4]], np.uint8)
    bc = ndd.ExternalSource(lambda: sample)(batch_size=4)
    assert isinstance(bc, ndd.Batch) and bc.batch_size == 4
    np.testing.assert_array_equal(np.asarray(ndd.as_tensor(bc)), np.broadcast_to(sample, (4, 2, 2)))
    with pytest.raises(ValueError, match="positive"):
        src(batch_size=0)
    with pytest.raises(TypeError, match="int"):
        src(batch_size=2.0)


@pytest.mark.parametrize("cycle,expected", [
    (None, [0, 1, 2, "stop", "stop", "stop"]),
    (False, [0, 1, 2, "stop", "stop", "stop"]),
    ("no", [0, 1, 2, "stop", "stop", "stop"]),
    (True, [0, 1, 2, 0, 1, 2]),
    ("quiet", [0, 1, 2, 0, 1, 2]),
    ("raise", [0, 1, 2, "stop", 0, 1]),
])
def test_cycle_modes_over_an_iterable(cycle, expected):
    data = _items(3)
    got = _pull_all(ndd.ExternalSource(data, cycle=cycle), limit=6)
    want = [e if e == "stop" else data[e] for e in expected]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, str):
            assert g == w
        else:
            np.testing.assert_array_equal(g, w)


def test_generator_function_is_restarted_by_cycle_but_a_generator_object_cannot_cycle():
    made = []

    def gen():
        made.append(1)
        yield from (np.int64(k) for k in (5, 6))

    got = _pull_all(ndd.ExternalSource(gen, cycle="raise"), limit=5)
    assert [g if isinstance(g, str) else int(g) for g in got] == [5, 6, "stop", 5, 6]
    assert len(made) == 2
    once = _pull_all(ndd.ExternalSource(gen), limit=3)
    assert [g if isinstance(g, str) else int(g) for g in once] == [5, 6, "stop"]
    with pytest.raises(TypeError, match="generator"):
        ndd.ExternalSource(gen(), cycle=True)
    # a partial of a generator function and a generator __call__ are generator functions too
    assert int(ndd.ExternalSource(functools.partial(gen))()) == 5

    class Gen:
        def __call__(self):
            yield np.int64(9)
    assert int(ndd.ExternalSource(Gen())()) == 9


def test_num_outputs_layouts_dtypes():
    src = ndd.ExternalSource(lambda: (np.ones((2, 3, 1)), np.arange(6).reshape(2, 3)),
                             num_outputs=2, layout=["HWC", "HW"], dtype=[ndd.uint8, ndd.float32])
    a, b = src()
    assert (a.layout, b.layout) == ("HWC", "HW")
    assert (a.dtype, b.dtype) == (ndd.uint8, ndd.float32)
    np.testing.assert_array_equal(np.asarray(b), np.arange(6, dtype=np.float32).reshape(2, 3))
    one = ndd.ExternalSource(lambda: (np.zeros(2), np.zeros(3)), num_outputs=2, layout="X")()
    assert one[0].layout == one[1].layout == "X"
    with pytest.raises(ValueError, match="Expected 2 outputs"):
        ndd.ExternalSource(lambda: (np.zeros(2),), num_outputs=2)()
    with pytest.raises(ValueError, match="Expected 2 outputs"):
        ndd.ExternalSource(lambda: np.zeros(2), num_outputs=2)()
    with pytest.raises(TypeError, match="uniformly"):
        ndd.ExternalSource(lambda: (np.zeros(2), ndd.batch([np.zeros(2)])), num_outputs=2)()


def test_construction_errors():
    with pytest.raises(ValueError, match="no parameters"):
        ndd.ExternalSource(lambda info: np.zeros(2))
    with pytest.raises(ValueError, match="cycle"):
        ndd.ExternalSource(lambda: np.zeros(2), cycle=False)
    with pytest.raises(ValueError, match="Invalid value 'sometimes'"):
        ndd.ExternalSource([1], cycle="sometimes")
    with pytest.raises(ValueError, match="Expected a sequence of size 2, got 3"):
        ndd.ExternalSource(lambda: (1, 2), num_outputs=2, layout=["A", "B", "C"])
    with pytest.raises(ValueError, match="Expected a sequence of size 3, got 1"):
        ndd.ExternalSource(lambda: (1, 2, 3), num_outputs=3, dtype=[ndd.int32])
    with pytest.raises(ValueError, match="strictly positive"):
        ndd.ExternalSource([1], num_outputs=0)
    with pytest.raises(TypeError, match="callable or iterable"):
        ndd.ExternalSource(3.5)
    for bad in (lambda *a: 0, lambda **k: 0, lambda a, b: 0):
        with pytest.raises(TypeError, match="0 or 1 positional"):
            ndd.ExternalSource(bad)
    with pytest.raises(ValueError, match="unknown device"):
        ndd.ExternalSource([1], device="tpu")


def test_empty_item_and_device():
    t = ndd.ExternalSource(lambda: ())()
    assert np.asarray(t).shape == (0,)
    src = ndd.ExternalSource(lambda: np.array([1, 2, 3]), device="cpu")
    r = src()
    assert r.device == ndd.Device("cpu")
    np.testing.assert_array_equal(np.asarray(r), [1, 2, 3])


def test_gpu_device_fails_clearly_without_a_gpu():
    if ndd._stream.cuda_device_count() > 0:
        pytest.skip("a CUDA device is present")
    src = ndd.ExternalSource(lambda: np.array([1, 2, 3]), device="gpu")
    with pytest.raises(RuntimeError, match="no CUDA device"):
        src()


def test_call_api_and_next_epoch_do_not_mix():
    src = ndd.ExternalSource(_items(3))
    src()
    with pytest.raises(RuntimeError, match="next_epoch"):
        src.next_epoch(batch_size=2)
    other = ndd.ExternalSource([np.zeros((2, 3))])
    list(other.next_epoch(batch_size=2))
    with pytest.raises(RuntimeError, match="next_epoch"):
        other()
    with pytest.raises(RuntimeError, match="next_epoch"):
        other.captured(batch_size=2)


def test_info_callable_needs_batch_and_next_epoch():
    src = ndd.ExternalSource(lambda info: np.int32(info.idx_in_epoch), batch=False, epoch_size=5)
    with pytest.raises(TypeError, match="next_epoch"):
        src()
    fresh = ndd.ExternalSource(lambda info: np.int32(info.idx_in_epoch), batch=False,
                               epoch_size=5)
    got = [int(t.item()) for b in fresh.next_epoch(batch_size=2) for t in b]
    assert got == [0, 1, 2, 3, 4]


def test_next_epoch_of_parameterless_callable_and_generator_function():
    k = itertools.count()

    def fetch():
        i = next(k)
        if i >= 5:
            raise StopIteration
        return np.full((2,), i, np.int32)
    src = ndd.ExternalSource(fetch, batch=False)
    got = [np.asarray(t).tolist() for b in src.next_epoch(batch_size=2) for t in b]
    assert got == [[i, i] for i in range(5)]

    def gen():
        yield np.zeros((2, 1), np.uint8)
        yield np.ones((1, 1), np.uint8)
    g = ndd.ExternalSource(gen)       # items are batches (batch=True by default)
    for _ in range(2):                # called again for each epoch
        sizes = [b.batch_size for b in g.next_epoch(batch_size=2)]
        assert sizes == [2, 1]


def test_num_outputs_one_is_not_a_tuple_in_next_epoch():
    src = ndd.ExternalSource([np.zeros((2, 3))], num_outputs=1)
    (b,) = list(src.next_epoch(batch_size=2))
    assert isinstance(b, ndd.Batch) and b.batch_size == 2


@pytest.mark.oracle
def test_cycle_and_errors_match_dali():
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn

    for cycle in (None, "no", True, "quiet", "raise"):
        data = _items(2)
        want = _pull_all(dalidyn.ExternalSource(data, cycle=cycle), limit=5)
        got = _pull_all(ndd.ExternalSource(data, cycle=cycle), limit=5)
        assert [isinstance(w, str) for w in want] == [isinstance(g, str) for g in got], cycle
        for w, g in zip(want, got):
            if not isinstance(w, str):
                np.testing.assert_array_equal(g, w)
    bc_d = dalidyn.ExternalSource(lambda: np.arange(3))(batch_size=2)
    bc_n = ndd.ExternalSource(lambda: np.arange(3))(batch_size=2)
    np.testing.assert_array_equal(np.asarray(ndd.as_tensor(bc_n)),
                                  np.asarray(dalidyn.as_tensor(bc_d)))
    for make in (lambda m: m.ExternalSource(lambda x: 0),
                 lambda m: m.ExternalSource(lambda: 0, cycle="quiet"),
                 lambda m: m.ExternalSource(lambda: (1, 2), num_outputs=2, layout=["A"] * 3)):
        with pytest.raises(ValueError) as d_err:
            make(dalidyn)
        with pytest.raises(ValueError):
            make(ndd)
        assert d_err.value is not None


def test_invariant_proxies_are_unwrapped():
    inv = ndd.capture.invariant
    src = ndd.ExternalSource(inv(iter([np.array([1, 2, 3], np.int32)])), device=inv("cpu"),
                             num_outputs=inv(1))
    assert src.num_outputs == 1 and type(src.num_outputs) is int
    b = src(batch_size=inv(2))
    assert b.batch_size == 2
    np.testing.assert_array_equal(np.asarray(ndd.as_tensor(b)), [[1, 2, 3], [1, 2, 3]])
