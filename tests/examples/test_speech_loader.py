"""examples/speech_loader.py: the Jasper-style front end gives bit-identical batches in eager,
deferred and compile mode, trims the silence, normalizes per feature, and a short run trains."""
import importlib.util
import json
import pathlib

import numpy as np
import pytest

import ndd

sf = pytest.importorskip("soundfile")
_PATH = pathlib.Path(__file__).resolve().parents[2] / "examples" / "speech_loader.py"
_spec = importlib.util.spec_from_file_location("speech_loader_example", _PATH)
sl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sl)

WORDS = ("hello world", "one two three", "data loader", "good morning", "yes", "seven")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Tone-and-noise bursts between silences (speech-like envelopes), 16 kHz, with a NeMo
    manifest; the bursts' positions are known."""
    root = tmp_path_factory.mktemp("speech")
    rng = np.random.default_rng(2)
    lines, bursts = [], []
    for i, text in enumerate(WORDS):
        lead, body, tail = 1600 + 400 * i, 6000 + 1500 * i, 2400
        t = np.arange(body) / 16000
        voiced = 0.3 * np.sin(2 * np.pi * (150 + 20 * i) * t) * np.hanning(body)
        x = np.concatenate([np.zeros(lead), voiced + 0.02 * rng.standard_normal(body),
                            np.zeros(tail)])
        path = root / f"u{i}.wav"
        sf.write(path, (x * 32767).astype(np.int16), 16000, subtype="PCM_16")
        lines.append({"audio_filepath": str(path), "duration": x.size / 16000, "text": text})
        bursts.append((lead, body))
    (root / "train_manifest.json").write_text("\n".join(json.dumps(e) for e in lines) + "\n")
    return root, bursts


def _batches(root, mode, n=2):
    reader = sl.make_reader(ndd, f"{root}/train_manifest.json", seed=4)
    it = sl.batches(ndd, reader, 3, mode)
    return [tuple(t.numpy().copy() for t in next(it)) for _ in range(n)]


def test_bit_identical_in_every_mode(corpus):
    root, _ = corpus
    eager = _batches(root, "eager")
    for mode in ("deferred", "compile"):
        for a, b in zip(eager, _batches(root, mode)):
            for x, y in zip(a, b):
                np.testing.assert_array_equal(x, y)
    x, lens, tgt, tgt_lens = eager[0]
    assert x.shape[:2] == (3, sl.NFILTER) and x.dtype == np.float32
    assert lens.max() == x.shape[2] and tgt_lens.sum() == tgt.shape[0]


def test_features_are_trimmed_and_normalized(corpus):
    root, bursts = corpus
    reader = ndd.readers.NemoAsr(manifest_filepaths=[f"{root}/train_manifest.json"],
                                 read_text=False, read_sample_rate=False)
    (audio,) = next(iter(reader.next_epoch(batch_size=6)))
    begin, length = ndd.nonsilent_region(audio, cutoff_db=-60.0, window_length=256)
    feats = [np.asarray(t) for t in sl.features(ndd, audio).evaluate().tensors]
    for k, (f, (lead, body)) in enumerate(zip(feats, bursts)):
        b, n = int(np.asarray(begin.evaluate().tensors[k])), int(np.asarray(
            length.evaluate().tensors[k]))
        # the leading silence is cut (up to the window that reaches the burst), the burst kept
        # (the trailing silence may stay: the float32 running sum leaves a residue above the
        # -60 dB threshold until its next reset, exactly as in DALI)
        assert lead - 256 < b <= lead and b + n >= lead + body, (k, b, n)
        assert f.shape[1] == n // 160 + 1                       # centred 10 ms frames
        np.testing.assert_allclose(f.mean(axis=1), 0, atol=1e-4)     # per feature over time
        np.testing.assert_allclose(f.std(axis=1), 1, atol=1e-2)


def test_a_short_training_run(corpus, capsys):
    root, _ = corpus
    sl.main(["--data", str(root), "--steps", "4", "--log-every", "2", "--batch-size", "3"])
    out = capsys.readouterr().out
    assert "ctc loss" in out and "samples/s" in out


def test_explain_shows_the_front_end_as_one_fused_node(corpus):
    """The compiled loader: one fused.audio node doing nonsilent_region, slice (a view),
    preemphasis, spectrogram, mel, log and normalization (docs/images/speech_graph.*)."""
    root, _ = corpus
    reader = sl.make_reader(ndd, f"{root}/train_manifest.json", seed=0)
    with ndd.EvalMode.deferred:
        audio, _text = next(iter(reader.next_epoch(batch_size=3)))
        text = ndd.explain(sl.features(ndd, audio))
    compiled = text.split("== compiled")[1].split("== passes")[0]
    assert "nonsilent_region[" not in compiled and "fused.audio[" in compiled
    assert "fused: nonsilent_region + slice + preemphasis_filter + spectrogram + " \
           "mel_filter_bank + to_decibels + normalize" in compiled
    for op in ("preemphasis_filter[", "spectrogram[", "mel_filter_bank[", "normalize["):
        assert op not in compiled                   # only as stages of the fused node
    assert "applied slice->audio" in text and "applied audio->normalize" in text
    assert "applied region->audio" in text
