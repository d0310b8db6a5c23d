"""Audio ops: preemphasis_filter, spectrogram, mel_filter_bank, to_decibels, mfcc,
nonsilent_region, audio_resample on a batch of 8 noisy signals of ~3 s at 16 kHz."""

import numpy as np

from op_cases import Case


def _signals():
    rng = np.random.default_rng(0)
    out = []
    for i in range(8):
        n = 48000 - 1000 * i
        x = np.zeros(n, np.float32)
        x[4000:n - 4000] = rng.standard_normal(n - 8000).astype(np.float32) * 0.3
        out.append(x)
    return out, ""


def _spectra():
    rng = np.random.default_rng(1)
    return [np.abs(rng.standard_normal((257, 300 - 10 * i))).astype(np.float32)
            for i in range(8)], "ft"


def _mels():
    rng = np.random.default_rng(2)
    return [rng.standard_normal((64, 300 - 10 * i)).astype(np.float32) for i in range(8)], "ft"


def cases():
    return [
        Case("preemphasis_filter 8x~3s", _signals, lambda m, b: m.preemphasis_filter(b)),
        Case("spectrogram 8x~3s nfft512 w320 s160", _signals,
             lambda m, b: m.spectrogram(b, nfft=512, window_length=320, window_step=160)),
        Case("mel_filter_bank 8x257x~300 -> 64", _spectra,
             lambda m, b: m.mel_filter_bank(b, sample_rate=16000.0, nfilter=64)),
        Case("to_decibels 8x257x~300", _spectra, lambda m, b: m.to_decibels(b)),
        Case("mfcc 8x64x~300 n13", _mels, lambda m, b: m.mfcc(b, n_mfcc=13)),
        Case("nonsilent_region 8x~3s w256", _signals,
             lambda m, b: m.nonsilent_region(b, window_length=256)),
        Case("audio_resample 8x~3s 16k->8k", _signals,
             lambda m, b: m.audio_resample(b, in_rate=16000.0, out_rate=8000.0)),
    ]
