"""The fused-decode check of ``benchmarks/gpu_check.py`` (its ``decode`` step): the train and
val chains with ``decoders.image(device="gpu")`` in deferred mode, where the compiler fuses the
decode with what follows (``compiler/fusion_rules_gpu.py``: one ``fused.image`` GPU node that
decodes only the box its resize reads, ``runtime/kernels/gpu/fused.py``), against the same
chains with fusion off (whole-image GPU decode, then the ops one by one).

On the fake GPU (a dry run: the CPU's region decode) the two are equal bit for bit; on a device
nvImageCodec's region decode may differ from its whole-image decode by the codec's tolerance
(IDCT / chroma upsampling at the region's edge), so the difference is bounded by the decode
tolerance divided by the normalization's std.
"""
from __future__ import annotations

import numpy as np

import ndd
from compiler.pipeline import set_options
from ndd._evaluate import last_plan

#: mean / std of the normalization in the chains (ImageNet's, in 0..255 units)
MEAN, STD = [0.485 * 255, 0.456 * 255, 0.406 * 255], [0.229 * 255, 0.224 * 255, 0.225 * 255]


def _chains(n: int, seed: int):
    """``(name, fn(encoded batch) -> Batch, expected stages)`` of the chains checked."""
    mirror = ndd.batch([np.int32(v) for v in np.random.default_rng(seed).integers(0, 2, n)])

    def train(enc):
        img = ndd.decoders.image(enc, device="gpu")
        img = ndd.random_resized_crop(img, size=(224, 224), rng=ndd.random.RNG(seed))
        return ndd.crop_mirror_normalize(img, mirror=mirror, mean=MEAN, std=STD)

    def val(enc):
        img = ndd.decoders.image(enc, device="gpu")
        img = ndd.resize(img, resize_shorter=256)
        return ndd.crop_mirror_normalize(img, crop=(224, 224), mean=MEAN, std=STD)
    return [("decode->rrc->cmn", train, ["decode", "rrc", "cmn"]),
            ("decode->resize->cmn", val, ["decode", "resize", "cmn"])]


def _deferred(fn, enc, fuse: bool):
    set_options(disable=() if fuse else ("fuse",))
    try:
        with ndd.EvalMode.deferred:
            out = [np.asarray(t) for t in fn(enc).cpu().tensors]
            plan = last_plan()
    finally:
        set_options(disable=())
    return out, plan


def fused_decode_cases(enc, exact: bool, log, seed: int = 0, max_tol: float = 48.0,
                       mean_tol: float = 1.5) -> dict:
    """Each chain of :func:`_chains` on the encoded batch ``enc``, fused vs unfused; ``exact``:
    bit for bit, else within ``max_tol`` / ``mean_tol`` decode levels (divided by the smallest
    std). Returns ``{"chains": {name: {...}}, "failures": [...]}``."""
    from runtime.kernels.gpu import decode as gpu_decode
    out, failures = {}, []
    scale = 1.0 / min(STD)
    for name, fn, stages in _chains(len(enc), seed):
        fused, plan = _deferred(fn, enc, True)
        backend = gpu_decode.last_backend()
        nodes = [(s.node.op, [st.name for st in s.node.args.get("stages", ())])
                 for s in plan.steps if s.node.device.kind == "gpu"]
        unfused, _ = _deferred(fn, enc, False)
        worst = (0.0, 0.0)
        for k, (f, u) in enumerate(zip(fused, unfused)):
            if f.shape != u.shape or f.dtype != u.dtype:
                failures.append(f"fused {name}: sample {k} {f.shape} {f.dtype} != "
                                f"{u.shape} {u.dtype}")
                continue
            d = np.abs(f.astype(np.float64) - u.astype(np.float64))
            worst = (max(worst[0], float(d.mean())), max(worst[1], float(d.max())))
        if exact and worst != (0.0, 0.0):
            failures.append(f"fused {name}: differs from the unfused chain {worst}")
        elif worst[0] > mean_tol * scale or worst[1] > max_tol * scale:
            failures.append(f"fused {name}: mean {worst[0]:.4f} max {worst[1]:.4f} beyond the "
                            f"decode tolerance")
        if nodes != [("fused.image", stages)]:
            failures.append(f"fused {name}: GPU nodes {nodes} (expected one fused.image "
                            f"{stages})")
        out[name] = {"gpu_nodes": nodes, "backend": backend, "mean_abs": worst[0],
                     "max_abs": worst[1]}
        log(f"   fused {name}: {out[name]}")
    return {"chains": out, "failures": failures}
