"""ndd.random: batch_size semantics, RNG reproducibility/state, distribution sanity."""
import json

import numpy as np
import pytest

import ndd
from ndd import EvalMode


def _vals(x):
    if isinstance(x, ndd.Batch):
        return np.stack([np.asarray(t) for t in x.tensors[:]])
    return np.asarray(x)


def test_batch_size_gives_batch_else_tensor():
    b = ndd.random.uniform(batch_size=5, range=[0, 1])
    assert isinstance(b, ndd.Batch) and b.batch_size == 5
    assert b.dtype is ndd.float32
    assert b.shape == [()] * 5
    t = ndd.random.uniform(range=[0, 1], shape=[3, 2])
    assert isinstance(t, ndd.Tensor) and t.shape == (3, 2)
    c = ndd.random.coin_flip(batch_size=2, shape=[4])
    assert c.dtype is ndd.int32 and c.shape == [(4,), (4,)]


def test_bad_batch_size():
    for bad in (0, -2, 2.5, True):
        with pytest.raises(ValueError, match="batch_size"):
            ndd.random.uniform(batch_size=bad)


def test_rng_seed_reproducible_and_distinct():
    a = _vals(ndd.random.uniform(batch_size=8, rng=ndd.random.RNG(123), shape=[4]))
    b = _vals(ndd.random.uniform(batch_size=8, rng=ndd.random.RNG(123), shape=[4]))
    c = _vals(ndd.random.uniform(batch_size=8, rng=ndd.random.RNG(124), shape=[4]))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert len(np.unique(a)) == a.size   # samples are not copies of each other


def test_rng_advances_between_calls():
    r = ndd.random.RNG(5)
    a = _vals(ndd.random.normal(batch_size=4, rng=r))
    b = _vals(ndd.random.normal(batch_size=4, rng=r))
    assert not np.array_equal(a, b)


def test_clone_draws_same_sequence():
    r = ndd.random.RNG(7)
    ndd.random.uniform(batch_size=2, rng=r)
    c = r.clone()
    x = _vals(ndd.random.uniform(batch_size=3, rng=r))
    y = _vals(ndd.random.uniform(batch_size=3, rng=c))
    np.testing.assert_array_equal(x, y)
    assert r() == c()


def test_state_round_trip_through_json():
    r = ndd.random.RNG(11)
    ndd.random.uniform(batch_size=3, rng=r)
    state = json.loads(json.dumps(r.get_state()))
    expect = _vals(ndd.random.normal(batch_size=4, shape=[2], rng=r))
    r2 = ndd.random.RNG(999)
    r2.set_state(state)
    np.testing.assert_array_equal(_vals(ndd.random.normal(batch_size=4, shape=[2], rng=r2)),
                                  expect)
    with pytest.raises(ValueError, match="state"):
        r2.set_state({"foo": 1})


def test_set_seed_default_rng():
    ndd.random.set_seed(42)
    a = _vals(ndd.random.uniform(batch_size=4))
    ndd.random.set_seed(42)
    b = _vals(ndd.random.uniform(batch_size=4))
    np.testing.assert_array_equal(a, b)


def test_bad_seed_and_rng():
    with pytest.raises(ValueError, match="seed"):
        ndd.random.RNG(-1)
    with pytest.raises(TypeError, match="rng"):
        ndd.random.uniform(batch_size=2, rng=3)
    with pytest.raises(TypeError, match="rng"):
        ndd.flip(ndd.tensor(np.zeros((2, 2, 3), np.uint8)), rng=ndd.random.RNG(1))


def test_same_seed_same_values_eager_deferred():
    eager = _vals(ndd.random.normal(batch_size=6, shape=[3], rng=ndd.random.RNG(3)))
    with EvalMode.deferred:
        d = ndd.random.normal(batch_size=6, shape=[3], rng=ndd.random.RNG(3))
    with EvalMode.sync_cpu:
        s = ndd.random.normal(batch_size=6, shape=[3], rng=ndd.random.RNG(3))
    np.testing.assert_array_equal(_vals(d), eager)
    np.testing.assert_array_equal(_vals(s), eager)


def test_uniform_distribution():
    x = _vals(ndd.random.uniform(batch_size=4, shape=[5000], range=[2, 6],
                                 rng=ndd.random.RNG(0))).ravel()
    assert x.min() >= 2 and x.max() < 6
    assert abs(x.mean() - 4) < 0.05
    assert abs(x.var() - 16 / 12) < 0.05


def test_uniform_values():
    x = _vals(ndd.random.uniform(batch_size=2, shape=[2000], values=[1, 5, 9],
                                 rng=ndd.random.RNG(0))).ravel()
    assert set(np.unique(x)) == {1.0, 5.0, 9.0}


def test_normal_distribution():
    x = _vals(ndd.random.normal(batch_size=4, shape=[5000], mean=3, stddev=2,
                                rng=ndd.random.RNG(1))).ravel()
    assert abs(x.mean() - 3) < 0.1
    assert abs(x.std() - 2) < 0.1


def test_coin_flip_probability():
    x = _vals(ndd.random.coin_flip(batch_size=4, shape=[5000], probability=0.2,
                                   rng=ndd.random.RNG(2))).ravel()
    assert set(np.unique(x)) <= {0, 1}
    assert abs(x.mean() - 0.2) < 0.02


def test_per_sample_probability_batch():
    p = ndd.batch([np.float32(0.0), np.float32(1.0)])
    x = ndd.random.coin_flip(probability=p, shape=[100], rng=ndd.random.RNG(0))
    assert isinstance(x, ndd.Batch) and x.batch_size == 2
    assert not np.asarray(x.tensors[0]).any()
    assert np.asarray(x.tensors[1]).all()


def test_choice_with_p():
    x = _vals(ndd.random.choice(3, batch_size=4, shape=[5000], p=[0.1, 0.6, 0.3],
                                rng=ndd.random.RNG(3))).ravel()
    freq = np.bincount(x, minlength=3) / x.size
    np.testing.assert_allclose(freq, [0.1, 0.6, 0.3], atol=0.02)
    y = _vals(ndd.random.choice([10, 20], batch_size=2, shape=[200], rng=ndd.random.RNG(3)))
    assert set(np.unique(y)) == {10, 20}


def test_beta_range_and_mean():
    x = _vals(ndd.random.beta(batch_size=4, shape=[5000], alpha=2, beta=5,
                              rng=ndd.random.RNG(4))).ravel()
    assert x.min() >= 0 and x.max() <= 1
    assert abs(x.mean() - 2 / 7) < 0.02


def test_shape_like_input():
    like = ndd.tensor(np.zeros((3, 4), np.uint8))
    t = ndd.random.uniform(like, rng=ndd.random.RNG(0))
    assert t.shape == (3, 4)


# -- state strings and seeding (DALI's rules; see also tests/ndd/test_checkpoint.py) ---------
def test_get_state_is_a_plain_string_that_round_trips():
    r = ndd.random.RNG(17)
    ndd.random.normal(batch_size=2, rng=r)
    s = r.get_state()
    assert type(s) is str and s.startswith("ndd.random.RNG/2;") and s == r.state
    expect = [r() for _ in range(4)]
    for back in (s, s.encode("ascii"), json.loads(json.dumps(s))):
        g = ndd.random.RNG(0)
        g.set_state(back)
        assert [g() for _ in range(4)] == expect and g.seed == 17
    g = ndd.random.RNG(0)
    g.state = s
    assert [g() for _ in range(4)] == expect
    assert [ndd.random.RNG(state=s)() for _ in range(1)] == expect[:1]


def test_earlier_dict_state_still_accepted():
    r = ndd.random.RNG(3)
    r()
    legacy = r._state_dict()        # what get_state() returned in earlier ndd versions
    assert legacy["type"] == "ndd.random.RNG"
    expect = [r() for _ in range(3)]
    g = ndd.random.RNG()
    g.set_state(json.loads(json.dumps(legacy)))
    assert [g() for _ in range(3)] == expect
    with pytest.raises(ValueError, match="corrupt"):
        g.set_state({**legacy, "state": {"state": 1}})


def test_seed_assignment_reseeds_in_place():
    r = ndd.random.RNG(1)
    r()
    r.seed = 42
    assert r.seed == 42
    assert [r() for _ in range(3)] == [g() for g in [ndd.random.RNG(42)] for _ in range(3)]
    with pytest.raises(ValueError, match="seed"):
        r.seed = -3


def test_handle_obtained_before_set_seed_follows_it():
    """DALI: set_seed reseeds the thread's default generator object, so a handle taken from
    get_default_rng() before set_seed draws the new sequence; clones taken before do not."""
    handle = ndd.random.get_default_rng()
    clone = handle.clone()
    old = clone.clone()
    ndd.random.set_seed(123)
    assert handle is ndd.random.get_default_rng()
    ref = ndd.random.RNG(123)
    assert [handle() for _ in range(5)] == [ref() for _ in range(5)]
    assert [clone() for _ in range(3)] == [old() for _ in range(3)]
    ndd.random.set_seed(9)
    by_default = _vals(ndd.random.uniform(batch_size=4, shape=[2]))
    ndd.random.set_seed(9)
    by_handle = _vals(ndd.random.uniform(batch_size=4, shape=[2], rng=handle))
    np.testing.assert_array_equal(by_default, by_handle)
    np.testing.assert_array_equal(
        by_default, _vals(ndd.random.uniform(batch_size=4, shape=[2], rng=ndd.random.RNG(9))))
    ndd.random.set_seed(4)
    saved = ndd.random.get_default_rng().get_state()
    expect = _vals(ndd.random.uniform(batch_size=3))
    ndd.random.set_seed(5)
    handle.set_state(saved)     # restoring the default through the old handle
    np.testing.assert_array_equal(_vals(ndd.random.uniform(batch_size=3)), expect)


def test_set_seed_inside_a_compiled_loop_equals_eager(image_folder):
    """The default generator is reseeded in place: a compiled loop's seeds drawn ahead from
    it are given back, and the rest of the epoch draws what eager execution draws."""
    def run(compile):
        ndd.random.set_seed(1)
        reader = ndd.readers.File(file_root=str(image_folder), random_shuffle=True, seed=2)
        out = []
        for k, (jpegs, _) in enumerate(reader.next_epoch(batch_size=2, compile=compile)):
            if k == 1:
                ndd.random.set_seed(77)
            out.append(_vals(ndd.random.uniform(batch_size=jpegs.batch_size)))
        return out, ndd.random.get_default_rng().get_state()

    eager, compiled = run(False), run(True)
    assert len(eager[0]) == 3
    for a, b in zip(eager[0], compiled[0]):
        np.testing.assert_array_equal(a, b)
    assert eager[1] == compiled[1]


@pytest.mark.parametrize("already_drawn", [0, 1, 2])
def test_advance_equals_that_many_calls(already_drawn):
    for n in (0, 1, 2, 3, 10, 999, 1000):
        stepped, skipped = ndd.random.RNG(seed=21), ndd.random.RNG(seed=21)
        for _ in range(already_drawn):
            stepped(), skipped()
        for _ in range(n):
            stepped()
        skipped.advance(n)
        assert skipped.get_state() == stepped.get_state(), n
        assert [skipped() for _ in range(4)] == [stepped() for _ in range(4)]


def test_advance_rejects_negative_and_non_integers():
    rng = ndd.random.RNG(seed=1)
    before = rng.get_state()
    with pytest.raises(ValueError, match="negative"):
        rng.advance(-1)
    with pytest.raises(TypeError):
        rng.advance(1.5)
    assert rng.get_state() == before
    rng.advance(np.int64(3))
    assert rng.get_state() != before


def test_advance_is_constant_time():
    rng = ndd.random.RNG(seed=5)
    rng.advance(10 ** 15)          # would take days as single draws
    ref = ndd.random.RNG(seed=5)
    ref.advance(10 ** 15 - 1)
    ref()
    assert rng() == ref()


@pytest.mark.oracle
def test_advance_matches_calls_in_dali_too():
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    for lib in (dalidyn, ndd):
        a, b = lib.random.RNG(seed=3), lib.random.RNG(seed=3)
        for _ in range(7):
            a()
        b.advance(7)
        assert a() == b()
