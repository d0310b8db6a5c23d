"""The cases of ``benchmarks/gpu_check.py``: random kernel cases, the race, graph and interop
checks, the throughput runs. Every function works on a real GPU (cupy) and on the fake GPU
(a dry run), through the public ``ndd`` API on GPU batches."""
from __future__ import annotations

import pathlib
import tempfile
import time

import numpy as np

import ndd
from compiler.schema import REGISTRY
from pipelines import MEAN, PIPELINES, STD
from ndd._evaluate import last_plan
from runtime.gpu import capture, moves, runner, state
from runtime.kernels.registry import KERNELS
from runtime.storage import DeviceSamples


# --------------------------------------------------------------------------- the GPU ops
def gpu_ops() -> set:
    """Ops with a registered GPU kernel (the GPU catalogue imported)."""
    runner.load_gpu_kernels()
    return {op for op, dev in KERNELS if dev == "gpu"}


def enable_gpu_ops(log) -> list:
    """Declare ``"gpu"`` on the schemas of the ops whose GPU kernels are registered but whose
    schema does not (for this run; the schemas declare it, so this lists what is missing)."""
    added = []
    for op in sorted(gpu_ops()):
        schema = REGISTRY.get(op)
        if schema is not None and "gpu" not in schema.devices:
            schema.devices = tuple(schema.devices) + ("gpu",)
            added.append(op)
    log(f"GPU kernels registered, enabled for this run: {', '.join(added) or 'none'}")
    return added


def compile_module():
    from runtime.kernels.gpu import compile as cc     # the GPU kernels' compile helpers
    return cc


# --------------------------------------------------------------------------- exact cases
def _images(rng, n, dtype, allow_empty=True):
    out = []
    for _ in range(n):
        h, w = (int(v) for v in rng.integers(1, 41, 2))
        if allow_empty and rng.random() < 0.08:
            h = 0
        if dtype == np.uint8:
            out.append(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        elif dtype == np.int16:
            out.append(rng.integers(-3000, 3000, (h, w, 3)).astype(np.int16))
        else:
            out.append((rng.standard_normal((h, w, 3)) * 100).astype(dtype))
    return out


def _case(rng, op):
    """``(description, batch samples, fn(batch) -> Batch)`` of one random case of ``op``."""
    n = int(rng.integers(1, 6))
    dtype = [np.uint8, np.float32, np.int16][int(rng.integers(0, 3))]
    imgs = _images(rng, n, dtype)
    if op == "flip":
        kw = {"horizontal": int(rng.integers(0, 2)), "vertical": int(rng.integers(0, 2))}
        return f"flip{kw}", imgs, lambda b: ndd.flip(b, **kw)
    if op == "crop":
        kw = {"crop": (int(rng.integers(1, 48)), int(rng.integers(1, 48))),
              "crop_pos_x": float(rng.random()), "crop_pos_y": float(rng.random())}
        if rng.random() < 0.5:
            kw["out_of_bounds_policy"] = "pad"
            kw["fill_values"] = [float(v) for v in rng.integers(0, 200, 3)]
        return f"crop{kw}", imgs, lambda b: ndd.crop(b, **kw)
    if op == "cast":
        to = [ndd.uint8, ndd.int16, ndd.int32, ndd.float32, ndd.float16][int(rng.integers(0, 5))]
        return f"cast({to})", imgs, lambda b: ndd.cast(b, dtype=to)
    if op == "transpose":
        perm = [int(v) for v in rng.permutation(3)]
        return f"transpose{perm}", imgs, lambda b: ndd.transpose(b, perm=perm)
    if op == "crop_mirror_normalize":
        mirror = ndd.batch([np.int32(v) for v in rng.integers(0, 2, n)])
        kw = {"crop": (int(rng.integers(1, 40)), int(rng.integers(1, 40))),
              "mean": [float(v) for v in rng.uniform(0, 128, 3)],
              "std": [float(v) for v in rng.uniform(1, 80, 3)],
              "output_layout": ["CHW", "HWC"][int(rng.integers(0, 2))],
              "dtype": [ndd.float32, ndd.float16][int(rng.integers(0, 2))]}
        return (f"crop_mirror_normalize{kw}", imgs,
                lambda b: ndd.crop_mirror_normalize(b, mirror=mirror, **kw))
    if op == "resize":
        interp = [ndd.types.INTERP_LINEAR, ndd.types.INTERP_NN, ndd.types.INTERP_CUBIC,
                  ndd.types.INTERP_LANCZOS3][int(rng.integers(0, 4))]
        kw = {"resize_x": int(rng.integers(1, 60)), "resize_y": int(rng.integers(1, 60)),
              "interp_type": interp, "antialias": bool(rng.integers(0, 2))}
        return f"resize{kw}", imgs, lambda b: ndd.resize(b, **kw)
    if op == "random_resized_crop":
        seed = int(rng.integers(0, 1 << 30))
        size = (int(rng.integers(1, 50)), int(rng.integers(1, 50)))
        return (f"random_resized_crop(size={size}, seed={seed})", imgs,
                lambda b: ndd.random_resized_crop(b, size=size, rng=ndd.random.RNG(seed)))
    if op == "arithmetic":
        k, c = float(rng.uniform(-3, 3)), int(rng.integers(-50, 50))
        return f"x * {k} + {c}", imgs, lambda b: b * k + c
    return None


def _outcome(fn, batch):
    try:
        out = fn(batch)
        if out.device.kind == "gpu":
            out = out.cpu()
        return "ok", [np.asarray(t) for t in out.tensors]
    except Exception as exc:  # noqa: BLE001 - the GPU must fail as the CPU does
        return "error", type(exc).__name__


#: the GPU ops :func:`_case` makes API-level cases of: those that must be bit-exact through the
#: whole path (resize and random_resized_crop have documented tolerances: the kernel cases of
#: ``runtime/kernels/gpu/cases.py`` check them)
CASE_OPS = {"flip", "crop", "cast", "transpose", "crop_mirror_normalize", "arithmetic"}


def kernel_cases(n: int, seed: int, log) -> dict:
    """``runtime/kernels/gpu/cases.py``'s ``n`` cases (every GPU kernel family, with their
    documented tolerances), each run on the CPU kernel and on the GPU kernel in this runtime's
    context on lane 0's stream."""
    import runtime.kernels.cpu.catalog  # noqa: F401 - the CPU references
    from runtime.kernels.gpu import cases as kc
    runner.load_gpu_kernels()
    st = state.current()
    stream = st.lane_stream(0, 0)

    def make(pool, in_metas, out_metas, names, count, op):
        return runner.GpuKernelContext(pool=pool, in_metas=in_metas, out_metas=out_metas,
                                       tensor_arg_names=names, batch_size=count, op=op,
                                       stream=stream, gpu=st.api, device=0, state=st)

    def to_device(x):
        return moves.to_device([np.asarray(x)], 0, stream)[0]

    def to_host(g):
        return np.asarray(moves.to_host(DeviceSamples([g], 0, stream, None))[0])
    on_device = st.api.name == "cupy"
    failures, per_op = [], {}
    for case in kc.cases(n, seed):
        try:
            want, got = kc.run_case(case, make, to_device, to_host)
            msg = kc.check_case(case, want, got, on_device=on_device)
        except Exception as exc:  # noqa: BLE001 - a case that crashes is a failure
            msg = f"{case.name}: {type(exc).__name__}: {exc}"
        per_op[case.op] = per_op.get(case.op, 0) + (msg is None)
        if msg is not None:
            failures.append(msg)
            log(f"   DIFFERS: {msg}")
    return {"cases": n, "passed": n - len(failures), "per_op": per_op, "failures": failures}


def run_exact_cases(n: int, seed: int, log) -> dict:
    """``n`` random cases over the GPU ops; each compares the GPU result with the CPU kernel's
    bit for bit (an error on the CPU must be the same error type on the GPU)."""
    rng = np.random.default_rng(seed)
    ops = sorted(op for op in gpu_ops() if op in CASE_OPS)
    if not ops:
        raise RuntimeError("no GPU kernel is registered")
    failures, per_op, passed = [], {}, 0
    for i in range(n):
        op = ops[i % len(ops)]
        desc, imgs, fn = _case(rng, op)
        b = ndd.batch(imgs, layout="HWC")
        want = _outcome(fn, b)
        got = _outcome(fn, b.gpu())
        same = want[0] == got[0] and (
            want[1] == got[1] if want[0] == "error" else
            len(want[1]) == len(got[1]) and all(
                w.dtype == g.dtype and w.shape == g.shape
                and np.array_equal(w, g, equal_nan=w.dtype.kind == "f")
                for w, g in zip(want[1], got[1])))
        per_op[op] = per_op.get(op, 0) + (1 if same else 0)
        if same:
            passed += 1
        else:
            failures.append(f"case {i}: {desc} on {[x.shape for x in imgs]} {imgs[0].dtype}: "
                            f"cpu {want[0]}, gpu {got[0]}")
            log(f"   DIFFERS: {failures[-1]}")
    return {"cases": n, "passed": passed, "per_op": per_op, "failures": failures}


def _fused_chains(rng):
    """``(name, fn(batch) -> Batch, exact_vs_cpu)`` of the chains the compiler fuses on the GPU
    (``compiler/fusion_rules_gpu.py``)."""
    mirror = ndd.batch([np.int32(v) for v in rng.integers(0, 2, 4)])
    kw = dict(mean=MEAN, std=STD)
    return [
        ("flip->cmn", lambda b: ndd.crop_mirror_normalize(ndd.flip(b), **kw), True),
        ("brightness_contrast->cmn", lambda b: ndd.crop_mirror_normalize(
            ndd.brightness_contrast(b, brightness=1.3, contrast=0.8), mirror=mirror,
            crop=(20, 16), **kw), True),
        ("hsv->cmn", lambda b: ndd.crop_mirror_normalize(
            ndd.hsv(b, hue=30.0, saturation=1.2), dtype=ndd.float16, **kw), True),
        ("hsv->brightness_contrast->cmn", lambda b: ndd.crop_mirror_normalize(
            ndd.brightness_contrast(ndd.hsv(b, hue=-20.0, saturation=1.3), brightness=1.1,
                                    contrast=0.9), mirror=mirror, **kw), True),
        ("elementwise", lambda b: ndd.cast(b * 0.75 + 5, dtype=ndd.uint8) - 3, True),
        ("rrc->cmn", lambda b: ndd.crop_mirror_normalize(
            ndd.random_resized_crop(b, size=(24, 20), rng=ndd.random.RNG(3)), mirror=mirror,
            **kw), False),
    ]


def fused_cases(seed: int, log) -> dict:
    """The GPU-fused chains in deferred mode on GPU batches (one fused GPU node each) against
    the unfused chain: the CPU's (bit for bit), or for rrc -> cmn (the CPU's uint8 resize fast
    path differs by 1) the unfused GPU kernels' in eager mode."""
    rng = np.random.default_rng(seed + 7)
    imgs = [rng.integers(0, 256, (int(rng.integers(24, 60)), int(rng.integers(24, 60)), 3),
                         dtype=np.uint8) for _ in range(4)]
    b = ndd.batch(imgs, layout="HWC")
    failures, done = [], {}
    for name, fn, vs_cpu in _fused_chains(rng):
        with ndd.EvalMode.deferred:
            out = fn(b.gpu())
            got = [np.asarray(t) for t in out.cpu().tensors]
            plan = last_plan()
        fused = [s.node.op for s in plan.steps if s.node.device.kind == "gpu"]
        ref = fn(b) if vs_cpu else fn(b.gpu()).cpu()
        want = [np.asarray(t) for t in ref.tensors]
        same = len(want) == len(got) and all(
            w.dtype == g.dtype and w.shape == g.shape and np.array_equal(w, g)
            for w, g in zip(want, got))
        done[name] = {"gpu_nodes": fused, "exact": same}
        if not same:
            failures.append(f"fused {name}: differs from the unfused chain")
            log(f"   DIFFERS: fused {name} ({fused})")
        if len(fused) != 1:
            failures.append(f"fused {name}: {fused} (expected one fused GPU node)")
    return {"chains": done, "failures": failures}


#: GPU vs CPU JPEG decode: IDCT and chroma upsampling differ between nvJPEG and libjpeg-turbo
#: by a few levels (nvImageCodec's own tests allow a small mean and a bounded maximum)
DECODE_MEAN_TOL, DECODE_MAX_TOL = 1.5, 48


def decode_cases(ops, seed, log, images: int = 64, exact: bool = False, limit: int = 64) -> dict:
    """``decoders.image`` on the GPU against the CPU on the first ``limit`` sample photos (of
    the ``images`` the throughput step uses), per GPU backend setting (``hw_decoder_load`` 0:
    the CUDA decoder; the default split with the hardware decoder where the GPU has one), the
    backend that ran recorded; ``exact``: bit for bit (the fake GPU's CPU decode + copy). Then
    ``decoders.image_crop`` / ``image_random_crop`` on the GPU (their regions), likewise."""
    from runtime.kernels.gpu import decode as gpu_decode
    root = _photos(images)
    files = sorted(pathlib.Path(root).rglob("*.jpg"))[:limit]
    enc = ndd.batch([np.fromfile(f, np.uint8) for f in files])
    cpu = [np.asarray(t) for t in ndd.decoders.image(enc).tensors]
    out, failures, backends = {}, [], {}
    mean_tol, max_tol = (0.0, 0) if exact else (DECODE_MEAN_TOL, DECODE_MAX_TOL)
    for name, kw in (("default", {}), ("cuda", {"hw_decoder_load": 0.0})):
        got = [np.asarray(t) for t in ndd.decoders.image(enc, device="gpu", **kw)
               .cpu().tensors]
        backends[name] = gpu_decode.last_backend()
        worst = []
        for f, c, g in zip(files, cpu, got):
            if c.shape != g.shape:
                failures.append(f"{name}: {f.name} shape {g.shape} != {c.shape}")
                continue
            d = np.abs(c.astype(np.int16) - g.astype(np.int16))
            worst.append((float(d.mean()), int(d.max())))
            if d.mean() > mean_tol or d.max() > max_tol:
                failures.append(f"{name}: {f.name} mean {d.mean():.2f} max {d.max()}")
        out[name] = {"images": len(worst), "backend": backends[name],
                     "mean_abs": max((w[0] for w in worst), default=0),
                     "max_abs": max((w[1] for w in worst), default=0)}
        log(f"   decode {name}: {out[name]}")
    for op, kw in (("image_crop", {"crop": (64, 48), "crop_pos_x": 0.3}),
                   ("image_random_crop", {}),
                   ("image_slice", {"rel_start": [0.1, 0.2], "rel_end": [0.7, 0.9],
                                    "axis_names": "HW"})):
        if f"decoders.{op}" not in ops:
            continue
        fn = getattr(ndd.decoders, op)
        want = fn(enc, rng=ndd.random.RNG(seed + 1), **kw) if not kw else fn(enc, **kw)
        got = (fn(enc, device="gpu", rng=ndd.random.RNG(seed + 1), **kw) if not kw
               else fn(enc, device="gpu", **kw)).cpu()
        backends[op] = gpu_decode.last_backend()
        worst = (0.0, 0)
        for f, w, g in zip(files, want.tensors, got.tensors):
            w, g = np.asarray(w), np.asarray(g)
            if w.shape != g.shape:
                failures.append(f"decoders.{op}: {f.name} shape {g.shape} != {w.shape}")
                continue
            d = np.abs(w.astype(np.int16) - g.astype(np.int16))
            worst = (max(worst[0], float(d.mean())), max(worst[1], int(d.max())))
            if d.mean() > mean_tol or d.max() > max_tol:
                failures.append(f"decoders.{op}: {f.name} mean {d.mean():.2f} max {d.max()}")
        out[op] = {"backend": backends[op], "mean_abs": worst[0], "max_abs": worst[1]}
        log(f"   decoders.{op}: {out[op]}")
    out["backends"] = backends
    out["failures"] = failures
    out["encoded"] = enc
    return out


# --------------------------------------------------------------------------- streams
def race_cases(iters: int, size, seed: int) -> dict:
    """``flip(x)`` and ``cast(x)`` fan out of one transfer onto two lanes (streams) and are
    joined by an addition; fresh data every iteration, buffers recycled across the streams."""
    rng = np.random.default_rng(seed)
    failures = []
    for i in range(iters):
        imgs = [rng.integers(0, 256, (*size, 3), dtype=np.uint8) for _ in range(4)]
        with ndd.EvalMode.deferred:
            b = ndd.batch(imgs, layout="HWC")
            a = ndd.flip(b, horizontal=1, device="gpu")
            c = ndd.cast(b, dtype=ndd.float32, device="gpu")
            out = ndd.cast(a, dtype=ndd.float32) + c
            got = [np.asarray(t) for t in out.cpu().tensors]
        for k, (g, x) in enumerate(zip(got, imgs)):
            want = x[:, ::-1].astype(np.float32) + x.astype(np.float32)
            if not np.array_equal(g, want):
                failures.append(f"iteration {i} sample {k} differs")
    lanes = {lane for (dev, lane) in state.current().lane_streams()}
    return {"iterations": iters, "size": list(size), "lanes": sorted(lanes),
            "pool_waits": state.current().pool.waits, "failures": failures}


def graph_cases(n: int, size, batch: int, seed: int) -> dict:
    """flip -> crop_mirror_normalize (per-sample mirror) captured and replayed, each batch
    compared with the CPU."""
    rng = np.random.default_rng(seed)
    failures = []
    capture.set_enabled(True)
    try:
        for i in range(n):
            imgs = [rng.integers(0, 256, (*size, 3), dtype=np.uint8) for _ in range(batch)]
            mirror = ndd.batch([np.int32(v) for v in rng.integers(0, 2, batch)])
            kw = dict(crop=(size[0] // 2, size[1] // 2), mean=MEAN, std=STD, mirror=mirror)
            b = ndd.batch(imgs, layout="HWC")
            want = [np.asarray(t) for t in ndd.crop_mirror_normalize(ndd.flip(b), **kw).tensors]
            with ndd.EvalMode.deferred:
                out = ndd.crop_mirror_normalize(ndd.flip(b, device="gpu"), **kw)
                got = [np.asarray(t) for t in out.cpu().tensors]
            if not all(np.array_equal(w, g) for w, g in zip(want, got)):
                failures.append(f"batch {i} differs")
        stats = dict(capture.cache().stats)
    finally:
        capture.set_enabled(False)
    return {"batches": n, "stats": stats, "failures": failures}


def interop_ordering_fake(fake) -> dict:
    """Dry run: a DLPack consumer's stream waits on the batch's ready event (the fake's log)."""
    t = ndd.tensor(np.arange(16, dtype=np.float32), device="gpu")
    ready = t._value.data.ready
    t.__dlpack__(stream=0x4242)
    consumer = fake.external_stream(0x4242)
    ok = (consumer.name, f"wait e{ready.id}") in fake.log
    return {"consumer_waits_on_ready_event": ok,
            "failures": [] if ok else ["the consumer stream did not wait"]}


SPIN = r"""
extern "C" __global__ void ndd_check_spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}
"""


def interop_slow_producer(seed: int) -> dict:
    """A flip whose stream is held back ~0.2 s by a spinning kernel; ``.torch()`` returns at
    once and torch's sum (on torch's stream) must see the finished result."""
    import cupy
    import torch
    rng = np.random.default_rng(seed)
    imgs = [rng.integers(0, 256, (1024, 1024, 3), dtype=np.uint8) for _ in range(8)]
    want = float(sum(int(x.astype(np.int64).sum()) for x in imgs))
    st = state.current()
    s0 = st.lane_stream(0, 0)
    spin = cupy.RawKernel(SPIN, "ndd_check_spin")
    with ndd.EvalMode.eager:
        x = ndd.batch(imgs, layout="HWC").gpu()
        st.api.sync_stream(s0)
        st.api.launch(spin, (1,), (1,), (np.int64(400_000_000),), s0)
        t0 = time.perf_counter()
        y = ndd.flip(x, horizontal=1)
        t = y.torch()
        handed = time.perf_counter() - t0
        got = float(t.to(torch.int64).sum().item())
    return {"torch_sum": got, "expected": want, "torch_handed_after_s": round(handed, 4),
            "failures": [] if got == want else [f"torch read {got}, expected {want}"]}


# --------------------------------------------------------------------------- throughput
def _photos(n: int) -> pathlib.Path:
    from ndd.datasets.sample import build_sample_dataset
    root = pathlib.Path(tempfile.gettempdir()) / "ndd-gpu-check-photos"
    return build_sample_dataset(root, num_images=n, progress=False, mix="imagenet")


def _gpu_body(pipe, variant):
    """The pipeline with its ops after decode on the GPU: ``"gpu"`` all of them (resize /
    random_resized_crop and crop_mirror_normalize), ``"gpu-cmn"`` only the last one (the
    ``place`` pass copies the decoded batch to the GPU inside the plan); ``"gpu-decode"``
    also the decode (``decoders.image(device="gpu")``, the rest following its device)."""
    first = {"device": "gpu"} if variant == "gpu" else {}
    last = {} if variant in ("gpu", "gpu-decode") else {"device": "gpu"}
    dec = {"device": "gpu"} if variant == "gpu-decode" else {}

    def train(mod, jpegs, batch_size):
        images = mod.decoders.image(jpegs, **dec)
        images = mod.random_resized_crop(images, size=(224, 224), **first)
        flip = mod.random.coin_flip(batch_size=batch_size, probability=0.5)
        return mod.crop_mirror_normalize(images, mirror=flip, mean=MEAN, std=STD,
                                         dtype=mod.float32, output_layout="CHW", **last)

    def val(mod, jpegs, batch_size):
        images = mod.resize(mod.decoders.image(jpegs, **dec), resize_shorter=256, **first)
        return mod.crop_mirror_normalize(images, crop=(224, 224), mean=MEAN, std=STD, **last)
    return {"train": train, "val": val}[pipe]


def variants() -> list:
    """The throughput variants the registered GPU kernels allow: ``gpu`` (CPU decode, the
    rest on the GPU), ``gpu-decode`` (everything on the GPU, decode included: issue 15's
    target pipeline)."""
    ops = gpu_ops()
    out = ["cpu"]
    if {"resize", "random_resized_crop", "crop_mirror_normalize"} <= ops:
        out.append("gpu")
        if "decoders.image" in ops:
            out.append("gpu-decode")
    elif "crop_mirror_normalize" in ops:
        out.append("gpu-cmn")
    return out


def _body(pipe, variant):
    if variant != "cpu":
        return _gpu_body(pipe, variant)
    fn = PIPELINES[pipe]
    return (lambda mod, jpegs, bs: fn(mod, jpegs, bs)) if pipe == "train" else \
        (lambda mod, jpegs, bs: fn(mod, jpegs))


def _sync():
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 - CPU-only torch
        pass


def _measure(root, pipe, mode, batch, variant) -> float:
    body = _body(pipe, variant)
    reader = ndd.readers.File(file_root=str(root), random_shuffle=False)
    compiled = mode.startswith("compile")
    capture.set_enabled(mode == "compile+graphs")
    times = []
    try:
        ctx = ndd.EvalMode.deferred if mode == "deferred" else ndd.EvalMode.eager
        with ctx:
            t0 = time.perf_counter()
            for jpegs, _ in reader.next_epoch(batch_size=batch, compile=compiled):
                out = body(ndd, jpegs, batch)
                if out.device.kind == "cpu" and _has_gpu():
                    out = out.gpu()                 # what a training step reads
                if out.device.kind == "gpu" and state.current().api.name == "cupy":
                    out.torch()
                else:
                    out.evaluate()
                _sync()
                t1 = time.perf_counter()
                times.append(t1 - t0)
                t0 = t1
    finally:
        capture.set_enabled(False)
    timed = times[1:] or times          # the first batch traces / compiles / warms up
    return round(batch * len(timed) / sum(timed), 1)


def _has_gpu() -> bool:
    from runtime import device as devices
    return devices.gpu_available()


def _torchvision(root, pipe, batch) -> float:
    import torch
    import torchvision
    from torchvision.transforms import v2
    files = sorted(p for p in pathlib.Path(root).rglob("*.jpg"))
    mean = torch.tensor(MEAN, device="cuda").view(1, 3, 1, 1)
    std = torch.tensor(STD, device="cuda").view(1, 3, 1, 1)
    if pipe == "train":
        per = v2.Compose([v2.RandomResizedCrop((224, 224), antialias=True),
                          v2.RandomHorizontalFlip(0.5)])
    else:
        per = v2.Compose([v2.Resize(256, antialias=True), v2.CenterCrop(224)])
    times = []
    t0 = time.perf_counter()
    for start in range(0, len(files) - batch + 1, batch):
        data = [torchvision.io.read_file(str(f)) for f in files[start:start + batch]]
        imgs = torchvision.io.decode_jpeg(data, device="cuda")
        x = torch.stack([per(im) for im in imgs]).float()
        x = (x - mean) / std
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        times.append(t1 - t0)
        t0 = t1
    timed = times[1:] or times
    return round(batch * len(timed) / sum(timed), 1)


def throughput(args, log, left) -> dict:
    """img/s of the train and val pipelines per mode (and with the GPU tail), and torchvision's
    GPU decode + transforms v2 on the same photos."""
    root = _photos(args.images)
    out = {"batch": args.batch, "images": args.images, "img_s": {}}
    for pipe in ("train", "val"):
        for variant in variants():
            for mode in ("eager", "deferred", "compile", "compile+graphs"):
                key = f"{pipe}/{variant}/{mode}"
                if left() < 30:
                    out.setdefault("skipped", []).append(f"{key}: time budget")
                    continue
                out["img_s"][key] = _measure(root, pipe, mode, args.batch, variant)
                log(f"   {key}: {out['img_s'][key]} img/s")
        if args.dry_run or not _has_gpu():
            out["img_s"][f"{pipe}/torchvision"] = "skipped: no CUDA (dry run)"
        elif left() > 20:
            out["img_s"][f"{pipe}/torchvision"] = _torchvision(root, pipe, args.batch)
            log(f"   {pipe}/torchvision: {out['img_s'][f'{pipe}/torchvision']} img/s")
    return out
