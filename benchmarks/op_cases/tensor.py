"""Tensor and utility ops: slice, pad, cat, stack, normalize, reductions, one_hot, transpose,
cast, lookup_table, reinterpret / expand_dims / squeeze, element_extract, tensor_resize,
resize_crop_mirror, batch_permutation, io.file.read, decoders.numpy."""

import io
import os
import tempfile

import numpy as np

from op_cases import Case, images


def _floats():
    return images(8, 480, 640, dtype=np.float32)


def _fixed():
    return images(8, 480, 640, vary=False)


def _labels():
    rng = np.random.default_rng(1)
    return [rng.integers(0, 1000, size=(256,)).astype(np.int32) for _ in range(8)], ""


def _sequences():
    rng = np.random.default_rng(2)
    return [rng.integers(0, 256, size=(6, 120, 160, 3)).astype(np.uint8) for _ in range(8)], \
        "FHWC"


_TMP = tempfile.mkdtemp(prefix="ndd-bench-")


def _paths():
    rng = np.random.default_rng(3)
    out = []
    for i in range(32):
        p = os.path.join(_TMP, f"f{i}.bin")
        if not os.path.exists(p):
            with open(p, "wb") as f:
                f.write(rng.integers(0, 256, 200_000 + 1000 * i, dtype=np.uint8).tobytes())
        out.append(np.frombuffer(p.encode(), np.uint8))
    return out, ""


def _npys():
    rng = np.random.default_rng(4)
    out = []
    for i in range(16):
        b = io.BytesIO()
        np.save(b, rng.standard_normal((100 + i, 300)).astype(np.float32))
        out.append(np.frombuffer(b.getvalue(), np.uint8))
    return out, ""


def _volumes():
    rng = np.random.default_rng(5)
    return [rng.standard_normal((40 + i, 64, 64)).astype(np.float32) for i in range(4)], "DHW"


def _lut_keys():
    return list(range(0, 256, 3)), [float(k) * 0.5 for k in range(0, 256, 3)]


def cases():
    imgs = lambda: images(8, 480, 640)  # noqa: E731
    keys, values = _lut_keys()
    r = lambda m: m.reductions  # noqa: E731
    return [
        Case("slice 8x~480x640x3 u8 rel", imgs,
             lambda m, b: m.slice(b, rel_start=(0.1, 0.2), rel_end=(0.8, 0.9),
                                  axis_names="HW")),
        Case("slice 8x~480x640x3 u8 pad oob", imgs,
             lambda m, b: m.slice(b, start=(-10, -20), shape=(500, 700), axis_names="HW",
                                  out_of_bounds_policy="pad", fill_values=7)),
        Case("pad 8x~480x640x3 u8 to max", imgs, lambda m, b: m.pad(b, fill_value=3)),
        Case("pad 8x~480x640x3 u8 align 32", imgs,
             lambda m, b: m.pad(b, axis_names="HW", align=(32, 32))),
        Case("cat 2x 8x~480x640x3 u8 axis 2", imgs, lambda m, b: m.cat(b, b, axis=2)),
        Case("stack 2x 8x~480x640x3 u8 axis 0", imgs, lambda m, b: m.stack(b, b, axis=0)),
        Case("normalize 8x~480x640x3 f32 global", _floats, lambda m, b: m.normalize(b)),
        Case("normalize 8x~480x640x3 f32 axes HW", _floats,
             lambda m, b: m.normalize(b, axis_names="HW")),
        Case("normalize 8x~480x640x3 f32 batch HW", _floats,
             lambda m, b: m.normalize(b, axis_names="HW", batch=True)),
        Case("normalize 8x~480x640x3 u8->f32 mean/std", imgs,
             lambda m, b: m.normalize(b, mean=100.0, stddev=50.0, dtype=m.float32)),
        Case("reductions.sum 8x~480x640x3 u8 HW", imgs,
             lambda m, b: r(m).sum(b, axis_names="HW")),
        Case("reductions.mean 8x~480x640x3 f32 all", _floats, lambda m, b: r(m).mean(b)),
        Case("reductions.std_dev 8x~480x640x3 f32 HW", _floats,
             lambda m, b: r(m).std_dev(b, r(m).mean(b, axis_names="HW"), axis_names="HW")),
        Case("reductions.min 8x~480x640x3 u8 C", imgs,
             lambda m, b: r(m).min(b, axis_names="C")),
        Case("reductions.max 8x~480x640x3 f32 HW", _floats,
             lambda m, b: r(m).max(b, axis_names="HW")),
        Case("one_hot 8x256 i32 1000 classes", _labels,
             lambda m, b: m.one_hot(b, num_classes=1000)),
        Case("transpose 8x~480x640x3 u8 CHW", imgs,
             lambda m, b: m.transpose(b, perm=(2, 0, 1))),
        Case("cast 8x~480x640x3 u8->f32", imgs, lambda m, b: m.cast(b, dtype=m.float32)),
        Case("cast 8x~480x640x3 f32->u8", _floats, lambda m, b: m.cast(b, dtype=m.uint8)),
        Case("lookup_table 8x~480x640x3 u8", imgs,
             lambda m, b: m.lookup_table(b, keys=keys, values=values, dtype=m.float32)),
        Case("reinterpret 8x480x640x3 u8 shape", _fixed,
             lambda m, b: m.reinterpret(b, shape=(480, 640 * 3))),
        Case("expand_dims 8x~480x640x3 u8", imgs,
             lambda m, b: m.expand_dims(b, axes=0, new_axis_names="F")),
        Case("squeeze(expand_dims) 8x~480x640x3 u8", imgs,
             lambda m, b: m.squeeze(m.expand_dims(b, axes=0, new_axis_names="F"),
                                    axis_names="F")),
        Case("element_extract 8x6x120x160x3 u8", _sequences,
             lambda m, b: m.element_extract(b, element_map=[0, 3, 5])),
        Case("tensor_resize 8x~480x640x3 u8 HW 0.5", imgs,
             lambda m, b: m.tensor_resize(b, scales=(0.5, 0.5), axes=(0, 1))),
        Case("tensor_resize 4x~40x64x64 f32 DHW sizes", _volumes,
             lambda m, b: m.tensor_resize(b, sizes=(32, 48, 48))),
        Case("resize_crop_mirror 8x~480x640x3 u8", imgs,
             lambda m, b: m.resize_crop_mirror(b, resize_shorter=256, crop=(224, 224),
                                               mirror=1)),
        Case("batch_permutation 64", lambda: ([np.zeros(1, np.uint8)] * 64, ""),
             lambda m, b: m.batch_permutation(batch_size=64)),
        Case("io.file.read 32x~200KB", _paths, lambda m, b: m.io.file.read(b)),
        Case("decoders.numpy 16x~100x300 f32", _npys,
             lambda m, b: m.decoders.numpy(b, device="cpu")),
    ]
