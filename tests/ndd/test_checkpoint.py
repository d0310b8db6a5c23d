"""Checkpoints restore readers and RNGs exactly where they were."""
import numpy as np
import pytest

import ndd


@pytest.fixture()
def folder(tmp_path):
    for c in ("a", "b"):
        (tmp_path / c).mkdir()
        for k in range(5):
            (tmp_path / c / f"{k}.jpg").write_bytes(bytes([ord(c), k]) * 3)
    return str(tmp_path)


def _contents(batch):
    return [bytes(np.asarray(t)) for t in batch]


def test_reader_and_rng_resume_exactly(folder, tmp_path):
    reader = ndd.readers.File(file_root=folder, random_shuffle=True, seed=3,
                              enable_checkpointing=True)
    rng = ndd.random.RNG(seed=9)
    ck = ndd.checkpoint.Checkpoint()
    ck.register(reader, "reader")
    ck.register(rng, "rng")
    it = reader.next_epoch(batch_size=3)
    next(it)
    ndd.random.uniform(batch_size=2, rng=rng).evaluate()
    ck.collect()
    path = ck.save(str(tmp_path / "ckpt_{seq:04d}.json"))
    assert path.endswith("ckpt_0000.json")
    expected_rest = [_contents(j) for j, _ in it]
    expected_rand = np.asarray(ndd.as_tensor(ndd.random.uniform(batch_size=4, rng=rng)))

    reader2 = ndd.readers.File(file_root=folder, random_shuffle=True, seed=3,
                               enable_checkpointing=True)
    rng2 = ndd.random.RNG()
    ck2 = ndd.checkpoint.Checkpoint()
    ck2.load(str(tmp_path / "ckpt_{seq:04d}.json"))
    ck2.register(reader2, "reader")
    ck2.register(rng2, "rng")
    got_rest = [_contents(j) for j, _ in reader2.next_epoch(batch_size=3)]
    assert got_rest == expected_rest
    got_rand = np.asarray(ndd.as_tensor(ndd.random.uniform(batch_size=4, rng=rng2)))
    np.testing.assert_array_equal(got_rand, expected_rand)


def test_register_errors(folder, tmp_path):
    reader = ndd.readers.File(file_root=folder)
    for _ in reader.next_epoch(batch_size=10):
        pass
    with pytest.raises(RuntimeError, match="enable_checkpointing"):
        ndd.checkpoint.Checkpoint().register(reader, "r")
    ck = ndd.checkpoint.Checkpoint()
    ck.register(ndd.random.RNG(1), "rng")
    ck.save(str(tmp_path / "c_{seq}.json"))
    ck2 = ndd.checkpoint.Checkpoint()
    ck2.load(str(tmp_path / "c_{seq}.json"))
    with pytest.raises(KeyError, match="other"):
        ck2.register(ndd.random.RNG(), "other")
    with pytest.raises(FileNotFoundError):
        ndd.checkpoint.Checkpoint().load(str(tmp_path / "none_{seq}.json"))
    assert ndd.checkpoint.current() is ndd.checkpoint.current()
