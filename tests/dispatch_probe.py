"""Runs every op family on fixed inputs and prints one SHA-256 digest per output (JSON).

``tests/test_cpu_independence.py`` runs this script in subprocesses whose numpy, torch, numba
and libjpeg-turbo are forced onto other code paths (AVX2 instead of AVX-512, or no SIMD
dispatch at all) and asserts the digests are the same: what one CPU computes, every x86-64 CPU
computes. Inputs are real photos (scikit-image) and seeded random values; nothing here depends
on the machine except the code paths under test.

Usage: ``python tests/dispatch_probe.py`` -> ``{"name": "sha256", ...}`` on stdout.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import sys

# run as a script, this folder would come first on sys.path and tests/ndd/ would shadow ndd
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import numpy as np  # noqa: E402


def _digest(x) -> str:
    a = np.ascontiguousarray(np.asarray(x))
    h = hashlib.sha256(a.dtype.str.encode() + repr(a.shape).encode())
    h.update(a.tobytes())
    return h.hexdigest()


def _photos() -> list[np.ndarray]:
    from skimage import data
    return [np.ascontiguousarray(p[30:30 + h, 50:50 + w])
            for p, (h, w) in zip((data.astronaut(), data.chelsea(), data.coffee()),
                                 ((97, 131), (120, 90), (64, 200)))]


def _encoded(photos) -> dict[str, list[bytes]]:
    from PIL import Image
    out: dict[str, list[bytes]] = {"jpeg": [], "jpeg444": [], "progressive": [], "png": []}
    for p in photos:
        for kind, opts in (("jpeg", {"quality": 90}), ("jpeg444", {"quality": 95,
                                                                    "subsampling": 0}),
                           ("progressive", {"quality": 85, "progressive": True})):
            buf = io.BytesIO()
            Image.fromarray(p).save(buf, format="JPEG", **opts)
            out[kind].append(buf.getvalue())
        buf = io.BytesIO()
        Image.fromarray(p).save(buf, format="PNG")
        out["png"].append(buf.getvalue())
    return out


def probe() -> dict[str, str]:
    import ndd
    from compiler import promotion

    res: dict[str, str] = {}
    photos = _photos()
    images = ndd.batch(photos, layout="HWC")
    rng = np.random.default_rng(20261201)

    with ndd.EvalMode.sync_cpu:
        # decoding: libjpeg-turbo's SIMD (IDCT, upsampling, colour conversion) and PNG
        for kind, files in _encoded(photos).items():
            enc = ndd.batch([np.frombuffer(f, np.uint8) for f in files])
            for i, t in enumerate(ndd.decoders.image(enc).tensors):
                res[f"decode/{kind}/{i}"] = _digest(t)
            crop = ndd.decoders.image_crop(enc, crop=(40, 50), crop_pos_x=0.3, crop_pos_y=0.6)
            for i, t in enumerate(crop.tensors):
                res[f"decode_crop/{kind}/{i}"] = _digest(t)

        # resampling: every filter, up and down, uint8 and float, with and without antialias
        floats = ndd.cast(images, dtype=ndd.float32) * (1.0 / 255.0)
        for interp in ("INTERP_NN", "INTERP_LINEAR", "INTERP_CUBIC", "INTERP_LANCZOS3",
                       "INTERP_GAUSSIAN", "INTERP_TRIANGULAR"):
            for size in ((57, 61), (211, 150)):
                for aa in (True, False):
                    for name, src in (("u8", images), ("f32", floats)):
                        out = ndd.resize(src, size=size, antialias=aa,
                                         interp_type=getattr(ndd.types, interp))
                        for i, t in enumerate(out.tensors):
                            res[f"resize/{interp}/{size}/{aa}/{name}/{i}"] = _digest(t)

        # crop, flip, normalize (float32 and float16 output), fused-style chains
        for dtype in (ndd.float32, ndd.float16):
            out = ndd.crop_mirror_normalize(
                images, crop=(48, 48), mirror=1, dtype=dtype,
                mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                std=[0.229 * 255, 0.224 * 255, 0.225 * 255])
            for i, t in enumerate(out.tensors):
                res[f"cmn/{dtype}/{i}"] = _digest(t)
        rrc = ndd.random_resized_crop(images, size=(64, 64),
                                      rng=ndd.random.RNG(seed=7))
        for i, t in enumerate(rrc.tensors):
            res[f"rrc/{i}"] = _digest(t)
        for i, t in enumerate(ndd.flip(images, horizontal=1, vertical=1).tensors):
            res[f"flip/{i}"] = _digest(t)
        # warps, color and noise ops (float32 arithmetic, sqrt, trig of the C library)
        small = ndd.resize(images, size=(48, 64))
        mtx = np.array([[0.9, 0.1, 1.5], [-0.1, 0.9, -2.0]], np.float32)
        for name, out in (
                ("rotate/linear", ndd.rotate(small, angle=33.3)),
                ("rotate/nn_fill", ndd.rotate(small, angle=-70, interp_type="nn", fill_value=9)),
                ("warp_affine", ndd.warp_affine(small, matrix=mtx, inverse_map=False)),
                ("sphere/nn", ndd.sphere(small)),
                ("sphere/linear", ndd.sphere(small, interp_type="linear")),
                ("grid_mask", ndd.grid_mask(small, tile=7, ratio=0.4, angle=0.6,
                                            shift_x=2.5)),
                ("water/nn", ndd.water(small, ampl_x=4.3, freq_y=0.2, phase_x=0.7)),
                ("water/linear", ndd.water(small, ampl_y=-3.1, freq_x=0.3,
                                           interp_type=ndd.types.INTERP_LINEAR)),
                ("warp_perspective/linear", ndd.experimental.warp_perspective(
                    small, matrix=np.array([[0.9, 0.1, 1.5], [-0.1, 0.9, -2.0],
                                            [0.002, 0.001, 1.0]], np.float32))),
                ("warp_perspective/cubic", ndd.experimental.warp_perspective(
                    small, matrix=np.array([[0.9, 0.1, 1.5], [-0.1, 0.9, -2.0],
                                            [0.002, 0.001, 1.0]], np.float32),
                    interp_type="cubic", border_mode="reflect")),
                ("warp_perspective/nn", ndd.experimental.warp_perspective(
                    small, matrix=np.array([[0.9, 0.1, 1.5], [-0.1, 0.9, -2.0],
                                            [0.002, 0.001, 1.0]], np.float32),
                    interp_type="nn", inverse_map=False)),
                ("equalize", ndd.equalize(small)),
                ("clahe/channels", ndd.clahe(small, tiles_x=3, tiles_y=2, clip_limit=2.0,
                                             luma_only=False)),
                ("clahe/luma", ndd.clahe(small, tiles_x=3, tiles_y=2, clip_limit=2.0)),
                ("jpeg_compression_distortion", ndd.jpeg_compression_distortion(small,
                                                                                quality=40)),
                ("hsv/u8", ndd.hsv(small, hue=30.0, saturation=0.7, value=1.2)),
                ("hsv/f32", ndd.hsv(small, hue=-45.0, dtype=ndd.float32)),
                ("brightness_contrast", ndd.brightness_contrast(small, brightness=1.3,
                                                                contrast=0.6,
                                                                brightness_shift=0.05)),
                ("brightness", ndd.brightness(small, brightness=1.3, brightness_shift=0.05)),
                ("contrast", ndd.contrast(small, contrast=0.6, contrast_center=90.0)),
                ("hue", ndd.hue(small, hue=30.0)),
                ("saturation", ndd.saturation(small, saturation=0.4)),
                ("color_twist", ndd.color_twist(small, hue=-30.0, saturation=1.2,
                                                brightness=0.9, contrast=1.1)),
                ("csc/ycbcr", ndd.color_space_conversion(small, image_type="RGB",
                                                         output_type="YCbCr")),
                ("csc/rgb", ndd.color_space_conversion(ndd.color_space_conversion(
                    small, image_type="RGB", output_type="YCbCr"), image_type="YCbCr",
                    output_type="BGR")),
                ("csc/gray", ndd.color_space_conversion(small, image_type="RGB",
                                                        output_type="GRAY")),
                ("noise/gaussian", ndd.noise.gaussian(small, stddev=8.0,
                                                      rng=ndd.random.RNG(seed=3))),
                ("noise/salt_and_pepper", ndd.noise.salt_and_pepper(
                    small, prob=0.1, rng=ndd.random.RNG(seed=3))),
                ("noise/shot", ndd.noise.shot(small, factor=4.0, rng=ndd.random.RNG(seed=3))),
                ("slice/reflect", ndd.slice(small, start=[-5, -3], end=[70, 50],
                                            out_of_bounds_policy="reflect_101")),
                ("gaussian_blur", ndd.gaussian_blur(small, sigma=(0.8, 2.3))),
                ("laplacian", ndd.laplacian(small, window_size=5, smoothing_size=3)),
                ("laplacian/f32", ndd.laplacian(small, window_size=7, normalized_kernel=True,
                                                dtype=ndd.float32)),
                ("filter", ndd.filter(small, ndd.as_tensor(np.array(
                    [[0.1, -0.7, 0.2], [-1.3, 4.9, -0.3]], np.float32)))),
                ("filter/f32", ndd.filter(ndd.cast(small, dtype=ndd.float32) * 0.37,
                                          ndd.as_tensor(np.linspace(-1, 1, 35, dtype=np.float32)
                                                        .reshape(5, 7)), border="wrap")),
                ("median_blur", ndd.experimental.median_blur(small, window_size=5)),
                ("dilate", ndd.experimental.dilate(small, mask_size=(5, 3))),
                ("reductions/std_dev", ndd.reductions.std_dev(
                    small, ndd.reductions.mean(small, axis_names="HW"), axis_names="HW")),
                ("reductions/rms", ndd.reductions.rms(small)),
                ("normalize", ndd.normalize(small, axis_names="HW", batch=True, scale=0.3)),
                ("normalize/given", ndd.normalize(small, mean=101.3, stddev=47.9, shift=0.2)),
                ("tensor_resize/f32", ndd.tensor_resize(ndd.cast(small, dtype=ndd.float32),
                                                        sizes=(23, 41, 5),
                                                        interp_type="cubic")),
                ("resize_crop_mirror", ndd.resize_crop_mirror(small, resize_shorter=37,
                                                              crop=(29, 31), mirror=1))):
            for i, t in enumerate(out.tensors):
                res[f"{name}/{i}"] = _digest(t)
        boxes = ndd.as_tensor(rng.random((64, 4)).astype(np.float32) * 0.5)
        res["bb_flip"] = _digest(ndd.bb_flip(boxes, vertical=1))
        tf = ndd.transforms
        res["transforms"] = _digest(tf.combine(
            tf.rotation(angle=33.3, center=[5, 7]), tf.shear(angles=[12.0, -30.0]),
            tf.crop(from_start=[3, 4], from_end=[50, 70]), tf.scale(scale=[1.3, 0.7],
                                                                   center=[2, 9])))
        res["transforms/3d"] = _digest(tf.rotation(angle=71.0, axis=[1, 2, 3], center=[1, 2, 3]))
        res["coord_transform"] = _digest(ndd.coord_transform(
            ndd.as_tensor(np.random.default_rng(11).normal(0, 50, (300, 3)).astype(np.float32)),
            MT=[0.3, -1.7, 2.2, 5.5, 1.1, 0.25, -0.6, -3.0]))
        # detection box ops (float32 divisions, C's logf in box_encoder's offsets)
        brng = np.random.default_rng(7)
        ltrb = brng.random((240, 4)).astype(np.float32) * 0.5
        ltrb[:, 2:] += ltrb[:, :2] + np.float32(0.05)
        enc, lab = ndd.box_encoder(ndd.as_tensor(ltrb[:12]), ndd.as_tensor(
            np.arange(1, 13, dtype=np.int32)), anchors=ltrb[12:].reshape(-1).tolist(),
            criteria=0.3, offset=True, scale=300.0, stds=[0.1, 0.1, 0.2, 0.2])
        res["box_encoder"] = _digest(enc) + _digest(lab)
        res["coord_flip"] = _digest(ndd.coord_flip(ndd.as_tensor(ltrb[:, :2]), flip_y=1,
                                                   center_x=0.3))
        res["bbox_paste"] = _digest(ndd.bbox_paste(boxes, ratio=3.7, paste_x=0.13))

        # audio: float32 sums in DALI's order, the C library's log2f / sinf, scipy's float32
        # FFT (no per-CPU code paths), the resampler's compiled loop
        arng = np.random.default_rng(5)
        sig = ndd.as_batch([arng.standard_normal(4000 + 333 * k).astype(np.float32)
                            for k in range(2)])
        spec = ndd.spectrogram(ndd.preemphasis_filter(sig), nfft=256, window_length=200,
                               window_step=80)
        mel = ndd.mel_filter_bank(spec, sample_rate=16000.0, nfilter=40)
        for name, out in (
                ("audio/spectrogram", spec), ("audio/mel", mel),
                ("audio/db", ndd.to_decibels(mel)),
                ("audio/mfcc", ndd.mfcc(ndd.to_decibels(mel), n_mfcc=13, lifter=22.0)),
                ("audio/resample", ndd.audio_resample(sig, in_rate=16000.0, out_rate=11025.0)),
                ("audio/power_spectrum", ndd.power_spectrum(sig, nfft=512))):
            for i, t in enumerate(out.tensors):
                res[f"{name}/{i}"] = _digest(t)

        # arithmetic and math functions in every float dtype (and ints promoted to float)
        for dt in ("float16", "float32", "float64", "int32", "uint8"):
            if dt.startswith("float"):
                a = rng.normal(0, 3, 512).astype(dt)
                b = rng.normal(0, 3, 512).astype(dt)
            else:
                a = rng.integers(1, 100, 512).astype(dt)
                b = rng.integers(1, 5, 512).astype(dt)
            ta, tb = ndd.as_tensor(a), ndd.as_tensor(b)
            for op, info in promotion.OPS.items():
                try:
                    promotion.infer_dtype(op, (dt,) * info.arity)
                except TypeError:
                    continue
                fn = getattr(ndd.math, op, None)
                if fn is None or op in ("pos",):
                    continue
                args = (ta, tb, tb)[:info.arity]
                if op in ("asin", "acos", "atanh") and dt.startswith("float"):
                    args = (ndd.as_tensor((a / 10).astype(dt)),)
                res[f"math/{op}/{dt}"] = _digest(fn(*args))
            res[f"ops/add_mul_div/{dt}"] = _digest((ta + tb) * 1.5 / (tb + 7))
            res[f"ops/pow/{dt}"] = _digest(abs(ta) ** tb)
            for target in ("float16", "uint8", "int16", "float64"):
                res[f"cast/{dt}->{target}"] = _digest(ndd.cast(ta * 37.3, dtype=target))

        # random ops: values from a seeded generator
        r = ndd.random.RNG(seed=42)
        for name, kwargs in (("uniform", {"range": (-2, 3), "shape": (64,)}),
                             ("normal", {"mean": 1.0, "stddev": 2.0, "shape": (64,)}),
                             ("coin_flip", {"probability": 0.3, "shape": (64,)}),
                             ("choice", {"shape": (64,)}),
                             ("beta", {"alpha": 0.5, "beta": 2.0, "shape": (64,)})):
            args = (5,) if name == "choice" else ()
            out = getattr(ndd.random, name)(*args, batch_size=3, rng=r, **kwargs)
            for i, t in enumerate(out.tensors):
                res[f"random/{name}/{i}"] = _digest(t)
    return res


if __name__ == "__main__":
    json.dump(probe(), sys.stdout, sort_keys=True)
