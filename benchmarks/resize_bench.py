"""Speed of the CPU resize kernel (one thread), ndd vs DALI 2.4 when installed.

Run: ``python benchmarks/resize_bench.py``.  Prints milliseconds per image: the minimum over
repeats (the machine may be shared; the minimum is the least noisy estimate).

Cases: the training crop (random-resized-crop windows of a ~400x400 photo -> 224x224, a new
window every call so that per-window tables are rebuilt), the validation resize
(``resize_shorter=256`` of a 400x350 photo) and a few fixed-size resizes.
"""
import time

import numpy as np
import torch

from runtime.kernels.cpu.resize import resize, resize_output_shape, separable


def _time(fn, reps=60):
    fn()
    best = float("inf")
    for i in range(reps):
        t0 = time.perf_counter()
        fn(i)
        best = min(best, time.perf_counter() - t0)
    return 1e3 * best


def _photo(h, w):
    try:
        from skimage.data import astronaut
        img = astronaut()
        ys = np.linspace(0, img.shape[0] - 1, h).round().astype(int)
        xs = np.linspace(0, img.shape[1] - 1, w).round().astype(int)
        return np.ascontiguousarray(img[ys][:, xs])
    except ImportError:
        return np.random.default_rng(0).integers(0, 256, (h, w, 3), dtype=np.uint8)


def _rrc_windows(h, w, n, seed=0, integer=True):
    """Random-resized-crop windows (scale 0.08..1, aspect 3/4..4/3).

    Integer corners (as ``random_resized_crop`` draws them) or, with ``integer=False``,
    float corners (which take the exact float32 path).
    """
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        area = h * w * rng.uniform(0.08, 1.0)
        ratio = np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3)))
        cw, ch = np.sqrt(area * ratio), np.sqrt(area / ratio)
        if integer:
            cw, ch = max(1, round(cw)), max(1, round(ch))
        if cw <= w and ch <= h:
            y0, x0 = rng.uniform(0, h - ch), rng.uniform(0, w - cw)
            if integer:
                y0, x0 = int(y0), int(x0)
            out.append(((y0, x0), (y0 + ch, x0 + cw)))
    return out


def _exact(image, interp_type="linear", **size_args):
    """The float32 sparse-matrix path alone (what ``resize`` did before the uint8 fast path)."""
    p = resize_output_shape(image.shape[:2], **size_args)
    if interp_type == "nn":
        return resize(image, interp_type="nn", **size_args)
    return separable(image, p.out_h, p.out_w, p, interp_type, interp_type, True, image.dtype)


def main():
    torch.set_num_threads(1)
    img = _photo(400, 400)
    val = _photo(400, 350)
    wins = _rrc_windows(400, 400, 64)
    fwins = _rrc_windows(400, 400, 64, integer=False)

    def rrc(windows=wins, **kw):
        return lambda i=0: dict(size=(224, 224), roi_start=windows[i % 64][0],
                                roi_end=windows[i % 64][1], **kw)

    def fixed(**kw):
        return lambda i=0: kw

    cases = [
        ("RRC 400x400 -> 224x224 linear aa", img, rrc()),
        ("RRC float window -> 224x224 linear aa", img, rrc(fwins)),
        ("RRC 400x400 -> 224x224 cubic aa", img, rrc(interp_type="cubic")),
        ("val 400x350 resize_shorter=256 linear", val, fixed(resize_shorter=256)),
        ("val 400x350 resize_shorter=256 cubic", val, fixed(resize_shorter=256,
                                                           interp_type="cubic")),
        ("400x400 -> 224x224 linear aa", img, fixed(size=(224, 224))),
        ("400x400 -> 224x224 cubic aa", img, fixed(size=(224, 224), interp_type="cubic")),
        ("400x400 -> 224x224 lanczos3", img, fixed(size=(224, 224), interp_type="lanczos3")),
        ("400x400 -> 224x224 nn", img, fixed(size=(224, 224), interp_type="nn")),
        ("400x400 -> 800x800 linear", img, fixed(size=(800, 800))),
        ("val 375x500 resize_shorter=256 linear", _photo(375, 500), fixed(resize_shorter=256)),
    ]
    try:
        import nvidia.dali.experimental.dynamic as dalidyn
        import nvidia.dali.types as types
        interp = {None: types.INTERP_LINEAR, "cubic": types.INTERP_CUBIC,
                  "lanczos3": types.INTERP_LANCZOS3, "nn": types.INTERP_NN}
    except ImportError:
        dalidyn = None
    print(f"{'case (uint8 HWC, one thread)':42s} {'ndd ms':>8s} {'exact ms':>8s} "
          f"{'DALI ms':>8s}")
    for name, image, args in cases:
        ours = _time(lambda i=0: resize(image, **args(i)))
        exact = _time(lambda i=0: _exact(image, **args(i)))
        ref = float("nan")
        if dalidyn is not None:
            t = dalidyn.as_tensor(image, layout="HWC")

            def dali_call(i=0):
                dkw = dict(args(i))
                dkw["interp_type"] = interp[dkw.get("interp_type")]
                return np.asarray(dalidyn.resize(t, **dkw))
            ref = _time(dali_call, reps=20)
        print(f"{name:42s} {ours:8.3f} {exact:8.3f} {ref:8.3f}")


if __name__ == "__main__":
    main()
