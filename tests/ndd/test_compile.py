"""Compile mode (``next_epoch(compile=True)``): replay equals eager, and DALI's rules hold."""
from __future__ import annotations

import gc
import io
import threading
import time
import warnings

import numpy as np
import pytest
import torch
from PIL import Image

import ndd
from compiler.ir import Value
# internal on purpose: no compile-mode context may outlive its loop, which no public name shows
from ndd._capture_state import current_capture

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


@pytest.fixture(scope="module")
def photo_root(tmp_path_factory):
    """3 classes x 7 JPEGs cut from real photos (skimage), odd sizes."""
    from skimage import data
    root = tmp_path_factory.mktemp("photos")
    sources = {"astronaut": data.astronaut(), "chelsea": data.chelsea(), "coffee": data.coffee()}
    rng = np.random.default_rng(0)
    for name, img in sources.items():
        (root / name).mkdir()
        for k in range(7):
            h, w = int(rng.integers(60, 120)), int(rng.integers(60, 120))
            y, x = int(rng.integers(0, img.shape[0] - h)), int(rng.integers(0, img.shape[1] - w))
            buf = io.BytesIO()
            Image.fromarray(img[y:y + h, x:x + w]).save(buf, "JPEG", quality=85)
            (root / name / f"{k}.jpg").write_bytes(buf.getvalue())
    return str(root)


def _train_body(jpegs, labels):
    imgs = ndd.decoders.image(jpegs)
    imgs = ndd.random_resized_crop(imgs, size=(32, 32))
    flip = ndd.random.coin_flip(batch_size=jpegs.batch_size, probability=0.5)
    out = ndd.crop_mirror_normalize(imgs, mirror=flip, mean=MEAN, std=STD)
    return out.torch().clone(), labels.torch().clone()


def _val_body(jpegs, labels):
    imgs = ndd.decoders.image(jpegs)
    imgs = ndd.resize(imgs, resize_shorter=40)
    out = ndd.crop_mirror_normalize(imgs, crop=(32, 32), mean=MEAN, std=STD)
    return out.torch().clone(), labels.torch().clone()


def _run(root, body, compile, epochs=3, batch_size=4, seed=5, **reader_args):
    ndd.random.set_seed(seed)
    reader = ndd.readers.File(file_root=root, random_shuffle=True, seed=11, **reader_args)
    out = []
    for _ in range(epochs):
        for jpegs, labels in reader.next_epoch(batch_size=batch_size, compile=compile):
            out.append(body(jpegs, labels))
    return out


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        for p, q in zip(x, y):
            assert p.shape == q.shape and torch.equal(p, q)


@pytest.mark.parametrize("body", [_train_body, _val_body], ids=["train", "val"])
def test_compiled_epochs_equal_eager(photo_root, body):
    eager = _run(photo_root, body, compile=False)
    compiled = _run(photo_root, body, compile=True)
    _same(eager, compiled)
    rep = ndd.compile.report()
    assert rep.replayed > 0 and not rep.fallbacks


def test_capture_alias_and_sharding_padding(photo_root):
    args = dict(shard_id=1, num_shards=2, pad_last_batch=True)
    eager = _run(photo_root, _val_body, compile=False, epochs=3, batch_size=4, **args)
    ndd.random.set_seed(5)
    reader = ndd.readers.File(file_root=photo_root, random_shuffle=True, seed=11, **args)
    compiled = []
    for _ in range(3):
        for jpegs, labels in reader.next_epoch(batch_size=4, capture=True):
            compiled.append(_val_body(jpegs, labels))
    _same(eager, compiled)


def test_partial_capture_with_data_dependent_python(photo_root):
    def body(jpegs, labels):
        imgs = ndd.decoders.image(jpegs)
        imgs = ndd.resize(imgs, size=(24, 24))
        lab = labels.torch()
        if int(lab[0]) % 2 == 0:         # data-dependent branch: not always in the trace
            imgs = ndd.flip(imgs, horizontal=1)
        out = ndd.cast(imgs, dtype=ndd.float32) * 0.5
        return out.torch().clone(), lab.clone()
    _same(_run(photo_root, body, False), _run(photo_root, body, True))


def _helper(images, k):
    return ndd.resize(images, size=(k, k))


def test_helper_called_from_two_call_sites(photo_root):
    def body(jpegs, labels):
        imgs = ndd.decoders.image(jpegs)
        a = _helper(imgs, 20)
        b = _helper(imgs, 12)
        return a.torch(pad=True).clone(), b.torch(pad=True).clone()
    _same(_run(photo_root, body, False), _run(photo_root, body, True))
    assert not ndd.compile.report().fallbacks


def test_call_site_in_python_loop(photo_root):
    def body(jpegs, labels):
        imgs = ndd.decoders.image(jpegs)
        outs = []
        for k in (16, 18, 20):          # same line, three occurrences per iteration
            outs.append(ndd.resize(imgs, size=(k, k)).torch().clone())
        return tuple(outs)
    _same(_run(photo_root, body, False), _run(photo_root, body, True))


def test_fresh_array_falls_back_unless_invariant(photo_root):
    def body(jpegs, labels):
        imgs = ndd.cast(ndd.decoders.image(jpegs), dtype=ndd.float32)
        offset = ndd.as_tensor(np.float32(3.0))        # built by Python every iteration
        return ((imgs + offset).torch(pad=True).clone(),)
    _run(photo_root, body, True, epochs=1)
    rep = ndd.compile.report()
    assert any("fresh array" in reason or "not the traced one" in reason
               for (_, reason) in rep.fallbacks)

    const = ndd.compile.invariant(ndd.as_tensor(np.float32(3.0)))

    def body2(jpegs, labels):
        imgs = ndd.cast(ndd.decoders.image(jpegs), dtype=ndd.float32)
        return ((imgs + const).torch(pad=True).clone(),)
    a = _run(photo_root, body2, False, epochs=1)
    b = _run(photo_root, body2, True, epochs=1)
    _same(a, b)
    assert not ndd.compile.report().fallbacks


SCALE = [2.0]


def test_guard_failure_on_changed_constant_runs_eagerly(photo_root):
    def body(jpegs, labels):
        imgs = ndd.decoders.image(jpegs)
        out = ndd.crop_mirror_normalize(imgs, crop=(16, 16), scale=SCALE[0])
        SCALE[0] += 1.0                      # the argument changes every iteration
        return (out.torch().clone(),)
    SCALE[0] = 2.0
    a = _run(photo_root, body, False, epochs=1)
    SCALE[0] = 2.0
    b = _run(photo_root, body, True, epochs=1)
    _same(a, b)
    assert any("guard failed" in reason for (_, reason) in ndd.compile.report().fallbacks)


def test_rules(photo_root):
    reader = ndd.readers.File(file_root=photo_root)
    with pytest.raises(ValueError, match="batch_size"):
        reader.next_epoch(compile=True)
    for _ in reader.next_epoch(batch_size=4):
        pass
    with pytest.raises(RuntimeError, match="compile"):
        reader.next_epoch(batch_size=4, compile=True)

    reader = ndd.readers.File(file_root=photo_root)
    with pytest.warns(RuntimeWarning, match="no replayable ndd calls"):
        for _ in reader.next_epoch(batch_size=4, compile=True):
            pass
    # nothing was captured: as in DALI 2.4 (test_capture_empty_graph), the reader is back to
    # no mode, so an eager epoch may follow (all 21 photos), and then it is an eager reader
    assert sum(j.batch_size for j, _ in reader.next_epoch(batch_size=4)) == 21
    with pytest.raises(RuntimeError, match="cannot switch to compiled mode"):
        reader.next_epoch(batch_size=4, compile=True)
    with pytest.raises(ValueError, match="batch_size=4; the batch size cannot change"):
        for _ in reader.next_epoch(batch_size=8):
            pass
    reader = ndd.readers.File(file_root=photo_root)
    for jpegs, _ in reader.next_epoch(batch_size=4, compile=True):
        ndd.decoders.image(jpegs)
    with pytest.raises(RuntimeError, match="cannot switch to non-compiled mode"):
        reader.next_epoch(batch_size=4)
    with pytest.raises(ValueError, match="batch_size=4; the batch size cannot change"):
        for _ in reader.next_epoch(batch_size=8, compile=True):
            pass

    reader = ndd.readers.File(file_root=photo_root, enable_checkpointing=True)
    with pytest.raises(NotImplementedError, match="checkpointing"):
        reader.next_epoch(batch_size=4, compile=True)


def test_empty_trace_warns_and_falls_back(photo_root):
    reader = ndd.readers.File(file_root=photo_root)
    n = 0
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for jpegs, labels in reader.next_epoch(batch_size=4, compile=True):
            n += jpegs.batch_size
    assert n == 21
    assert any("no replayable" in str(x.message) for x in w)


def test_break_shuts_down_prefetch_worker(photo_root):
    reader = ndd.readers.File(file_root=photo_root)
    for _ in range(2):   # trace, then a replaying epoch that is left early
        it = reader.next_epoch(batch_size=2, compile=True)
        for k, (jpegs, labels) in enumerate(it):
            ndd.decoders.image(jpegs).evaluate()
            if k == 2:
                break
        it.close()
        reader._core.close()
        reader = ndd.readers.File(file_root=photo_root)
    gc.collect()
    alive = [t for t in threading.enumerate() if t.name == "ndd-compile-prefetch"]
    for t in alive:
        t.join(timeout=5)
    assert not any(t.is_alive() for t in alive)


@pytest.mark.parametrize("queue_depth", [1, 2])
def test_break_gives_back_the_seeds_of_unused_batches(photo_root, queue_depth):
    # the prefetcher draws seeds ahead; an epoch left early hands back those of the batches the
    # body never got, so the generator (explicit or default) and the next epoch are eager's
    def run(compile):
        ndd.random.set_seed(9)
        rng = ndd.random.RNG(seed=3)
        reader = ndd.readers.File(file_root=photo_root, random_shuffle=True, seed=2)
        outs = []
        for epoch, stop in ((0, None), (1, 2), (2, None)):   # trace, leave early, full
            kw = {"queue_depth": queue_depth} if compile else {}
            it = reader.next_epoch(batch_size=3, compile=compile, **kw)
            for k, (jpegs, _) in enumerate(it):
                imgs = ndd.random_resized_crop(ndd.decoders.image(jpegs), size=(16, 16),
                                               rng=rng)
                flip = ndd.random.coin_flip(batch_size=jpegs.batch_size, probability=0.5)
                outs.append(ndd.crop_mirror_normalize(imgs, mirror=flip).torch().clone())
                if k == stop:
                    break
            it.close()
        return outs, rng.get_state(), ndd.random.get_default_rng().get_state()
    eager, compiled = run(False), run(True)
    assert len(eager[0]) == len(compiled[0]) == 7 + 3 + 7
    _same(eager[0], compiled[0])
    assert eager[1] == compiled[1] and eager[2] == compiled[2]


def test_compiled_epochs_in_turn_raise_and_nested_ones_replay(photo_root):
    # two compiled epochs advanced in turn (zip) would mix their traces: a clear error; a
    # compiled loop inside another compiled loop's body is fine (its own trace) and equals eager
    ra = ndd.readers.File(file_root=photo_root)
    rb = ndd.readers.File(file_root=photo_root)
    with pytest.raises(RuntimeError, match="another compiled epoch was advanced"):
        for (ja, _), (jb, _) in zip(ra.next_epoch(batch_size=2, compile=True),
                                    rb.next_epoch(batch_size=2, compile=True)):
            ndd.decoders.image(ja).evaluate()
            ndd.decoders.image(jb).evaluate()
    assert current_capture() is None

    def nested(compile):
        ndd.random.set_seed(4)
        outer = ndd.readers.File(file_root=photo_root, random_shuffle=True, seed=1)
        inner = ndd.readers.File(file_root=photo_root)
        outs = []
        for _ in range(2):
            for k, (jpegs, labels) in enumerate(outer.next_epoch(batch_size=4,
                                                                 compile=compile)):
                outs.append(_train_body(jpegs, labels))
                if k == 1:      # a validation pass inside the training loop
                    for vj, vl in inner.next_epoch(batch_size=5, compile=compile):
                        outs.append(_val_body(vj, vl))
        return outs
    _same(nested(False), nested(True))


def test_an_abandoned_compiled_epoch_closed_later_leaves_another_alone(photo_root):
    # a compiled epoch left suspended (e.g. an exception kept its frame alive) and closed in
    # the middle of another compiled loop (e.g. by the garbage collector): the running loop
    # keeps replaying and equals eager

    def run(compile, abandoned):
        ndd.random.set_seed(6)
        reader = ndd.readers.File(file_root=photo_root, random_shuffle=True, seed=3)
        outs = []
        for _ in range(2):
            for k, (jpegs, labels) in enumerate(reader.next_epoch(batch_size=4,
                                                                  compile=compile)):
                outs.append(_train_body(jpegs, labels))
                if k == 1 and abandoned is not None:
                    abandoned.close()
        return outs
    other = ndd.readers.File(file_root=photo_root).next_epoch(batch_size=2, compile=True)
    next(other)                 # traced batch handed out; the loop body never finishes
    compiled = run(True, other)
    assert current_capture() is None
    _same(run(False, None), compiled)


def test_new_generators_between_epochs_are_used(photo_root):
    # set_seed before every epoch (a new default generator), or a new RNG object per epoch:
    # replay draws from this epoch's generators (or falls back to eager), equal to eager
    def run(compile, fresh_rng):
        reader = ndd.readers.File(file_root=photo_root, random_shuffle=True, seed=8)
        outs, states = [], []
        for epoch in range(3):
            ndd.random.set_seed(100 + epoch)
            rng = ndd.random.RNG(seed=epoch) if fresh_rng else None
            for jpegs, _ in reader.next_epoch(batch_size=4, compile=compile):
                imgs = ndd.random_resized_crop(ndd.decoders.image(jpegs), size=(16, 16),
                                               rng=rng)
                flip = ndd.random.coin_flip(batch_size=jpegs.batch_size, probability=0.5)
                outs.append(ndd.crop_mirror_normalize(imgs, mirror=flip).torch().clone())
            states.append(ndd.random.get_default_rng().get_state())
            if rng is not None:
                states.append(rng.get_state())
        return outs, states
    for fresh_rng in (False, True):
        eager, compiled = run(False, fresh_rng), run(True, fresh_rng)
        _same([(t,) for t in eager[0]], [(t,) for t in compiled[0]])
        assert eager[1] == compiled[1]


def test_epoch_finalised_on_another_thread_leaves_no_context(photo_root):
    # an abandoned replaying epoch in a reference cycle, collected by the garbage collector on
    # another thread: its context leaves the stack of the thread that ran the loop
    reader = ndd.readers.File(file_root=photo_root)

    class Holder:
        pass
    gc.collect()
    gc.disable()            # collected below, on the other thread, not here by chance
    try:
        _abandon_in_a_cycle(reader, Holder)
        worker = threading.Thread(target=gc.collect)
        worker.start()
        worker.join()
    finally:
        gc.enable()
    assert current_capture() is None


def _abandon_in_a_cycle(reader, Holder):
    for stop in (None, 1):
        holder = Holder()
        holder.cycle = holder
        holder.it = reader.next_epoch(batch_size=4, compile=True)
        for k, (jpegs, labels) in enumerate(holder.it):
            _train_body(jpegs, labels)
            if k == stop:
                break
        del holder


def _random_stream_run(photo_root, compile, body, epochs=3, stop=None):
    """outputs and final generator states of ``body(k, jpegs, rng, outs)`` over epochs"""
    ndd.random.set_seed(21)
    rng = ndd.random.RNG(seed=5)
    reader = ndd.readers.File(file_root=photo_root, random_shuffle=True, seed=4)
    outs = []
    for epoch in range(epochs):
        it = reader.next_epoch(batch_size=3, compile=compile)
        for k, (jpegs, _) in enumerate(it):
            body(epoch, k, jpegs, rng, outs)
            if stop is not None and (epoch, k) == stop:
                break
        outs.append(("draw after the loop", ndd.random.uniform(batch_size=2, rng=rng)
                     .torch().clone()))
        it.close()
    return outs, rng.get_state(), ndd.random.get_default_rng().get_state()


def _rrc_flip(jpegs, rng):
    imgs = ndd.random_resized_crop(ndd.decoders.image(jpegs), size=(16, 16), rng=rng)
    flip = ndd.random.coin_flip(batch_size=jpegs.batch_size, probability=0.5)
    return ndd.crop_mirror_normalize(imgs, mirror=flip).torch().clone()


def _skip_some(epoch, k, jpegs, rng, outs):
    if (epoch + k) % 3 == 2:        # data-dependent Python: no random call on this batch
        outs.append(("skipped", ndd.decoders.image(jpegs).tensors[0].torch().clone()))
        return
    outs.append(("full", _rrc_flip(jpegs, rng)))


def _extra_draws(epoch, k, jpegs, rng, outs):
    outs.append(("full", _rrc_flip(jpegs, rng)))
    if k == 1:                      # random calls the trace does not have, same generators
        outs.append(("rng()", torch.tensor([rng()])))
        outs.append(("uniform", ndd.random.uniform(batch_size=2).torch().clone()))


def _only_flip_sometimes(epoch, k, jpegs, rng, outs):
    # the traced order is rrc (rng) then coin flip (default); here rrc is skipped on some
    # batches while the coin flip still runs
    if k % 2 == 0:
        outs.append(("full", _rrc_flip(jpegs, rng)))
    else:
        outs.append(("flip", ndd.random.coin_flip(batch_size=jpegs.batch_size,
                                                  probability=0.5).torch().clone()))


def _draw_every_batch(epoch, k, jpegs, rng, outs):
    outs.append(("full", _rrc_flip(jpegs, rng)))
    outs.append(("rng()", torch.tensor([rng()])))      # a give-back on every batch


@pytest.mark.parametrize("body", [_skip_some, _extra_draws, _only_flip_sometimes,
                                  _draw_every_batch],
                         ids=["skipped", "extra", "reordered", "every-batch"])
def test_random_calls_that_differ_from_the_trace_keep_the_eager_stream(photo_root, body):
    # seeds drawn ahead are given back whenever the body's random calls differ from the
    # trace (skipped, added, partly skipped) or a generator is used elsewhere; the stream of
    # every generator, and so every output, equals eager execution
    eager = _random_stream_run(photo_root, False, body)
    compiled = _random_stream_run(photo_root, True, body)
    assert [o[0] for o in eager[0]] == [o[0] for o in compiled[0]]
    for (_, a), (_, b) in zip(eager[0], compiled[0]):
        assert torch.equal(a, b)
    assert eager[1:] == compiled[1:]
    assert ndd.compile.report().respeculated > 0 or body is _skip_some


def _batch_sizes_of_their_own(epoch, k, jpegs, rng, outs):
    outs.append(("full", _rrc_flip(jpegs, rng)))
    outs.append(("two", ndd.random.uniform(batch_size=2, rng=rng).torch().clone()))
    outs.append(("tensor", ndd.random.uniform(rng=rng).torch().clone().reshape(1)))
    outs.append(("views", ndd.random.coin_flip(batch_size=2 * jpegs.batch_size,
                                               rng=rng).torch().clone()))
    outs.append(("fixed", ndd.random.normal(batch_size=4).torch().clone()))


def test_random_calls_with_their_own_batch_size_replay_like_eager(photo_root):
    """A random op whose batch size is not the reader's (a constant, a Tensor, twice the
    reader's) gets that many samples and seeds, as in eager; ``batch_size=4`` against a short
    last batch (21 photos, batches of 3 and 4) too."""
    eager = _random_stream_run(photo_root, False, _batch_sizes_of_their_own)
    compiled = _random_stream_run(photo_root, True, _batch_sizes_of_their_own)
    assert [o[0] for o in eager[0]] == [o[0] for o in compiled[0]]
    for (_, a), (_, b) in zip(eager[0], compiled[0]):
        assert a.shape == b.shape and torch.equal(a, b)
    assert eager[1:] == compiled[1:]
    assert ndd.compile.report().replayed > 0

    def hard_coded(compile):
        ndd.random.set_seed(3)
        reader = ndd.readers.File(file_root=photo_root)
        got = []
        for jpegs, _ in reader.next_epoch(batch_size=4, compile=compile):
            flips = ndd.random.coin_flip(batch_size=4)          # 4 also for the last batch
            got.append(flips.torch().clone())
            got.append(ndd.random.uniform(batch_size=jpegs.batch_size).torch().clone())
        return got
    a, b = hard_coded(False), hard_coded(True)
    assert [x.shape for x in a] == [x.shape for x in b] and a[-2].shape == (4,)
    assert all(torch.equal(x, y) for x, y in zip(a, b))


def _with_a_corrupt_file(tmp_path):
    """Sorted: 0 1 | 2 2x | 3 4 | 5 (batches of 2); 0 and 1 are 100x100, the others 50x50,
    2x.jpg is not an image."""
    from skimage import data
    root = tmp_path / "bad"
    (root / "a").mkdir(parents=True)
    photo = data.coffee()
    for k in range(6):
        side = 100 if k < 2 else 50
        buf = io.BytesIO()
        Image.fromarray(photo[10 * k:10 * k + side, 20 * k:20 * k + side]).save(buf, "JPEG")
        (root / "a" / f"{k}.jpg").write_bytes(buf.getvalue())
    (root / "a" / "2x.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    return str(root)


def test_an_error_of_a_replayed_batch_is_raised_inside_the_body(photo_root, tmp_path):
    """A corrupt file in a later batch: the error comes from the consuming call in the body
    (where a try can catch it, as in eager), and the epoch goes on; a value the body does not
    consume on that batch raises nothing."""
    root = _with_a_corrupt_file(tmp_path)

    def run(compile):
        reader = ndd.readers.File(file_root=root)
        got = []
        for epoch in range(2):
            for k, (jpegs, _) in enumerate(reader.next_epoch(batch_size=2, compile=compile)):
                imgs = ndd.decoders.image(jpegs)
                small = ndd.resize(imgs, size=(8, 8))
                preview = ndd.crop(imgs, crop=(80, 80))   # fits batch 0 only
                if epoch == 0 and k == 0:
                    preview.evaluate()                     # consumed on the traced batch only
                try:
                    got.append((k, small.torch().clone()))
                except ValueError as exc:                  # DecodeError is a ValueError
                    got.append((k, str(exc)))
                try:        # fused with the decode; fits batch 0 only
                    got.append((k, ndd.crop(imgs, crop=(60, 60)).torch().clone()))
                except ValueError as exc:
                    got.append((k, f"{type(exc).__name__}: {exc}"))
        return got
    eager, compiled = run(False), run(True)
    assert [k for k, _ in eager] == [k for k, _ in compiled] == [0, 0, 1, 1, 2, 2, 3, 3] * 2
    for (_, a), (_, b) in zip(eager, compiled):
        if isinstance(a, str):      # the same op, sample, type and message as eager
            assert a == b
        else:
            assert torch.equal(a, b)
    errors = [a for _, a in compiled if isinstance(a, str)]
    assert len(errors) == 8
    assert sum("decoders.image (called at" in a and "2x.jpg" in a for a in errors) == 4
    assert sum(a.startswith("ValueError: crop (called at") for a in errors) == 4


def test_a_failed_batch_with_merged_and_fused_calls_gives_eagers_values_and_errors(tmp_path):
    """Two call sites computing the same thing (merged by CSE), fused chains, and a call that
    always fails (integer division by zero): on every batch the valid values are eager's and
    each failing one raises eager's error."""
    root = _with_a_corrupt_file(tmp_path)

    def run(compile):
        reader = ndd.readers.File(file_root=root)
        got = []
        for k, (jpegs, _) in enumerate(reader.next_epoch(batch_size=2, compile=compile)):
            one = ndd.resize(ndd.decoders.image(jpegs), size=(8, 8))
            two = ndd.flip(ndd.resize(ndd.decoders.image(jpegs), size=(8, 8)))
            x = ndd.cast(one, dtype=ndd.int32)
            for name, v in (("one", one), ("two", two), ("a", 255 / (x + 1)),
                            ("b", ndd.math.log(x + 1)), ("bad", x // 0)):
                try:
                    got.append((k, name, v.torch().clone()))
                except (ValueError, RuntimeError) as exc:
                    got.append((k, name, f"{type(exc).__name__}: {exc}"))
        return got
    eager, compiled = run(False), run(True)
    assert [g[:2] for g in eager] == [g[:2] for g in compiled]
    for a, b in zip(eager, compiled):
        assert (a[2] == b[2]) if isinstance(a[2], str) else torch.equal(a[2], b[2])
    assert all(isinstance(g[2], str) for g in compiled if g[1] == "bad")
    assert any(not isinstance(g[2], str) for g in compiled if g[0] > 0 and g[1] == "a")


def test_a_replayed_error_is_raised_at_the_call_in_sync_mode(tmp_path):
    root = _with_a_corrupt_file(tmp_path)

    def run(compile):
        reader = ndd.readers.File(file_root=root)
        got = []
        with ndd.EvalMode.sync_cpu:
            for k, (jpegs, _) in enumerate(reader.next_epoch(batch_size=2, compile=compile)):
                try:
                    out = ndd.resize(ndd.decoders.image(jpegs), size=(8, 8))
                except ValueError as exc:
                    got.append((k, "at the call", str(exc)))
                    continue
                got.append((k, "ok", out.torch().clone()))
        return got
    eager, compiled = run(False), run(True)
    assert [g[:2] for g in eager] == [g[:2] for g in compiled]
    assert [g[1] for g in compiled].count("at the call") == 1
    for a, b in zip(eager, compiled):
        assert (a[2] == b[2]) if isinstance(a[2], str) else torch.equal(a[2], b[2])


def test_another_thread_drawing_from_the_loops_generator(photo_root):
    # a background thread drawing from the generator the compiled loop uses: no deadlock, no
    # lost batch, and none of its draws undone (no 63-bit seed comes twice)
    rng = ndd.random.RNG(seed=2)
    stop = threading.Event()
    drawn = []

    def hammer():
        while not stop.is_set():
            drawn.append(rng.draw(1)[0])
    worker = threading.Thread(target=hammer, daemon=True)
    worker.start()
    try:
        reader = ndd.readers.File(file_root=photo_root)
        counts = []
        for _ in range(3):
            n = 0
            for jpegs, _ in reader.next_epoch(batch_size=2, compile=True):
                _rrc_flip(jpegs, rng)
                n += jpegs.batch_size
            counts.append(n)
    finally:
        stop.set()
        worker.join(timeout=30)
    assert counts == [21, 21, 21] and not worker.is_alive()
    assert len(drawn) > 100 and len(set(drawn)) == len(drawn)


def test_draws_between_break_and_close_keep_the_eager_stream(photo_root):
    def body(epoch, k, jpegs, rng, outs):
        outs.append(("full", _rrc_flip(jpegs, rng)))
    for stop in ((1, 0), (1, 2)):
        eager = _random_stream_run(photo_root, False, body, stop=stop)
        compiled = _random_stream_run(photo_root, True, body, stop=stop)
        for (_, a), (_, b) in zip(eager[0], compiled[0]):
            assert torch.equal(a, b)
        assert len(eager[0]) == len(compiled[0]) and eager[1:] == compiled[1:]


@pytest.mark.parametrize("queue_depth", [1, 8])
def test_dropped_epoch_counts_only_the_batches_the_body_got(photo_root, queue_depth):
    # break without close(): the next next_epoch raises DALI's "not fully consumed" error
    # with the samples the body got, as eager does, even when the prefetcher read ahead to
    # the end of the epoch; close() then ends it
    import re
    messages = []
    for compile in (False, True):
        reader = ndd.readers.File(file_root=photo_root)
        kw = {"queue_depth": queue_depth} if compile else {}
        for epoch in range(2):      # the trace, then a replaying epoch
            it = reader.next_epoch(batch_size=3, compile=compile, **kw)
            for k, (jpegs, _) in enumerate(it):
                ndd.decoders.image(jpegs).evaluate()
                if k == 1:
                    break
            if epoch == 0:
                it.close()
        time.sleep(0.2)     # the prefetcher reads ahead meanwhile
        with pytest.raises(RuntimeError, match="not fully consumed") as exc:
            reader.next_epoch(batch_size=3, compile=compile)    # the iterator still alive
        messages.append(re.search(r"\(\d+ of \d+ samples read\)", str(exc.value)).group(0))
        del it, jpegs
        gc.collect()
        with pytest.raises(RuntimeError, match="not fully consumed") as exc:
            reader.next_epoch(batch_size=3, compile=compile)    # dropped
        messages.append(re.search(r"\(\d+ of \d+ samples read\)", str(exc.value)).group(0))
        reader._core.close()
        assert sum(1 for _ in reader.next_epoch(batch_size=3, compile=compile)) == 7
    assert messages == ["(6 of 21 samples read)"] * 4


def test_device_change_of_captured_op_raises(photo_root):
    dev = ["cpu"]

    def body(jpegs, labels):
        imgs = ndd.decoders.image(jpegs, device=dev[0])
        dev[0] = "gpu"
        return (imgs.torch(pad=True),)
    with pytest.raises(RuntimeError, match="gpu|device"):
        _run(photo_root, body, True, epochs=1)


def test_memory_flat_over_20_epochs(photo_root):
    ndd.random.set_seed(1)
    reader = ndd.readers.File(file_root=photo_root, random_shuffle=True, seed=2)

    def count_values():
        gc.collect()
        return sum(1 for o in gc.get_objects() if type(o) is Value)
    counts = []
    for epoch in range(20):
        for jpegs, labels in reader.next_epoch(batch_size=4, compile=True):
            _train_body(jpegs, labels)
        del jpegs, labels
        if epoch in (4, 19):
            counts.append(count_values())
    assert counts[1] <= counts[0] + 10, counts


def _epoch_fn(reader):
    out = []
    for jpegs, labels in reader.next_epoch(batch_size=4, compile=True):
        out.append(_val_body(jpegs, labels))
    return out


def test_loop_called_from_different_lines_still_replays(photo_root):
    """Call-site keys stop at the frame running the loop: what called that frame does not
    matter (the trace is made from one line, later epochs run from another)."""
    ndd.random.set_seed(5)
    reader = ndd.readers.File(file_root=photo_root, random_shuffle=True, seed=11)
    first = _epoch_fn(reader)
    second = _epoch_fn(reader)          # a different calling line than the traced epoch
    rep = ndd.compile.report()
    assert rep.replayed == 3 * len(second) and not rep.fallbacks   # 3 calls per batch
    eager = _run(photo_root, _val_body, compile=False, epochs=2)
    _same(eager, first + second)


def test_pipeline_code_inside_ndd_package_replays(photo_root):
    """`ndd bench` runs pipelines defined in the ndd package: their calls must still be keyed
    by their own lines (not skipped as library frames), and replay from any calling line."""
    from ndd.tools.bench import Runner
    from ndd.tools.bench_pipelines import PIPELINES
    r = Runner("compile", ndd, PIPELINES["val"], photo_root, 4, "compile")
    r.epoch()
    n, _ = r.epoch()
    rep = ndd.compile.report()
    assert n == 21 and rep.replayed > 0 and not rep.fallbacks


def test_explain_of_a_replayed_value_shows_the_loops_plan(photo_root):
    reader = ndd.readers.File(file_root=photo_root)
    texts = []
    for k, (jpegs, _) in enumerate(reader.next_epoch(batch_size=7, compile=True)):
        out = ndd.crop_mirror_normalize(ndd.resize(ndd.decoders.image(jpegs),
                                                   resize_shorter=40), crop=(32, 32))
        out.evaluate()
        texts.append(ndd.explain(out))
    assert "computed ahead of the loop body" not in texts[0]        # the traced batch
    for text in texts[1:]:
        assert text.startswith("%") and "computed ahead of the loop body" in text
        assert "== compiled" in text and "fused" in text and "test_compile.py" in text
    with ndd.EvalMode.deferred:
        x = ndd.flip(ndd.decoders.image(jpegs))
        x.evaluate()
    assert "already computed" in ndd.explain(x) and "ndd.explain()" in ndd.explain(x)


def test_numpy_scalar_operands_replay_while_type_and_value_hold(photo_root):
    """``np.float32(0.5) * x`` replays (a typed constant, compared every batch); an operand
    whose value changes from batch to batch runs eagerly; results equal eager."""
    def run(compile):
        reader = ndd.readers.File(file_root=photo_root)
        got = []
        for k, (jpegs, _) in enumerate(reader.next_epoch(batch_size=7, compile=compile)):
            x = ndd.resize(ndd.decoders.image(jpegs), size=(8, 8))
            y = np.float32(0.5) * x + np.int16(3)
            z = x * np.float32(k)                   # changes every batch
            got += [y.torch().clone(), z.torch().clone()]
        return got
    eager, compiled = run(False), run(True)
    assert all(a.dtype == b.dtype and torch.equal(a, b) for a, b in zip(eager, compiled))
    assert eager[0].dtype == torch.float32 and eager[1].dtype == torch.float32
    rep = ndd.compile.report()
    assert rep.replayed >= 2 * 3                    # resize, decode, y's two ops: batches 1, 2
    assert list(rep.fallbacks.values()) == [2]      # z on batches 1 and 2
    assert "numpy scalar operand" in str(list(rep.fallbacks)[0])
