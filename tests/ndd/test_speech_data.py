"""ndd.datasets.speech: espeak-ng speech with NeMo manifests (skipped without espeak-ng)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from ndd.datasets import speech

pytestmark = pytest.mark.skipif(not speech.espeak_available(),
                                reason="espeak-ng is not installed (apt-get install espeak-ng)")
sf = pytest.importorskip("soundfile")


def test_manifest_files_and_determinism(tmp_path):
    root = speech.build_speech_dataset(tmp_path / "a", num=6, progress=False)
    lines = [json.loads(x) for x in (root / "train_manifest.json").read_text().splitlines()]
    assert len(lines) == 6
    voices = set()
    meta = json.loads((root / "MANIFEST.json").read_text())
    for i, line in enumerate(lines):
        data, rate = sf.read(line["audio_filepath"], dtype="float32")
        assert rate == speech.SAMPLE_RATE and data.ndim == 1
        assert abs(line["duration"] - data.shape[0] / rate) < 1e-3
        assert line["text"] == speech.SENTENCES[i]
        assert 0.8 < line["duration"] < 8.0
        # speech, not silence or a tone: loud frames and a spread spectrum
        frames = data[: data.size // 400 * 400].reshape(-1, 400)
        loud = (frames ** 2).mean(axis=1) > 1e-4
        assert 0.3 < loud.mean() < 1.0
        spec = np.abs(np.fft.rfft(frames[loud], axis=1)).mean(axis=0)
        assert (spec > spec.max() * 0.1).sum() > 10
    voices = {f["voice"] for f in meta["files"].values()}
    assert len(voices) >= 3
    again = speech.build_speech_dataset(tmp_path / "b", num=6, progress=False)
    for rel, entry in meta["files"].items():
        assert (again / rel).read_bytes() == (root / rel).read_bytes(), rel
    assert speech.build_speech_dataset(root, num=6, progress=False) == root   # reused
