"""ndd.ExternalSource: per-batch and per-sample sources, epochs, compile mode."""
import numpy as np
import pytest
import torch

import ndd


def _samples(n, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 255, (6 + k % 3, 5, 3), dtype=np.uint8) for k in range(n)]


def test_iterable_of_batches_and_layout():
    data = [np.zeros((3, 4, 4, 3), np.uint8), np.ones((2, 4, 4, 3), np.uint8)]
    src = ndd.ExternalSource(data, layout="HWC")
    got = list(src.next_epoch(batch_size=3))
    assert [b.batch_size for b in got] == [3, 2]
    assert got[0].layout == "HWC" and got[1].torch().sum().item() == 2 * 4 * 4 * 3
    again = list(src.next_epoch(batch_size=3))       # a list is re-iterated each epoch
    assert len(again) == 2


def test_per_sample_callable_groups_samples():
    data = _samples(7)

    def fetch(info):
        return data[info.idx_in_epoch], np.int32(info.idx_in_epoch)
    src = ndd.ExternalSource(fetch, batch=False, num_outputs=2, epoch_size=7, layout=("HWC", ""))
    batches = list(src.next_epoch(batch_size=3))
    assert [b[0].batch_size for b in batches] == [3, 3, 1]
    labels = [int(t.item()) for _, lab in batches for t in lab]
    assert labels == list(range(7))
    for (imgs, _), start in zip(batches, (0, 3, 6)):
        for k, t in enumerate(imgs):
            np.testing.assert_array_equal(np.asarray(t), data[start + k])


def test_errors():
    with pytest.raises(TypeError, match="callable or iterable"):
        ndd.ExternalSource(42)
    src = ndd.ExternalSource([(np.zeros((2, 2)),)], num_outputs=2)
    with pytest.raises(ValueError, match="tuple of 2"):
        list(src.next_epoch(batch_size=2))
    src = ndd.ExternalSource([np.zeros((4, 2))])
    with pytest.raises(ValueError, match="more than batch_size"):
        list(src.next_epoch(batch_size=2))
    src = ndd.ExternalSource(lambda info: np.zeros(2), batch=False, epoch_size=4)
    with pytest.raises(ValueError, match="batch_size"):
        src.next_epoch(compile=True)
    list(src.next_epoch(batch_size=2))
    with pytest.raises(ValueError, match="batch size cannot change"):
        src.next_epoch(batch_size=3)
    with pytest.raises(RuntimeError, match="compile"):
        src.next_epoch(batch_size=2, compile=True)


def test_compiled_equals_eager():
    data = _samples(10, seed=3)

    def run(compile):
        ndd.random.set_seed(4)
        src = ndd.ExternalSource(lambda info: data[info.idx_in_epoch], batch=False,
                                 epoch_size=10, layout="HWC")
        out = []
        for _ in range(2):
            for imgs in src.next_epoch(batch_size=4, compile=compile):
                x = ndd.resize(imgs, size=(8, 8))
                flip = ndd.random.coin_flip(batch_size=imgs.batch_size)
                y = ndd.crop_mirror_normalize(x, mirror=flip, mean=[100.0], std=[50.0])
                out.append(y.torch().clone())
        return out
    eager, compiled = run(False), run(True)
    assert len(eager) == len(compiled) == 6
    for a, b in zip(eager, compiled):
        assert torch.equal(a, b)
    assert ndd.compile.report().replayed > 0


def test_compiled_source_refilling_one_buffer_gives_each_batch_its_data():
    # compile mode calls the source ahead of the loop body: batches from a source that
    # refills one buffer are copied, so each batch keeps its values (as in eager mode)
    def run(compile):
        buf = np.zeros((3, 4, 4, 1), np.uint8)

        def source(info):
            if info.iteration >= 5:
                raise StopIteration
            buf[:] = info.iteration * 10 + info.epoch_idx
            return buf
        src = ndd.ExternalSource(source, batch=True, layout="HWC")
        outs = []
        for _ in range(2):
            for b in src.next_epoch(batch_size=3, compile=compile):
                outs.append(int((ndd.cast(b, dtype=ndd.float32) * 2).torch()[0, 0, 0, 0]))
        return outs
    assert run(True) == run(False) == [0, 20, 40, 60, 80, 2, 22, 42, 62, 82]


@pytest.mark.parametrize("compile", [False, True])
def test_leaving_an_epoch_early_keeps_it_open_until_closed_or_dropped(compile):
    """As eager: after ``break`` the held iterator's epoch is open (next_epoch raises) even
    when the compiled loop's prefetcher drew the source to its end; close() or dropping the
    iterator ends it."""
    import gc
    import time
    src = ndd.ExternalSource(lambda info: np.full((4,), info.idx_in_epoch, np.float32),
                             batch=False, epoch_size=20)
    kw = {"batch_size": 3, "compile": compile}
    if compile:
        kw["queue_depth"] = 8
    for x in src.next_epoch(**kw):            # a whole epoch (the trace)
        (x * 2).evaluate()
    for end in ("close", "drop"):
        it = src.next_epoch(**kw)
        for k, x in enumerate(it):
            (x * 2).evaluate()
            if k == 1:
                break
        time.sleep(0.2)                       # the prefetcher reads ahead meanwhile
        with pytest.raises(RuntimeError, match="must be consumed"):
            src.next_epoch(**kw)
        if end == "close":
            it.close()
        else:
            del it, x
            gc.collect()
        got = [np.asarray(t).copy() for x in src.next_epoch(**kw) for t in (x * 1).tensors]
        assert len(got) == 20 and got[0][0] == 0 and got[-1][0] == 19
