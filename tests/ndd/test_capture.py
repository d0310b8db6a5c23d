"""Capture mode as DALI 2.4 spells it (``next_epoch(capture=True)``): which results are
``CapturedBatch``es, DALI's rules and words, and ``ndd.capture.invariant``.

Compile mode itself (replay equals eager, prefetching, random streams) is tested in
``test_compile.py``; here the DALI-facing surface on top of it.
"""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
from PIL import Image

import ndd
from ndd.capture._invariant import is_invariant, unwrap_invariant, unwrap_invariants


@pytest.fixture(scope="module")
def jpeg_root(tmp_path_factory):
    """2 classes x 5 small JPEGs (smooth gradients, odd sizes): 10 files, so batches of 4 end
    with a short batch of 2."""
    root = tmp_path_factory.mktemp("capture_jpegs")
    gen = np.random.default_rng(7)
    for c in range(2):
        (root / f"c{c}").mkdir()
        for k in range(5):
            h, w = int(gen.integers(20, 40)), int(gen.integers(20, 40))
            yy, xx = np.mgrid[0:h, 0:w]
            img = np.stack([(yy * 5 + 40 * k) % 256, (xx * 7) % 256,
                            np.full((h, w), 60 * c + k)], axis=-1).astype(np.uint8)
            buf = io.BytesIO()
            Image.fromarray(img).save(buf, "JPEG", quality=90)
            (root / f"c{c}" / f"{k}.jpg").write_bytes(buf.getvalue())
    return str(root)


def _captured(x) -> bool:
    return type(x).__name__ == "CapturedBatch" and x._capture_ref is not None


def _arrays(batch):
    return [np.asarray(t) for t in batch.tensors]


# ------------------------------------------------------------------ CapturedBatch


@pytest.mark.parametrize("spelling", ["capture", "compile"])
def test_traced_and_replayed_results_are_captured_batches_equal_to_eager(jpeg_root, spelling):
    def body(jpegs):
        imgs = ndd.decoders.image(jpegs)
        return imgs, ndd.resize(imgs, size=[16, 12])

    eager = []
    for jpegs, _ in ndd.readers.File(file_root=jpeg_root).next_epoch(batch_size=4):
        imgs, small = body(jpegs)
        assert not _captured(imgs) and not _captured(small)
        eager.append(_arrays(small))
    got, flags = [], []
    reader = ndd.readers.File(file_root=jpeg_root)
    for _ in range(2):          # the traced epoch, then a replayed one
        for jpegs, labels in reader.next_epoch(batch_size=4, **{spelling: True}):
            imgs, small = body(jpegs)
            flags.append((_captured(jpegs), _captured(labels), _captured(imgs),
                          _captured(small)))
            assert isinstance(small, ndd.Batch)
            got.append(_arrays(small))
    assert flags == [(True, True, True, True)] * 6
    assert len(got) == 6
    for a, b in zip(eager + eager, got):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    assert ndd.compile.report().replayed > 0


def test_a_call_that_does_not_replay_is_a_plain_batch(jpeg_root):
    reader = ndd.readers.File(file_root=jpeg_root)
    prev, seen = None, []
    for jpegs, _ in reader.next_epoch(batch_size=4, capture=True):
        imgs = ndd.decoders.image(jpegs)
        # a fresh array built by Python in every iteration: never replayed
        fresh = ndd.flip(ndd.as_batch([np.zeros((2, 2, 3), np.uint8)] * jpegs.batch_size),
                         horizontal=1)
        # the previous iteration's images: not what the trace saw
        stale = ndd.flip(prev if prev is not None else imgs, horizontal=1)
        seen.append((_captured(imgs), _captured(fresh), _captured(stale)))
        prev = imgs
    assert seen == [(True, False, True), (True, False, False), (True, False, False)]


def test_a_random_call_with_a_constant_batch_size_replays_on_the_short_last_batch(jpeg_root):
    def run(capture):
        rng = ndd.random.RNG(seed=3)
        out = []
        for jpegs, _ in ndd.readers.File(file_root=jpeg_root).next_epoch(batch_size=4,
                                                                          capture=capture):
            x = ndd.random.uniform(batch_size=4, range=[0.0, 1.0], shape=[3], rng=rng)
            out.append((jpegs.batch_size, _captured(x), np.asarray(ndd.as_tensor(x))))
        return out, rng.get_state()
    (eager, eager_state), (cap, cap_state) = run(False), run(True)
    assert [n for n, _, _ in cap] == [4, 4, 2]
    assert [c for _, c, _ in cap] == [True, True, True]
    for (_, _, a), (_, _, b) in zip(eager, cap):
        assert a.shape == (4, 3)
        np.testing.assert_array_equal(a, b)
    assert eager_state == cap_state


# ------------------------------------------------------------------ DALI's rules, DALI's words


def test_mode_rules_use_the_words_of_the_spelling(jpeg_root):
    reader = ndd.readers.File(file_root=jpeg_root)
    with pytest.raises(ValueError, match="capture=True requires a non-None batch_size"):
        reader.next_epoch(capture=True)
    with pytest.raises(ValueError, match="compile=True requires a non-None batch_size"):
        reader.next_epoch(compile=True)
    for _ in reader.next_epoch(batch_size=4):
        break
    with pytest.raises(RuntimeError, match="cannot switch to capture mode"):
        reader.next_epoch(batch_size=4, capture=True)
    with pytest.raises(RuntimeError, match="cannot switch to compiled mode"):
        reader.next_epoch(batch_size=4, compile=True)

    for kw, word in (("capture", "eager"), ("compile", "non-compiled")):
        reader = ndd.readers.File(file_root=jpeg_root)
        for jpegs, _ in reader.next_epoch(batch_size=4, **{kw: True}):
            ndd.decoders.image(jpegs)
            break
        with pytest.raises(RuntimeError, match=f"cannot switch to {word} mode"):
            reader.next_epoch(batch_size=4)


def test_batch_size_cannot_change_between_captured_epochs_even_after_a_break(jpeg_root):
    reader = ndd.readers.File(file_root=jpeg_root)
    for jpegs, _ in reader.next_epoch(batch_size=4, capture=True):
        ndd.decoders.image(jpegs)
        break
    # the batch size is checked before the left-open epoch (DALI's order)
    with pytest.raises(ValueError, match="cannot change batch_size from 4 to 2"):
        reader.next_epoch(batch_size=2, capture=True)


def test_a_call_contradicting_the_loops_batch_size_raises_dalis_runtime_error(jpeg_root):
    reader = ndd.readers.File(file_root=jpeg_root, pad_last_batch=True)
    for jpegs, _ in reader.next_epoch(batch_size=4, capture=True):
        ndd.resize(ndd.decoders.image(jpegs), size=[8, 8])
    with pytest.raises(RuntimeError, match="cannot change batch size") as info:
        for jpegs, _ in reader.next_epoch(batch_size=4, capture=True):
            ndd.resize(ndd.decoders.image(jpegs), size=[8, 8], batch_size=8)
    assert isinstance(info.value, ValueError)       # eager execution's type, too
    assert "cannot change batch_size from 4 to 8" in str(info.value)


def test_nothing_captured_warns_and_the_reader_may_then_be_eager(jpeg_root):
    reader = ndd.readers.File(file_root=jpeg_root)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        n = sum(j.evaluate().batch_size for j, _ in reader.next_epoch(batch_size=4,
                                                                      capture=True))
    assert n == 10
    hits = [w for w in caught if "no operators were captured" in str(w.message)]
    assert len(hits) == 1
    assert issubclass(hits[0].category, UserWarning)
    assert issubclass(hits[0].category, RuntimeWarning)
    assert sum(j.batch_size for j, _ in reader.next_epoch(batch_size=4)) == 10


# ------------------------------------------------------------------ ndd.capture.invariant


@pytest.mark.parametrize("value", [None, 3, 2.5, "text", [1, 2], (1, 2), {"a": 1}, int])
def test_invariant_stands_for_its_value(value):
    marked = ndd.capture.invariant(value)
    assert is_invariant(marked) and not is_invariant(value)
    assert marked == value and not (marked != value)
    assert isinstance(marked, type(value))
    assert unwrap_invariant(marked) is value
    assert ndd.capture.invariant(marked) is marked
    assert ndd.compile.invariant is ndd.capture.invariant
    assert repr(marked) == repr(value)


def test_invariant_protocols_forward_and_attributes_stay_marked():
    two, three = ndd.capture.invariant(2), ndd.capture.invariant(3)
    assert two * three == 6 and 10 - three == 7 and -two == -2 and float(two) == 2.0
    assert [10, 20, 30][two] == 30                  # __index__
    seq = ndd.capture.invariant([4, 5, 6])
    assert len(seq) == 3 and list(seq) == [4, 5, 6] and seq[two] == 6 and 5 in seq
    with pytest.raises(TypeError, match="unhashable type"):
        hash(seq)
    assert hash(two) == hash(2)
    np.testing.assert_array_equal(np.asarray(ndd.capture.invariant(np.arange(3))), [0, 1, 2])
    token = object()
    assert ndd.capture.invariant(lambda x: x)(token) is token

    class Config:
        def __init__(self):
            self.sizes = [8, 8]

        def first(self):
            return self.sizes[0]

    cfg = Config()
    marked = ndd.capture.invariant(cfg)
    assert is_invariant(marked.sizes) and not is_invariant(cfg.sizes)
    assert marked.first() == 8
    marked.extra = 1
    assert cfg.extra == 1
    del marked.extra
    assert not hasattr(cfg, "extra")


def test_unwrap_invariants_looks_inside_plain_containers_only():
    one = ndd.capture.invariant(1)
    nested = [one, (one, 2), {"k": one}]
    out = unwrap_invariants(nested)
    assert out == [1, (1, 2), {"k": 1}]
    assert type(out[0]) is int and type(out[1][0]) is int and type(out[2]["k"]) is int
    assert nested[0] is one                         # the input is not modified
    plain = [1, (2, 3)]
    assert unwrap_invariants(plain) is plain        # nothing to unwrap: the same object

    class Bag(list):
        pass

    bag = Bag([one])
    assert unwrap_invariants(bag) is bag            # a subclass is not looked into


def test_marked_arguments_replay_and_must_stay_marked(jpeg_root):
    def run(capture, marks):
        reader = ndd.readers.File(file_root=jpeg_root, pad_last_batch=True)
        out = []
        for k, (jpegs, _) in enumerate(reader.next_epoch(batch_size=4, capture=capture)):
            size = marks(k)([12, 10])
            small = ndd.resize(ndd.decoders.image(jpegs), size=size)
            out.append((_captured(small), _arrays(small)))
        return out

    eager = run(False, lambda k: ndd.capture.invariant)
    cap = run(True, lambda k: ndd.capture.invariant)
    assert [c for c, _ in cap] == [True, True, True]
    for (_, a), (_, b) in zip(eager, cap):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    with pytest.raises(RuntimeError, match="marked with ndd.capture.invariant.*remain marked"):
        run(True, lambda k: ndd.capture.invariant if k == 0 else (lambda v: v))


def test_invariant_tensor_is_registered_not_wrapped():
    t = ndd.as_tensor(np.float32(2.0))
    assert ndd.capture.invariant(t) is t
    assert not is_invariant(t)


@pytest.mark.oracle
@pytest.mark.parametrize("value", [None, 1, 2.5, "text", [1, 2], int])
def test_invariant_agrees_with_dali(value):
    dali_capture = pytest.importorskip("nvidia.dali.experimental.dynamic.capture._invariant")
    ours, theirs = ndd.capture.invariant(value), dali_capture.invariant(value)
    assert (ours == value) == (theirs == value)
    assert isinstance(ours, type(value)) == isinstance(theirs, type(value))
    assert repr(ours) == repr(theirs)
    assert unwrap_invariants([ours, (ours,)]) == dali_capture.unwrap_invariants([theirs,
                                                                                 (theirs,)])
    for probe in (lambda x: hash(x), lambda x: len(x), lambda x: x + x, lambda x: bool(x)):
        try:
            want = ("ok", probe(theirs))
        except Exception as exc:  # noqa: BLE001 - the type is what is compared
            want = ("error", type(exc))
        try:
            got = ("ok", probe(ours))
        except Exception as exc:  # noqa: BLE001
            got = ("error", type(exc))
        assert got == want


# ------------------------------------------------------------------ random calls


def _random_run(jpeg_root, capture, touch):
    """uniform draws over two epochs with ``touch(k, rng)`` run after each batch's call;
    returns (values, captured flags, states read in the body, final state, give-backs per
    epoch)."""
    rng = ndd.random.RNG(seed=11)
    reader = ndd.readers.File(file_root=jpeg_root, pad_last_batch=True)
    values, flags, states, given_back = [], [], [], []
    k = 0
    for _ in range(2):
        for _ in reader.next_epoch(batch_size=4, capture=capture):
            x = ndd.random.uniform(batch_size=4, range=[0.0, 1.0], shape=[2], rng=rng)
            flags.append(_captured(x))
            values.append(np.asarray(ndd.as_tensor(x)))
            states.append(touch(k, rng))
            k += 1
        given_back.append(ndd.compile.report().respeculated if capture else 0)
    return values, flags, states, rng.get_state(), given_back


def test_reading_the_generator_state_in_the_body_keeps_the_replay(jpeg_root):
    eager = _random_run(jpeg_root, False, lambda k, rng: str(rng.state))
    cap = _random_run(jpeg_root, True, lambda k, rng: str(rng.state))
    assert cap[1] == [True] * 6
    assert cap[4] == [0, 0]                             # nothing was given back
    for a, b in zip(eager[0], cap[0]):
        np.testing.assert_array_equal(a, b)
    assert eager[2] == cap[2] and eager[3] == cap[3]    # the states the body read, and after


@pytest.mark.parametrize("kind", ["same state", "other state", "reseed", "bare draw"])
def test_touching_the_generator_in_the_body_keeps_the_eager_stream(jpeg_root, kind):
    saved = ndd.random.RNG(seed=99).get_state()

    def touch(k, rng):
        if k == 1:
            if kind == "same state":
                rng.state = rng.state
            elif kind == "other state":
                rng.set_state(saved)
            elif kind == "reseed":
                rng.seed = 5
            else:
                rng()
        return None

    eager = _random_run(jpeg_root, False, touch)
    cap = _random_run(jpeg_root, True, touch)
    for a, b in zip(eager[0], cap[0]):
        np.testing.assert_array_equal(a, b)
    assert eager[3] == cap[3]
    # the change is seen when batch 1 ends (the generator is not where the next early draw
    # expects it): those draws are dropped and batch 2 is prefetched again, from the
    # generator as it is, so every call still replays
    assert cap[1] == [True] * 6
    assert cap[4] == ([0, 0] if kind == "same state" else [1, 0])


def test_a_marked_array_input_replays_while_its_contents_stay_the_same(jpeg_root):
    def run(capture, make):
        reader = ndd.readers.File(file_root=jpeg_root, pad_last_batch=True)
        out = []
        for k, (jpegs, _) in enumerate(reader.next_epoch(batch_size=4, capture=capture)):
            imgs = ndd.resize(ndd.decoders.image(jpegs), size=[6, 6])
            shifted = imgs - make(k)        # a new array in every iteration
            out.append((_captured(shifted), _arrays(shifted)))
        return out

    def offset(k):
        return np.full((1, 1, 3), 3 if k < 2 else 4, np.uint8)

    eager = run(False, offset)
    marked = run(True, lambda k: ndd.capture.invariant(offset(k)))
    fresh = run(True, offset)
    # marked: equal contents replay; the changed contents (k = 2) run eagerly
    assert [c for c, _ in marked] == [True, True, False]
    assert [c for c, _ in fresh] == [False, False, False]     # unmarked: never replayed
    for (_, a), (_, b), (_, c) in zip(eager, marked, fresh):
        for x, y, z in zip(a, b, c):
            np.testing.assert_array_equal(x, y)
            np.testing.assert_array_equal(x, z)


def _capture_flags(api, root):
    """Which results of a body are captured, per iteration, under ``api`` (ndd or DALI's
    dynamic mode): reader outputs, literal arguments, a helper called twice, a stale input,
    and a call skipped on odd iterations."""
    def flip(x):
        return api.flip(x, horizontal=1)

    reader = api.readers.File(file_root=root, pad_last_batch=True)
    flags, prev = [], None
    for i, (jpegs, labels) in enumerate(reader.next_epoch(batch_size=2, capture=True)):
        imgs = api.decoders.image(jpegs)
        once = flip(imgs)
        twice = flip(once)
        small = api.resize(imgs, size=[8, 8])
        stale = api.resize(prev if prev is not None else imgs, size=[8, 8])
        maybe = api.flip(imgs, vertical=1) if i % 2 == 0 else imgs
        after = api.resize(maybe, size=[6, 6])
        flags.append(tuple(_captured(x) for x in (jpegs, labels, imgs, once, twice, small,
                                                  stale, after)))
        prev = imgs
    return flags


@pytest.mark.oracle
def test_what_is_captured_agrees_with_dali(jpeg_root):
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    want = _capture_flags(dali, jpeg_root)
    got = _capture_flags(ndd, jpeg_root)
    assert got == want
    assert got[0] == (True,) * 8 and got[1][6:] == (False, False)     # stale; flip skipped


def _rule_errors(api, root):
    """(type, message) of DALI's three capture-mode rules under ``api``."""
    out = []

    def attempt(fn):
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - the error is what is compared
            out.append((type(exc), str(exc)))
        else:
            out.append((None, ""))

    reader = api.readers.File(file_root=root)
    attempt(lambda: next(iter(reader.next_epoch(capture=True))))
    for _ in reader.next_epoch(batch_size=2):
        break
    attempt(lambda: next(iter(reader.next_epoch(batch_size=2, capture=True))))
    reader = api.readers.File(file_root=root)
    for jpegs, _ in reader.next_epoch(batch_size=2, capture=True):
        api.decoders.image(jpegs)
        break
    attempt(lambda: next(iter(reader.next_epoch(batch_size=2))))
    return out


@pytest.mark.oracle
def test_rule_errors_agree_with_dali(jpeg_root):
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    want = _rule_errors(dali, jpeg_root)
    got = _rule_errors(ndd, jpeg_root)
    words = ["requires a non-None batch_size", "cannot switch to capture mode",
             "cannot switch to eager mode"]
    assert [t for t, _ in got] == [t for t, _ in want] == [ValueError, RuntimeError,
                                                           RuntimeError]
    for (_, ours), (_, theirs), w in zip(got, want, words):
        assert w in theirs and w in ours


def test_a_random_call_following_the_readers_batch_size_is_learned_at_the_short_batch(
        jpeg_root):
    def run(capture):
        rng = ndd.random.RNG(seed=8)
        reader = ndd.readers.File(file_root=jpeg_root)
        out = []
        for _ in range(2):
            for jpegs, _ in reader.next_epoch(batch_size=4, capture=capture):
                x = ndd.random.uniform(batch_size=jpegs.batch_size, shape=[2], rng=rng)
                out.append((jpegs.batch_size, _captured(x), np.asarray(ndd.as_tensor(x))))
        return out, rng.get_state()
    (eager, eager_state), (cap, cap_state) = run(False), run(True)
    assert [n for n, _, _ in cap] == [4, 4, 2] * 2
    # the first short batch runs eagerly (prepared with the traced size), the next replays
    assert [c for _, c, _ in cap] == [True, True, False, True, True, True]
    for (n, _, a), (_, _, b) in zip(eager, cap):
        assert a.shape == (n, 2)
        np.testing.assert_array_equal(a, b)
    assert eager_state == cap_state
