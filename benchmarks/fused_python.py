"""The per-sample Python of the fused train chain in one process (issue 20's harness).

Records the ``fused.image`` calls of one compile-mode epoch of ``ndd bench``'s train pipeline
(``ndd.tools.bench_floor``'s recorder: the same windows and flips as the benchmark) over the
first ``--per-class`` photos of each class folder of the bench photos, then replays every batch
as ``run_chunk`` groups of the sizes two worker processes claim (8, 6, 5, 4, 3, 2, 1, 1, 1, 1 of
32: ``fused_workers.claim``), writing into one reused output.  Prints, per image, the thread
CPU of the whole replay and of its Python: the CPU outside the codec call
(``nvimgcodec_backend.decode_stream``), the resample (``fused_stages.roi_finish``) and the
normalize (``fused_stages.cmn_plan_into``).  ``--memo`` replaces those three by a memo of their
results (normalize by nothing), so the Python runs with its code and data hot: what the same
functions cost without the kernels evicting them between two calls.  Without ``--memo`` a hash
of the outputs is printed first (two checkouts giving the same hash give the same bits).

    python benchmarks/fused_python.py [--per-class 32] [--epochs 7] [--memo]

Run it from a checkout's root (it imports that checkout's ``runtime``); interleave two
checkouts' runs to compare them on a shared machine (the minimum is the least noisy figure).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, os.getcwd())

import numpy as np  # noqa: E402
import torch  # noqa: E402

GROUPS = (8, 6, 5, 4, 3, 2, 1, 1, 1, 1)


def _subset(per_class: int) -> str:
    """A folder of links to the first ``per_class`` photos of each bench class folder."""
    from ndd.datasets.sample import build_sample_dataset, default_root
    src = pathlib.Path(build_sample_dataset(root=default_root() / "bench-1000-imagenet",
                                            num_images=1000, mix="imagenet"))
    out = pathlib.Path(tempfile.mkdtemp(prefix="ndd-fused-python-"))
    for d in sorted(p for p in src.iterdir() if p.is_dir()):
        (out / d.name).mkdir()
        for f in sorted(d.iterdir())[:per_class]:
            (out / d.name / f.name).symlink_to(f)
    return str(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-class", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=7)
    ap.add_argument("--memo", action="store_true", help="the kernels memoised (hot Python)")
    ns = ap.parse_args()
    torch.set_num_threads(1)                        # as in the worker processes
    from ndd.tools.bench_floor import _record
    from ndd.tools.bench_pipelines import train
    from runtime.codecs import nvimgcodec_backend as nvb
    from runtime.kernels.cpu import cmn_batch, resize_edges
    from runtime.kernels.cpu import fused_stages as fs
    from runtime.kernels.cpu.fused_workers import Stacked, cost_order
    from runtime.kernels.registry import KernelContext
    from runtime.storage import SampleList
    resize_edges.warm_up()
    cmn_batch.warm_up()
    calls = _record(train, _subset(ns.per_class), 32, 1234, True)
    batches = []
    for fields, arrays, info, args in calls:
        ctx = KernelContext(None, *fields)
        args = {k: v.samples() if v.__class__ is Stacked else v for k, v in args.items()}
        data = SampleList([np.frombuffer(a, np.uint8) for a in arrays], info)
        order, groups, at = cost_order(data, ctx.batch_size), [], 0
        for g in GROUPS:
            if at < len(order):
                groups.append(sorted(order[at:at + g]))
                at += g
        batches.append((ctx, data, args, groups))
    images = sum(b[0].batch_size for b in batches)
    kernel = [0.0]

    def timed(fn):
        def call(*a, **k):
            t0 = time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                kernel[0] += time.thread_time() - t0
        return call
    if ns.memo:
        seen_dec, seen_res = {}, {}
        dec, res = nvb.decode_stream, fs.roi_finish

        def decode_memo(stream, mode, roi=None, native_depth=False, adjust=True):
            key = (stream.height, stream.width, roi)
            if key not in seen_dec:
                seen_dec[key] = dec(stream, mode, roi, native_depth, adjust)
            return seen_dec[key]

        def resample_memo(part, region, full_hw, params, interp, dtype):
            key = (id(part), region, full_hw, params.y0, params.x0)
            if key not in seen_res:
                seen_res[key] = res(part, region, full_hw, params, interp, dtype)
            return seen_res[key]
        nvb.decode_stream, fs.roi_finish = decode_memo, resample_memo
        fs.cmn_plan_into = lambda *a: None
    else:
        nvb.decode_stream = timed(nvb.decode_stream)
        fs.roi_finish = timed(fs.roi_finish)
        fs.cmn_plan_into = timed(fs.cmn_plan_into)
    out = np.empty((32, 3, 224, 224), np.float32)

    def target_for(i, shape):
        return out[i] if shape == out.shape[1:] else None

    def epoch(digest=None):
        kernel[0] = 0.0
        t0 = time.thread_time()
        for ctx, data, args, groups in batches:
            plan = fs.batch_plan(args)
            for g in groups:
                fs.run_chunk(ctx, [data], args, g, target_for, plan)
            if digest is not None:
                digest.update(out.tobytes())
        return time.thread_time() - t0, kernel[0]
    digest = hashlib.sha1()
    epoch(digest)
    print(f"{images} images in {len(batches)} batches; outputs sha1 {digest.hexdigest()}")
    runs = [epoch() for _ in range(ns.epochs)]
    total = sorted(t / images * 1e6 for t, _ in runs)
    python = sorted((t - k) / images * 1e6 for t, k in runs)
    what = "memoised kernels" if ns.memo else "with the kernels"
    print(f"us per image ({what}, {ns.epochs} epochs): total min {total[0]:.1f} median "
          f"{total[len(total) // 2]:.1f}; python min {python[0]:.1f} median "
          f"{python[len(python) // 2]:.1f}")


if __name__ == "__main__":
    main()
