"""The one-command device check of ndd's GPU backend (issue 15 item 7): correctness, then speed.

    python benchmarks/gpu_check.py [--out DIR] [--cases 100] [--batch 256] [--images 768]
    python benchmarks/gpu_check.py --dry-run      # no GPU: every CPU-side part, on the fake GPU

Writes ``gpu_check.json`` (one record per step: status pass / fail / skip, its reason, seconds,
details) and ``gpu_check.log`` into ``--out`` (default ``$OUT`` when set, else
``./gpu_check_out``); the exit status is 1 when a step failed. Steps, in order:

1. ``environment``   -- Python, numpy, torch, torchvision, cupy, CUDA driver/runtime, device,
                        nvImageCodec, the GPU kernels registered;
2. ``compile``       -- every kernel family compiles (NVRTC through cupy on the device; offline
                        NVRTC for sm_80/sm_90 in a dry run);
3. ``kernels_exact`` -- every GPU kernel against its CPU kernel on ``--cases`` random cases of
                        ``runtime/kernels/gpu/cases.py`` (odd sizes, empty samples, mixed batches;
                        bit for bit but for its documented tolerances), then a quarter as many
                        cases through ``ndd`` on GPU batches (bit for bit), then the chains
                        the compiler fuses on the GPU against the unfused chains;
4. ``decode``        -- GPU decode (``decoders.image(device="gpu")``: nvImageCodec's GPU
                        decoder) within nvImageCodec's tolerance of CPU decode, per backend
                        (default hardware/CUDA split, CUDA only), the backend that ran named;
                        the region decoders (``image_crop``, ``image_random_crop``) likewise;
                        then decode fused with what follows (train: decode -> rrc -> cmn, val:
                        decode -> resize -> cmn, each one GPU node decoding only the box its
                        resize reads) against the unfused chain (``gpu_check_fused.py``);
5. ``race``          -- a two-stream diamond (fan-out on two lanes, join) on fresh data every
                        iteration, with buffers recycled across the streams: equal to the CPU;
6. ``graphs``        -- compiled plan captured as CUDA graphs and replayed: equal to eager;
7. ``torch_interop`` -- ``.torch()`` of a batch whose producer stream is held back by a slow
                        kernel: torch must read the finished data (ordered through the event);
8. ``throughput``    -- img/s of the train and val pipelines at ``--batch`` in eager, deferred
                        and compile mode (compile with and without CUDA graphs) against
                        torchvision's GPU decode + transforms v2 on the same images.

A step whose piece is not there yet (no GPU decoder, an op without a GPU kernel) is skipped with
the reason named; the whole run keeps to ``--budget`` seconds (default 420: under 8 minutes on
an H200), skipping what is left when time runs out.

On the lent machine (Python 3.12, cupy-cuda13x, torch + torchvision installed) ndd lacks
lmdb (``import ndd``), lz4 (the CPU kernel catalogue) and nvImageCodec for CUDA 13 with its
nvJPEG library (the GPU decode): ``benchmarks/gpu_check_device.sh`` carries them as wheels.
Here, once: ``bash benchmarks/gpu_check_device.sh --fetch``; then the device tool's ``run``
with ``command="bash benchmarks/gpu_check_device.sh"``, ``carry=[".whl"]``,
``timeout_s=480`` (it installs the wheels into /tmp/site, probes the GPU decoder, and runs this
check with ``--budget 330``; extra arguments are passed on, e.g. ``--steps``).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import platform
import shutil
import sys
import tempfile
import time
import traceback

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import numpy as np  # noqa: E402

import ndd  # noqa: E402
from runtime import device as devices  # noqa: E402
from runtime.gpu import capture  # noqa: E402
from runtime.gpu.fake import FakeApi  # noqa: E402

import gpu_check_cases as cases  # noqa: E402
import gpu_check_fused  # noqa: E402


class Skip(Exception):
    """A step that cannot run here; the message is the reason."""


class Check:
    """Runs the steps, keeps the records, writes the JSON and the log."""

    def __init__(self, args):
        self.args = args
        self.out = pathlib.Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.log_file = open(self.out / "gpu_check.log", "w")
        self.records: list[dict] = []
        self.start = time.perf_counter()
        self.fake = None

    def log(self, text: str) -> None:
        line = f"[{time.perf_counter() - self.start:7.1f}s] {text}"
        print(line, flush=True)
        self.log_file.write(line + "\n")
        self.log_file.flush()

    def left(self) -> float:
        return self.args.budget - (time.perf_counter() - self.start)

    def step(self, name: str, fn) -> None:
        rec = {"step": name, "status": "pass", "reason": "", "seconds": 0.0, "details": {}}
        t0 = time.perf_counter()
        if self.left() <= 5:
            rec.update(status="skip", reason="time budget spent")
        else:
            self.log(f"== {name}")
            try:
                rec["details"] = fn(self) or {}
                if rec["details"].get("failures"):
                    rec["status"] = "fail"
                    rec["reason"] = f"{len(rec['details']['failures'])} case(s) differ"
            except Skip as exc:
                rec.update(status="skip", reason=str(exc))
            except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
                rec.update(status="fail", reason=f"{type(exc).__name__}: {exc}")
                self.log(traceback.format_exc())
        rec["seconds"] = round(time.perf_counter() - t0, 3)
        self.log(f"   {name}: {rec['status'].upper()} {rec['reason']} ({rec['seconds']} s)")
        self.records.append(rec)

    def finish(self) -> int:
        failed = [r["step"] for r in self.records if r["status"] == "fail"]
        summary = {"dry_run": self.args.dry_run, "seconds": round(time.perf_counter()
                                                                  - self.start, 1),
                   "failed": failed, "steps": self.records}
        (self.out / "gpu_check.json").write_text(json.dumps(summary, indent=2, default=str))
        self.log(f"done: {len(failed)} failed of {len(self.records)} steps -> "
                 f"{self.out / 'gpu_check.json'}")
        self.log_file.close()
        return 1 if failed else 0


# --------------------------------------------------------------------------- steps
def environment(ck: Check) -> dict:
    env = {"python": sys.version.split()[0], "platform": platform.platform(),
           "numpy": np.__version__, "dry_run": ck.args.dry_run, "api": devices.gpu_api().name}
    for mod in ("torch", "torchvision", "cupy"):
        try:
            env[mod] = __import__(mod).__version__
        except Exception as exc:  # noqa: BLE001
            env[mod] = f"missing ({type(exc).__name__})"
    try:
        import nvidia.nvimgcodec as nvimgcodec
        env["nvimgcodec"] = getattr(nvimgcodec, "__version__", "present")
    except Exception as exc:  # noqa: BLE001
        env["nvimgcodec"] = f"missing ({type(exc).__name__}): decode falls back to Pillow"
    if not ck.args.dry_run:
        import cupy
        rt = cupy.cuda.runtime
        env.update(cuda_runtime=rt.runtimeGetVersion(), cuda_driver=rt.driverGetVersion(),
                   device=rt.getDeviceProperties(0)["name"].decode(),
                   devices=rt.getDeviceCount())
        import torch
        env["torch_cuda"] = torch.cuda.is_available()
    env["gpu_ops"] = sorted(cases.gpu_ops())
    env["gxx"] = shutil.which("g++")
    for k, v in env.items():
        ck.log(f"   {k}: {v}")
    return env


def compile_kernels(ck: Check) -> dict:
    cc = cases.compile_module()
    out = {}
    if ck.args.dry_run:
        if cc.find_nvrtc() is None:
            raise Skip("no NVRTC library on this machine")
        cache = pathlib.Path(tempfile.gettempdir()) / "ndd-gpu-check-nvrtc"
        cache.mkdir(exist_ok=True)
        for fam in sorted(cc.FAMILIES):
            if not (cc.SOURCE_DIR / cc.FAMILIES[fam]).exists():
                continue
            for arch in cc.ARCHS:
                key = hashlib.sha256("\0".join([cc.source_hash(cc.source_of(fam)), arch,
                                                *cc.OPTIONS]).encode()).hexdigest()[:24]
                done = cache / f"{fam}-{arch}-{key}"
                if not done.exists():           # compiled before with the same source: cached
                    res = cc.nvrtc_compile(cc.source_of(fam), arch)
                    done.write_text(str(len(res["ptx"])))
                out[f"{fam}/{arch}"] = int(done.read_text())
        return out
    for fam in sorted(cc.FAMILIES):
        if not (cc.SOURCE_DIR / cc.FAMILIES[fam]).exists():
            continue
        mod = cc.raw_module(fam, cc.source_of(fam))
        mod.compile()
        out[fam] = "compiled"
    return out


def kernels_exact(ck: Check) -> dict:
    """The kernel cases (every GPU kernel, its tolerances), then API-level cases through ndd."""
    n = ck.args.cases
    kern = cases.kernel_cases(n, seed=ck.args.seed, log=ck.log)
    ck.log(f"   kernel cases: {kern['passed']} / {kern['cases']}; per op {kern['per_op']}")
    api = cases.run_exact_cases(max(6, n // 4), seed=ck.args.seed, log=ck.log)
    ck.log(f"   ndd-level cases: {api['passed']} / {api['cases']} exact; per op {api['per_op']}")
    fused = cases.fused_cases(ck.args.seed, log=ck.log)
    ck.log(f"   fused GPU chains: {fused['chains']}")
    return {"cases": kern["cases"], "kernel_cases": kern, "api_cases": api, "fused": fused,
            "failures": kern["failures"] + api["failures"] + fused["failures"]}


def decode(ck: Check) -> dict:
    """GPU decode against the CPU decode: nvImageCodec's GPU decoder on a device (it must be
    the one that ran: a CPU fallback for the whole batch fails the step), the CPU decode + H2D
    copy on the fake GPU (exact); the region decoders likewise (every backend named must be
    nvImageCodec's GPU decoder on a device)."""
    from runtime.kernels.gpu import decode as gpu_decode
    from runtime.kernels.registry import KERNELS
    gpu_decoders = sorted(op for op, dev in KERNELS if dev == "gpu" and op.startswith("decoders."))
    if "decoders.image" not in gpu_decoders:
        raise Skip("no GPU decoder is registered (runtime/kernels/gpu/decode.py)")
    res = cases.decode_cases(gpu_decoders, ck.args.seed, log=ck.log, images=ck.args.images,
                             exact=ck.args.dry_run)
    enc = res.pop("encoded")
    fused = gpu_check_fused.fused_decode_cases(enc, ck.args.dry_run, ck.log, ck.args.seed)
    res["fused"] = fused["chains"]
    res["failures"] += fused["failures"]
    if not ck.args.dry_run:
        fused_backends = {f"fused {k}": v["backend"] for k, v in fused["chains"].items()}
        for name, backend in {**res["backends"], **fused_backends}.items():
            if not str(backend).startswith("nvimgcodec-gpu"):
                res["failures"].append(
                    f"{name}: decoded by {backend}, not nvImageCodec's GPU decoder "
                    f"({gpu_decode.gpu_decoder_problem() or 'no JPEG went to the GPU'})")
    return res


def race(ck: Check) -> dict:
    iters = 6 if ck.args.dry_run else 30
    size = (24, 40) if ck.args.dry_run else (512, 768)
    res = cases.race_cases(iters, size, seed=ck.args.seed)
    if ck.fake is not None:
        res["violations"] = list(ck.fake.violations)
        if ck.fake.violations:
            res.setdefault("failures", []).extend(ck.fake.violations[:5])
    return res


def graphs(ck: Check) -> dict:
    n = 6 if ck.args.dry_run else 12
    size = (20, 30) if ck.args.dry_run else (480, 640)
    res = cases.graph_cases(n, size, batch=4 if ck.args.dry_run else 32, seed=ck.args.seed)
    if res["stats"]["replay"] < n - 3:
        res.setdefault("failures", []).append(f"only {res['stats']['replay']} replays")
    return res


def torch_interop(ck: Check) -> dict:
    if ck.args.dry_run:
        return cases.interop_ordering_fake(ck.fake)
    return cases.interop_slow_producer(seed=ck.args.seed)


def throughput(ck: Check) -> dict:
    return cases.throughput(ck.args, ck.log, ck.left)


STEPS = [("environment", environment), ("compile", compile_kernels),
         ("kernels_exact", kernels_exact), ("decode", decode), ("race", race),
         ("graphs", graphs), ("torch_interop", torch_interop), ("throughput", throughput)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dry-run", action="store_true",
                    help="no GPU: run the CPU-side parts on the fake GPU layer")
    ap.add_argument("--out", default=os.environ.get("OUT") or "gpu_check_out")
    ap.add_argument("--cases", type=int, default=None, help="random cases of kernels_exact "
                                                             "(100; 12 in a dry run)")
    ap.add_argument("--batch", type=int, default=None, help="throughput batch (256; 4 dry)")
    ap.add_argument("--images", type=int, default=None, help="photos (768; 8 in a dry run)")
    ap.add_argument("--budget", type=float, default=420.0, help="seconds for the whole run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", default="", help="comma-separated subset of the steps")
    args = ap.parse_args(argv)
    args.cases = args.cases or (12 if args.dry_run else 100)
    args.batch = args.batch or (4 if args.dry_run else 256)
    args.images = args.images or (8 if args.dry_run else 768)
    ck = Check(args)
    cases.enable_gpu_ops(ck.log)
    wanted = {s for s in args.steps.split(",") if s}
    run = [(n, f) for n, f in STEPS if not wanted or n in wanted]
    if args.dry_run:
        ck.fake = FakeApi()
        with devices.use_api(ck.fake):
            for name, fn in run:
                ck.step(name, fn)
    else:
        if not devices.gpu_available():
            ck.log("no CUDA device: run with --dry-run on a machine without a GPU")
            return 2
        for name, fn in run:
            ck.step(name, fn)
    capture.set_enabled(False)
    return ck.finish()


if __name__ == "__main__":
    sys.exit(main())
