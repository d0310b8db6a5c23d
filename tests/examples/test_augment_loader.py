"""examples/augment_loader.py: the augmentation gives bit-identical batches in eager, deferred
and compile mode, its colour chain is fused into one pass, and a short run trains."""
import importlib.util
import pathlib

import numpy as np
import pytest

import ndd
from ndd.datasets.sample import build_sample_dataset

_PATH = pathlib.Path(__file__).resolve().parents[2] / "examples" / "augment_loader.py"
_spec = importlib.util.spec_from_file_location("augment_loader_example", _PATH)
aug = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(aug)

BATCH, SIZE = 4, 40


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return str(build_sample_dataset(tmp_path_factory.mktemp("augment"), num_images=12,
                                    progress=False))


def _run(data, mode, seed=5):
    reader = ndd.readers.File(file_root=data, random_shuffle=True, seed=seed)
    rng = ndd.random.RNG(seed=seed)
    return [(images.numpy().copy(), labels.numpy().copy())
            for images, labels in aug.augment_batches(reader, BATCH, mode, size=SIZE, rng=rng)]


def test_batches_are_bit_identical_in_every_mode(data):
    eager = _run(data, "eager")
    assert len(eager) == 3
    for images, labels in eager:
        assert images.shape == (BATCH, 3, SIZE, SIZE) and images.dtype == np.float32
        assert np.isfinite(images).all() and labels.shape == (BATCH,)
    # normalized: roughly zero-centred, and some pixels erased to exactly 0
    every = np.concatenate([e[0] for e in eager])
    assert -1.5 < every.mean() < 1.5 and (every == 0).any()
    for mode in ("deferred", "compile"):
        got = _run(data, mode)
        assert len(got) == len(eager)
        for (gi, gl), (ei, el) in zip(got, eager):
            np.testing.assert_array_equal(gi, ei, err_msg=mode)
            np.testing.assert_array_equal(gl, el, err_msg=mode)


def test_colour_normalize_chain_is_fused(data):
    reader = ndd.readers.File(file_root=data, random_shuffle=True, seed=1)
    with ndd.EvalMode.deferred:
        jpegs, _ = next(iter(reader.next_epoch(batch_size=BATCH)))
        text = ndd.explain(aug.augment(jpegs, size=SIZE, rng=ndd.random.RNG(seed=1)))
    assert "fused: color_twist + hsv + crop_mirror_normalize" in text, text
    assert "applied color->crop_mirror_normalize" in text


def test_short_training_run(data, capsys):
    aug.main(["--data", data, "--steps", "3", "--batch-size", "4", "--size", "32",
              "--log-every", "1", "--mode", "compile"])
    out = capsys.readouterr().out
    assert out.count("loss") == 3 and "images/s" in out
