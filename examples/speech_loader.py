"""Train a tiny CTC speech model with a Jasper/QuartzNet-style loader on the espeak-ng speech set.

Written against DALI's dynamic-mode API as a DALI user would (``--backend dali`` runs the same
loader on ``nvidia.dali.experimental.dynamic``). Per batch: read (``readers.NemoAsr``, decoded
at 16 kHz), trim the silence (``nonsilent_region`` + ``slice``), pre-emphasis, spectrogram
(20 ms windows, 10 ms step), 64 mel bins, log (``to_decibels``), per-feature normalization over
time, then ``.torch(pad=True)`` pads the ragged batch into ``(N, 64, T)``.

    python examples/speech_loader.py                  # ndd, compile mode, builds the data
    python examples/speech_loader.py --mode eager --steps 100
    python examples/speech_loader.py --backend dali --mode eager

Prints the CTC loss every ``--log-every`` steps and, at the end, samples/s of the loader alone
and end to end.
"""

import argparse
import importlib
import inspect
import time

import numpy as np
import torch
from torch import nn

BACKENDS = {"ndd": "ndd", "dali": "nvidia.dali.experimental.dynamic"}
ALPHABET = " abcdefghijklmnopqrstuvwxyz'"          # index + 1; 0 is CTC's blank
NFILTER = 64


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", choices=sorted(BACKENDS), default="ndd")
    p.add_argument("--data", default=None, help="folder of the speech set (default: build it)")
    p.add_argument("--num", type=int, default=80, help="utterances of the built speech set")
    p.add_argument("--mode", choices=("eager", "deferred", "compile"), default="compile")
    p.add_argument("--threads", type=int, default=None, help="set_num_threads(N)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--log-every", type=int, default=25)
    return p.parse_args(argv)


def features(api, audio):
    """The Jasper-style front end on a batch of 16 kHz signals: log-mel features (64, T)."""
    begin, length = api.nonsilent_region(audio, cutoff_db=-60.0, window_length=256,
                                         reset_interval=8192)
    audio = api.slice(audio, begin, length, axes=[0])
    audio = api.preemphasis_filter(audio, preemph_coeff=0.97)
    spec = api.spectrogram(audio, nfft=512, window_length=320, window_step=160)
    mel = api.mel_filter_bank(spec, sample_rate=16000.0, nfilter=NFILTER)
    logmel = api.to_decibels(mel, multiplier=10.0, reference=1.0, cutoff_db=-80.0)
    return api.normalize(logmel, axes=[1], epsilon=1e-5)


def make_reader(api, manifest, seed):
    return api.readers.NemoAsr(manifest_filepaths=[manifest], sample_rate=16000.0,
                               read_sample_rate=False, read_text=True, random_shuffle=True,
                               seed=seed)


def epoch_kwargs(reader, batch_size, mode):
    kwargs = {"batch_size": batch_size}
    if mode == "compile":
        params = inspect.signature(reader.next_epoch).parameters
        kwargs["compile" if "compile" in params else "capture"] = True
    return kwargs


def eval_context(api, mode):
    return api.EvalMode.deferred if mode != "eager" else api.EvalMode.eager


def batches(api, reader, batch_size, mode):
    """Yields ``(features (N, 64, T) float32, feature lengths, targets, target lengths)``."""
    while True:
        with eval_context(api, mode):
            for audio, text in reader.next_epoch(**epoch_kwargs(reader, batch_size, mode)):
                feats = features(api, audio)
                lens = torch.tensor([int(s.shape[1]) for s in feats.evaluate().tensors])
                x = feats.torch(pad=True)
                words = [bytes(np.asarray(t)).decode() for t in text.evaluate().tensors]
                tgt = [torch.tensor([ALPHABET.index(c) + 1 for c in w if c in ALPHABET])
                       for w in words]
                yield (x.float(), lens, torch.cat(tgt),
                       torch.tensor([len(t) for t in tgt]))


class TinyCTC(nn.Module):
    """Two 1-D convolutions (the second with stride 2) and a per-frame classifier."""

    def __init__(self, n_in=NFILTER, hidden=96, n_out=len(ALPHABET) + 1):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(n_in, hidden, 11, padding=5), nn.BatchNorm1d(hidden), nn.ReLU(),
            nn.Conv1d(hidden, hidden, 11, stride=2, padding=5), nn.BatchNorm1d(hidden),
            nn.ReLU(), nn.Conv1d(hidden, n_out, 1))

    def forward(self, x):
        return self.net(x)              # (N, classes, T / 2)


def main(argv=None):
    args = parse_args(argv)
    api = importlib.import_module(BACKENDS[args.backend])
    if args.threads:
        api.set_num_threads(args.threads)
    if args.data is None:
        from ndd.datasets.speech import build_speech_dataset
        root = build_speech_dataset(num=args.num)
    else:
        root = args.data
    manifest = f"{root}/train_manifest.json"
    torch.manual_seed(args.seed)
    model = TinyCTC()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    ctc = nn.CTCLoss(blank=0, zero_infinity=True)
    reader = make_reader(api, manifest, args.seed)
    it = batches(api, reader, args.batch_size, args.mode)
    wait = samples = 0
    t0 = time.perf_counter()
    for step in range(1, args.steps + 1):
        t_wait = time.perf_counter()
        x, lens, tgt, tgt_lens = next(it)
        wait += time.perf_counter() - t_wait
        samples += x.shape[0]
        logits = model(x)
        out_lens = torch.div(lens + 1, 2, rounding_mode="floor").clamp(max=logits.shape[2])
        loss = ctc(logits.permute(2, 0, 1).log_softmax(-1), tgt, out_lens, tgt_lens)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == 1 or step % args.log_every == 0:
            print(f"step {step:4d}  ctc loss {loss.item():.4f}", flush=True)
    total = time.perf_counter() - t0
    print(f"backend={args.backend} mode={args.mode} batch={args.batch_size}: loader "
          f"{samples / max(wait, 1e-9):.1f} samples/s, end to end {samples / total:.1f} "
          f"samples/s")


if __name__ == "__main__":
    main()
