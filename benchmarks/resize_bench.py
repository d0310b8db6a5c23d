"""Speed of the CPU resize kernel (one thread), ndd vs DALI 2.4 when installed.

Run: ``python benchmarks/resize_bench.py``.  Prints milliseconds per image (median of runs).
"""
import time

import numpy as np
import torch

from runtime.kernels.cpu.resize import resize


def _time(fn, reps=50):
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def main():
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (400, 400, 3), dtype=np.uint8)
    cases = [
        ("uint8 400x400 -> 224x224 linear aa", dict(size=(224, 224))),
        ("uint8 400x400 -> 224x224 cubic aa", dict(size=(224, 224), interp_type="cubic")),
        ("uint8 400x400 -> 224x224 lanczos3", dict(size=(224, 224), interp_type="lanczos3")),
        ("uint8 400x400 -> 224x224 nn", dict(size=(224, 224), interp_type="nn")),
        ("uint8 400x400 -> 800x800 linear", dict(size=(800, 800))),
        ("uint8 400x400 -> resize_shorter=256", dict(resize_shorter=256)),
    ]
    try:
        import nvidia.dali.experimental.dynamic as dalidyn
        import nvidia.dali.types as types
        interp = {None: types.INTERP_LINEAR, "cubic": types.INTERP_CUBIC,
                  "lanczos3": types.INTERP_LANCZOS3, "nn": types.INTERP_NN}
    except ImportError:
        dalidyn = None
    print(f"{'case':42s} {'ndd ms':>8s} {'DALI ms':>8s}")
    for name, kw in cases:
        ours = _time(lambda: resize(img, **kw))
        ref = float("nan")
        if dalidyn is not None:
            dkw = dict(kw)
            dkw["interp_type"] = interp[dkw.get("interp_type")]
            t = dalidyn.as_tensor(img, layout="HWC")
            ref = _time(lambda: np.asarray(dalidyn.resize(t, **dkw)), reps=20)
        print(f"{name:42s} {ours:8.3f} {ref:8.3f}")


if __name__ == "__main__":
    main()
