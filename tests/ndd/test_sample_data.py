"""Tests of the offline sample photo dataset (ndd.datasets.sample) and the edge-case folder.

Every property is checked by inspecting the written files with Pillow / hashlib / raw bytes,
not by trusting the manifest the builder writes.
"""

import collections
import hashlib
import importlib.util
import io
import json
import pathlib

import numpy as np
import pytest
from PIL import Image, ImageOps, JpegImagePlugin

from ndd.datasets import sample
from ndd.datasets.edge_cases import edge_case_pattern

N_IMAGES = 120

if importlib.util.find_spec("skimage") is None or importlib.util.find_spec("sklearn") is None:
    pytest.skip("the sample photos need scikit-image and scikit-learn (ndd[data])",
                allow_module_level=True)


def _sha_tree(root: pathlib.Path) -> dict:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*.jpg"))
    }


def _has_restart_interval(data: bytes) -> bool:
    """True when a DRI (0xFFDD) segment appears among the JPEG header segments."""
    pos = 2
    while pos + 4 <= len(data) and data[pos] == 0xFF:
        marker = data[pos + 1]
        if marker == 0xDD:
            return True
        if marker == 0xDA:  # start of scan: header over
            return False
        pos += 2 + int.from_bytes(data[pos + 2 : pos + 4], "big")
    return False


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("photos") / "train"
    out = sample.build_sample_dataset(root, num_images=N_IMAGES, seed=0, progress=False)
    assert out == root
    return root


@pytest.fixture(scope="module")
def inspected(built):
    """Per file: what Pillow says about it."""
    info = {}
    for path in sorted(built.rglob("*.jpg")):
        data = path.read_bytes()
        with Image.open(io.BytesIO(data)) as im:
            upright = ImageOps.exif_transpose(im)
            info[str(path.relative_to(built))] = {
                "mode": im.mode,
                "progressive": bool(im.info.get("progressive", 0)),
                "sampling": JpegImagePlugin.get_sampling(im) if im.mode == "RGB" else None,
                "factors": [(h, v) for _, h, v, _ in im.layer],
                "orientation": im.getexif().get(0x0112),
                "stored": im.size,
                "displayed": upright.size,
                "restart": _has_restart_interval(data),
                "sha256": hashlib.sha256(data).hexdigest(),
                "bytes": len(data),
            }
    return info


def test_count_and_classes(built, inspected):
    assert len(inspected) == N_IMAGES
    class_dirs = sorted(p.name for p in built.iterdir() if p.is_dir())
    assert len(class_dirs) >= 10
    assert len(class_dirs) == len({cls for cls, *_ in sample.SOURCES})
    per_class = collections.Counter(rel.split("/")[0] for rel in inspected)
    assert set(per_class) == set(class_dirs)
    assert max(per_class.values()) - min(per_class.values()) <= 1  # balanced
    assert all(rel.endswith(".jpg") and rel.count("/") == 1 for rel in inspected)


def test_encoding_variety(inspected):
    values = list(inspected.values())
    modes = collections.Counter(v["mode"] for v in values)
    assert modes["RGB"] > 0.75 * N_IMAGES and modes["L"] >= 3 and modes["CMYK"] >= 1
    assert 10 <= sum(v["progressive"] for v in values) <= 0.5 * N_IMAGES
    # get_sampling: 0 = 4:4:4, 1 = 4:2:2, 2 = 4:2:0
    sampling = collections.Counter(v["sampling"] for v in values if v["mode"] == "RGB")
    assert sampling[2] > sampling[1] > 0 and sampling[0] > 0
    orientations = {v["orientation"] for v in values if v["orientation"]}
    assert len(orientations & set(range(2, 9))) >= 4
    assert sum(v["restart"] for v in values) >= 3


def test_size_statistics(inspected):
    w = np.array([v["displayed"][0] for v in inspected.values()])
    h = np.array([v["displayed"][1] for v in inspected.values()])
    assert 370 <= w.mean() <= 440 and 360 <= h.mean() <= 430
    typical = (w >= 300) & (w <= 500) & (h >= 290) & (h <= 500)
    assert 0.8 <= typical.mean() < 1.0  # mostly ImageNet-like, a few outliers
    assert w.max() > 500 or w.min() < 300


def test_manifest_matches_files(built, inspected):
    manifest = json.loads((built / "MANIFEST.json").read_text())
    assert manifest["num_images"] == N_IMAGES and manifest["seed"] == 0
    assert manifest["classes"] == sorted(p.name for p in built.iterdir() if p.is_dir())
    names = {0: "4:4:4", 1: "4:2:2", 2: "4:2:0"}
    for rel, entry in manifest["files"].items():
        got = inspected[rel]
        assert entry["sha256"] == got["sha256"] and entry["bytes"] == got["bytes"]
        assert entry["mode"] == got["mode"] and entry["progressive"] == got["progressive"]
        if got["mode"] == "RGB":
            assert entry["subsampling"] == names[got["sampling"]]
        elif got["mode"] == "CMYK":
            assert entry["subsampling"] == "4:4:4" and set(got["factors"]) == {(1, 1)}
        else:
            assert entry["subsampling"] is None and len(got["factors"]) == 1
        assert entry["orientation"] == got["orientation"]
        assert (entry["restart"] is not None) == got["restart"]
        assert (entry["stored_width"], entry["stored_height"]) == got["stored"]
        assert (entry["width"], entry["height"]) == got["displayed"]


def test_deterministic_and_prefix(built, tmp_path):
    a = sample.build_sample_dataset(tmp_path / "a", num_images=20, seed=0, progress=False)
    b = sample.build_sample_dataset(tmp_path / "b", num_images=20, seed=0, progress=False)
    sha_a, sha_b = _sha_tree(a), _sha_tree(b)
    assert len(sha_a) == 20 and sha_a == sha_b
    big = _sha_tree(built)
    assert all(big[rel] == sha for rel, sha in sha_a.items())  # a prefix of the larger build
    other = sample.build_sample_dataset(tmp_path / "c", num_images=20, seed=1, progress=False)
    assert set(_sha_tree(other).values()).isdisjoint(sha_a.values())
    val = sample.build_sample_dataset(tmp_path / "v", num_images=20, split="val", progress=False)
    assert set(_sha_tree(val).values()).isdisjoint(sha_a.values())


def test_reuse_and_rebuild(tmp_path):
    root = sample.build_sample_dataset(tmp_path / "d", num_images=5, progress=False)
    victim = sorted(root.rglob("*.jpg"))[0]
    mtime = victim.stat().st_mtime_ns
    assert sample.build_sample_dataset(root, num_images=5, progress=False) == root
    assert victim.stat().st_mtime_ns == mtime  # reused, not rewritten
    victim.write_bytes(b"damaged")
    sample.build_sample_dataset(root, num_images=5, progress=False)
    assert victim.read_bytes()[:2] == b"\xff\xd8"  # damaged build detected and rebuilt
    sample.build_sample_dataset(root, num_images=7, progress=False)
    assert len(list(root.rglob("*.jpg"))) == 7
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp leftovers


def test_default_root_env(monkeypatch, tmp_path):
    monkeypatch.setenv("NDD_DATA_DIR", str(tmp_path / "x"))
    assert sample.default_root() == tmp_path / "x"
    monkeypatch.delenv("NDD_DATA_DIR")
    assert sample.default_root() == pathlib.Path.home() / ".cache" / "ndd" / "sample-photos"


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="num_images"):
        sample.build_sample_dataset(tmp_path / "e", num_images=0)
    with pytest.raises(TypeError, match="num_images"):
        sample.build_sample_dataset(tmp_path / "e", num_images=2.5)
    with pytest.raises(ValueError, match="seed"):
        sample.build_sample_dataset(tmp_path / "e", num_images=2, seed=-1)
    with pytest.raises(ValueError, match="split"):
        sample.build_sample_dataset(tmp_path / "e", num_images=2, split="test")
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="refusing to overwrite"):
        sample.build_sample_dataset(foreign, num_images=2, progress=False, force=True)
    assert (foreign / "notes.txt").read_text() == "keep me"


@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_shows_upright(orientation):
    """Stored pixels + tag must display (Pillow's exif_transpose) as the upright picture."""
    upright = Image.fromarray(edge_case_pattern(40, 24))
    enc = {
        "mode": "RGB", "quality": 95, "progressive": False, "optimize": False,
        "restart": None, "orientation": orientation, "_subsampling_code": 0,
    }
    data, stored = sample.encode_jpeg(upright, enc)
    assert stored == ((24, 40) if orientation >= 5 else (40, 24))
    shown = np.asarray(ImageOps.exif_transpose(Image.open(io.BytesIO(data))), dtype=np.int32)
    assert np.abs(shown - np.asarray(upright, dtype=np.int32)).mean() < 3


def test_edge_cases(tmp_path):
    paths = sample.build_edge_cases(tmp_path / "edge")
    root = paths["root"]
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == [
        ".ipynb_checkpoints", "broken", "good"]
    pattern = edge_case_pattern()
    assert pattern.shape == (48, 64, 3) and pattern.dtype == np.uint8
    # hand-computed: r = x*255/63, g = y*255/47 (32 -> 129.5 -> 130, 24 -> 130.2 -> 130)
    assert tuple(pattern[0, 0]) == (0, 0, 40) and tuple(pattern[24, 32]) == (130, 130, 220)
    assert tuple(pattern[9, 5]) == (250, 250, 250) and pattern[0, 63, 0] == 255
    for name in ("png_rgb.png", "bmp_rgb.bmp", "tiff_rgb.tif", "webp_lossless.webp",
                 "png_rgba.png", "png_rgb16.png"):
        with Image.open(paths[f"good/{name}"]) as im:
            np.testing.assert_array_equal(np.asarray(im.convert("RGB")), pattern, err_msg=name)
    with Image.open(paths["good/png_gray16.png"]) as im:
        assert im.mode.startswith("I")
        gray8 = np.asarray(Image.fromarray(pattern).convert("L"), dtype=np.int64)
        np.testing.assert_array_equal(np.asarray(im, dtype=np.int64), gray8 * 257)
    with Image.open(paths["good/png_palette.png"]) as im:
        assert im.mode == "P"
    with Image.open(paths["good/jpeg_cmyk.jpg"]) as im:
        assert im.mode == "CMYK"
    with Image.open(paths["good/jpeg_exif6.jpg"]) as im:
        assert im.getexif()[0x0112] == 6 and ImageOps.exif_transpose(im).size == (48, 64)
    assert paths["broken/empty.jpg"].stat().st_size == 0
    with pytest.raises(OSError):
        with Image.open(paths["broken/truncated.jpg"]) as im:
            im.load()
    assert paths["good/._png_rgb.png"].exists()
    described = json.loads((root / "EDGE_CASES.json").read_text())
    assert set(described) == {k for k in paths if k != "root"}


@pytest.mark.oracle
def test_dali_reads_and_decodes_like_pillow(built):
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn

    reader = dalidyn.readers.File(file_root=str(built))
    labels = []
    for jpegs, lab in reader.next_epoch(batch_size=40):
        labels += np.asarray(lab.torch()).ravel().tolist()
    class_dirs = sorted(p.name for p in built.iterdir() if p.is_dir())
    assert len(labels) == N_IMAGES  # MANIFEST.json at the top level is not a sample
    assert sorted(set(labels)) == list(range(len(class_dirs)))
    manifest = json.loads((built / "MANIFEST.json").read_text())["files"]
    hard = [rel for rel, e in manifest.items() if e["mode"] != "RGB" or (e["orientation"] or 1) > 1]
    for rel in hard[:8]:
        data = np.fromfile(built / rel, dtype=np.uint8)
        got = np.asarray(dalidyn.decoders.image(dalidyn.as_tensor(data))).astype(np.int32)
        with Image.open(built / rel) as im:
            ref = np.asarray(ImageOps.exif_transpose(im).convert("RGB"), dtype=np.int32)
        assert got.shape == ref.shape, rel
        assert np.abs(got - ref).mean() < 1.0, rel


def test_imagenet_mix(tmp_path, built):
    """mix="imagenet": what Pillow reads back from the files has ImageNet's proportions (mostly
    baseline 4:2:0, a few progressive, ~1% gray, ~400 x 350); the default mix is untouched."""
    n = 400
    root = sample.build_sample_dataset(tmp_path / "inet", num_images=n, progress=False,
                                       mix="imagenet")
    modes, prog, sampling, sizes = collections.Counter(), 0, collections.Counter(), []
    for path in sorted(root.rglob("*.jpg")):
        with Image.open(path) as im:
            modes[im.mode] += 1
            prog += bool(im.info.get("progressive", 0))
            if im.mode == "RGB":
                sampling[JpegImagePlugin.get_sampling(im)] += 1
            sizes.append(ImageOps.exif_transpose(im).size)
    assert sum(modes.values()) == n
    assert modes["RGB"] >= 0.93 * n and 1 <= modes["L"] <= 0.08 * n
    assert 1 <= prog <= 0.08 * n                      # a few progressive files, not a quarter
    assert sampling[2] >= 0.8 * sum(sampling.values())  # 4:2:0 dominates
    w, h = np.array(sizes).T
    assert 370 <= w.mean() <= 430 and 320 <= h.mean() <= 380
    manifest = json.loads((root / sample.MANIFEST_NAME).read_text())
    assert manifest["mix"] == "imagenet"
    # The default mix keeps its bytes and its manifest header (existing caches stay valid); its
    # other name gives the same files.
    assert "mix" not in json.loads((built / sample.MANIFEST_NAME).read_text())
    alias = sample.build_sample_dataset(tmp_path / "ph", num_images=5, progress=False,
                                        mix="progressive-heavy")
    for path in sorted(alias.rglob("*.jpg")):
        assert path.read_bytes() == (built / path.relative_to(alias)).read_bytes()
    with pytest.raises(ValueError, match="mix must be one of"):
        sample.build_sample_dataset(tmp_path / "bad", num_images=2, mix="webp")
