"""A small speech dataset with NeMo ASR manifests, synthesized offline with espeak-ng.

No PyPI package ships recorded speech that may be redistributed, so the utterances are
synthesized by espeak-ng (Debian package ``espeak-ng``; ``apt-get install espeak-ng``): real
phonetic speech, not tones, from several voices (American, British, Scottish English, male and
female variants), speaking rates and pitches, 1-6 seconds long, each followed or preceded by a
little silence (so ``nonsilent_region`` has work to do). The sentences are committed here
(:data:`SENTENCES`); utterance ``i`` uses sentence ``i % len(SENTENCES)`` and a voice, rate and
pitch drawn from ``numpy.random.default_rng([seed, i])``. Audio is resampled by espeak-ng's
output (22050 Hz) to 16 kHz with our own resampler and written as 16-bit WAV (some FLAC).

Layout written by :func:`build_speech_dataset`::

    root/wav/utt_<index:04d>.wav|.flac
    root/train_manifest.json    (NeMo: {"audio_filepath", "duration", "text"} per line;
                                 paths absolute)
    root/MANIFEST.json          (builder version, espeak-ng version, seed, per-file sha256)

Same bytes for the same seed and espeak-ng version. Command line:
``python -m ndd.datasets.speech [--root DIR] [--num N]``.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from tqdm import tqdm

from ndd.datasets.sample import default_root
from runtime.kernels.cpu.audio_resample import resample

__all__ = ["build_speech_dataset", "SENTENCES", "VOICES", "espeak_available"]

BUILDER_VERSION = 1
SAMPLE_RATE = 16000

#: The transcripts (lower case, no punctuation: what a CTC model is trained on).
SENTENCES = (
    "the quick brown fox jumps over the lazy dog",
    "she sells sea shells by the sea shore",
    "a data loader feeds the model with batches",
    "turn left at the next corner",
    "please call me back in ten minutes",
    "the weather will be sunny tomorrow",
    "seven plus five is twelve",
    "open the window and let the air in",
    "my train leaves at half past nine",
    "the cat sat quietly on the warm mat",
    "speech recognition converts sound to text",
    "four hundred and twenty one",
    "where did you put the keys",
    "graphics cards decode images very fast",
    "bring an umbrella just in case",
    "the library closes at eight tonight",
    "good morning how are you today",
    "yes no maybe later",
    "this sentence is a little bit longer than the others in the list",
    "zero one two three four five six seven eight nine",
)

#: espeak-ng voices (language + variant): several speakers.
VOICES = ("en-us", "en-gb", "en-gb-scotland", "en-us+f3", "en-gb+f2", "en-us+m3",
          "en-gb-x-rp+m5", "en-us+f4")


def _espeak() -> str | None:
    return shutil.which("espeak-ng")


def espeak_available() -> bool:
    """Whether espeak-ng is installed (the builder needs it)."""
    return _espeak() is not None


def _espeak_version(exe: str) -> str:
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.strip().splitlines()[0] if out.stdout else "unknown"


def _synthesize(exe: str, text: str, voice: str, rate: int, pitch: int) -> tuple:
    """espeak-ng's WAV of ``text``: (int16 samples, sample rate)."""
    sf = _soundfile()
    proc = subprocess.run([exe, "-v", voice, "-s", str(rate), "-p", str(pitch), "--stdout",
                           text], capture_output=True, check=False)
    if proc.returncode != 0 or not proc.stdout:
        raise RuntimeError(f"espeak-ng failed for voice {voice!r}: "
                           f"{proc.stderr.decode(errors='replace').strip()}")
    data, sr = sf.read(io.BytesIO(proc.stdout), dtype="int16", always_2d=False)
    return data, sr


def _soundfile():
    import soundfile
    return soundfile


def _make_utterance(exe, index, seed):
    """Utterance ``index``: (int16 samples at 16 kHz, text, encoding, voice info)."""
    rng = np.random.default_rng([seed, index, BUILDER_VERSION])
    text = SENTENCES[index % len(SENTENCES)]
    voice = VOICES[int(rng.integers(0, len(VOICES)))]
    rate = int(rng.integers(130, 200))          # words per minute
    pitch = int(rng.integers(30, 70))
    lead, tail = rng.uniform(0.05, 0.4, size=2)
    gain = float(rng.uniform(0.5, 1.0))
    flac = bool(rng.random() < 0.25)
    pcm, sr = _synthesize(exe, text, voice, rate, pitch)
    x = resample(pcm.astype(np.float32) / 32768, sr, SAMPLE_RATE)
    x = np.concatenate([np.zeros(int(lead * SAMPLE_RATE), np.float32), x * gain,
                        np.zeros(int(tail * SAMPLE_RATE), np.float32)])
    out = np.clip(np.round(x * 32767), -32768, 32767).astype(np.int16)
    return out, text, ("FLAC" if flac else "WAV"), {"voice": voice, "rate": rate,
                                                    "pitch": pitch}


def build_speech_dataset(root=None, num=80, seed=0, force=False, progress=True) -> pathlib.Path:
    """Build (or reuse) the speech dataset.

    Parameters
    ----------
    root : str or os.PathLike, optional
        Output folder (default: ``ndd.datasets.sample.default_root() / "speech"``).
    num : int, default 80
        Number of utterances.
    seed : int, default 0
    force : bool
        Rebuild even when ``root`` holds a matching build.
    progress : bool
        Show a progress bar.

    Returns
    -------
    pathlib.Path
        ``root``; the manifest is ``root / "train_manifest.json"``.

    Raises
    ------
    RuntimeError
        espeak-ng is not installed (the message says how to install it).
    ValueError
        ``num`` < 1.
    """
    if int(num) < 1:
        raise ValueError(f"num must be >= 1, got {num}")
    exe = _espeak()
    if exe is None:
        raise RuntimeError("the speech dataset is synthesized with espeak-ng, which is not "
                           "installed: apt-get install espeak-ng (Debian/Ubuntu)")
    root = (default_root() / "speech") if root is None else pathlib.Path(root).expanduser()
    header = {"builder": "ndd.datasets.speech", "builder_version": BUILDER_VERSION,
              "seed": int(seed), "num": int(num), "espeak": _espeak_version(exe)}
    meta_path = root / "MANIFEST.json"
    if not force and meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text())
        except ValueError:
            meta = {}
        if all(meta.get(k) == v for k, v in header.items()) and all(
                (root / rel).is_file() for rel in meta.get("files", {})):
            return root
    sf = _soundfile()
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".{root.name}.tmp-", dir=root.parent))
    try:
        (tmp / "wav").mkdir()
        files, lines = {}, []
        for i in tqdm(range(int(num)), desc="speech (espeak-ng)", disable=not progress):
            pcm, text, fmt, info = _make_utterance(exe, i, int(seed))
            rel = f"wav/utt_{i:04d}.{'flac' if fmt == 'FLAC' else 'wav'}"
            buf = io.BytesIO()
            sf.write(buf, pcm, SAMPLE_RATE, format=fmt, subtype="PCM_16")
            data = buf.getvalue()
            (tmp / rel).write_bytes(data)
            files[rel] = dict(info, text=text, sha256=hashlib.sha256(data).hexdigest(),
                              samples=int(pcm.shape[0]))
            lines.append({"audio_filepath": str((root / rel).resolve()),
                          "duration": round(pcm.shape[0] / SAMPLE_RATE, 4), "text": text})
        with open(tmp / "train_manifest.json", "w", encoding="utf-8") as f:
            for line in lines:
                f.write(json.dumps(line) + "\n")
        with open(tmp / "MANIFEST.json", "w", encoding="utf-8") as f:
            json.dump(dict(header, files=files), f, indent=1, sort_keys=True)
        if root.exists():
            shutil.rmtree(root)
        os.replace(tmp, root)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return root


def main(argv=None) -> int:
    """``python -m ndd.datasets.speech``."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", default=None)
    p.add_argument("--num", type=int, default=80)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--force", action="store_true")
    args = p.parse_args(argv)
    print(build_speech_dataset(args.root, args.num, args.seed, args.force))
    return 0


if __name__ == "__main__":
    sys.exit(main())
