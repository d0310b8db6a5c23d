"""Offline, reproducible image-folder dataset made from photographs shipped in PyPI packages.

The photographs come from packages that carry them inside their wheels (no network access):
scikit-image (``skimage/data``), scikit-learn (``sklearn/datasets/images``) and matplotlib
(``mpl-data/sample_data``).  Every output JPEG is a seeded random crop / scale / flip / mild
colour jitter of one source photo, encoded by Pillow with a randomly drawn but realistic
encoding (quality 60..95, baseline or progressive, chroma subsampling 4:2:0 / 4:2:2 / 4:4:4,
some grayscale, a few CMYK, some EXIF orientation tags, some restart intervals).

Layout written by :func:`build_sample_dataset`::

    root/MANIFEST.json
    root/<class_name>/<class_name>_<index:05d>.jpg

which is what ``readers.File(file_root=root)`` expects (labels = sorted class folder index).
See ``docs/sample-data.md`` for the full description.

Command line: ``python -m ndd.datasets.sample [--root DIR] [--num-images N] [--seed S]
[--split train|val] [--edge-cases DIR]``.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import io
import json
import os
import pathlib
import shutil
import sys
import tempfile

import numpy as np
from PIL import Image, ImageEnhance, features
from tqdm import tqdm

from ndd.datasets import edge_cases

__all__ = ["build_sample_dataset", "build_edge_cases", "default_root", "SOURCES", "MIXES"]

#: Bump whenever the output bytes for a given seed / package versions change.
BUILDER_VERSION = 1

MANIFEST_NAME = "MANIFEST.json"

#: Encoding and size mixes (probabilities of each draw). ``"mixed"`` (the default of
#: :func:`build_sample_dataset`, also called "progressive-heavy") stresses the decoder: a quarter
#: progressive, much 4:2:2 / 4:4:4. ``"imagenet"`` resembles ImageNet's training photos (what
#: ``ndd bench`` uses by default): mostly baseline 4:2:0 camera JPEGs, a few progressive, ~1%
#: gray, a handful of CMYK, rare restart markers and orientation tags, ~400 x 350 on average.
#: Every mix consumes the same random numbers per image; only the thresholds differ.
MIXES = {
    "mixed": {
        "gray": 0.04, "cmyk": 0.025, "gray_source_gray": 0.25, "progressive": 0.25,
        "optimize": 0.3, "subsampling": (0.6, 0.2, 0.2), "restart": 0.10, "orientation": 0.15,
        "small": 0.05, "large": 0.05, "height": (290, 491), "quality": (60, 96),
    },
    "imagenet": {
        "gray": 0.01, "cmyk": 0.005, "gray_source_gray": 0.05, "progressive": 0.03,
        "optimize": 0.2, "subsampling": (0.88, 0.04, 0.08), "restart": 0.02, "orientation": 0.02,
        "small": 0.05, "large": 0.03, "height": (250, 451), "quality": (70, 96),
    },
}
#: The other name of the default mix, as the benchmarks call it.
MIX_ALIASES = {"progressive-heavy": "mixed"}

#: (class name, package, path of the photo inside the installed package).
SOURCES = (
    ("astronaut", "skimage", "data/astronaut.png"),
    ("brick", "skimage", "data/brick.png"),
    ("cameraman", "skimage", "data/camera.png"),
    ("cat", "skimage", "data/chelsea.png"),
    ("coffee", "skimage", "data/coffee.png"),
    ("coins", "skimage", "data/coins.png"),
    ("flower", "sklearn", "datasets/images/flower.jpg"),
    ("galaxies", "skimage", "data/hubble_deep_field.jpg"),
    ("grass", "skimage", "data/grass.png"),
    ("gravel", "skimage", "data/gravel.png"),
    ("microscopy", "skimage", "data/ihc.png"),
    ("moon", "skimage", "data/moon.png"),
    ("motorcycle", "skimage", "data/motorcycle_left.png"),
    ("motorcycle", "skimage", "data/motorcycle_right.png"),
    ("portrait", "matplotlib", "mpl-data/sample_data/grace_hopper.jpg"),
    ("retina", "skimage", "data/retina.jpg"),
    ("rocket", "skimage", "data/rocket.jpg"),
    ("temple", "sklearn", "datasets/images/china.jpg"),
)

_MIN_CLASSES = 10
_SPLIT_KEYS = {"train": 0, "val": 1}
_VERSIONED_PACKAGES = ("numpy", "pillow", "scikit-image", "scikit-learn", "matplotlib")
# Inverse of the EXIF orientation transform: stored = upright.transpose(_TO_STORED[k]) so that a
# decoder applying the tag (as DALI / nvImageCodec do) shows the upright picture.
_TO_STORED = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_90,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_270,
}
_SUBSAMPLING_NAMES = {0: "4:4:4", 1: "4:2:2", 2: "4:2:0"}


def default_root() -> pathlib.Path:
    """Return the default cache folder of the sample photos.

    Returns
    -------
    pathlib.Path
        ``$NDD_DATA_DIR`` when set, else ``~/.cache/ndd/sample-photos``.  The train split is
        built in ``<default_root>/train`` and the val split in ``<default_root>/val``.
    """
    env = os.environ.get("NDD_DATA_DIR")
    if env:
        return pathlib.Path(env).expanduser()
    return pathlib.Path.home() / ".cache" / "ndd" / "sample-photos"


def _package_dir(package: str) -> pathlib.Path | None:
    """Folder of an installed package, found without importing it (None when absent)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return pathlib.Path(list(spec.submodule_search_locations)[0])


def _available_sources() -> list[tuple[str, pathlib.Path]]:
    """(class name, file path) of every source photo present in this environment."""
    found = []
    for cls, package, rel in SOURCES:
        base = _package_dir(package)
        if base is not None and (base / rel).is_file():
            found.append((cls, base / rel))
    return found


def _package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in _VERSIONED_PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    versions["libjpeg"] = features.version("jpg")
    versions["libjpeg_turbo"] = features.version("libjpeg_turbo")
    return versions


def _load_sources() -> tuple[list[str], dict[str, list[Image.Image]]]:
    """Load every available source photo (RGB or L) grouped by class, classes sorted."""
    by_class: dict[str, list[Image.Image]] = {}
    for cls, path in _available_sources():
        with Image.open(path) as im:
            im.load()
            mode = "L" if im.mode in ("L", "I;16", "I") else "RGB"
            by_class.setdefault(cls, []).append(im.convert(mode))
    classes = sorted(by_class)
    if len(classes) < _MIN_CLASSES:
        raise RuntimeError(
            f"only {len(classes)} source classes found ({classes}); at least {_MIN_CLASSES} are "
            "needed: install scikit-image and scikit-learn (pip install 'ndd[data]')"
        )
    return classes, by_class


def _draw_size(rng: np.random.Generator, mix: dict) -> tuple[int, int]:
    """Displayed (width, height); ``"mixed"``: 90% in 300..500 x 290..490, 5% smaller, 5% larger."""
    kind = rng.random()
    if kind < mix["small"]:
        return int(rng.integers(120, 300)), int(rng.integers(120, 300))
    if kind < mix["small"] + mix["large"]:
        return int(rng.integers(500, 1001)), int(rng.integers(500, 901))
    return int(rng.integers(300, 501)), int(rng.integers(*mix["height"]))


def _augment(src: Image.Image, size: tuple[int, int], rng: np.random.Generator) -> Image.Image:
    """Random crop of ``src`` with the aspect of ``size``, resized to ``size``, flip, jitter."""
    width, height = size
    aspect = width / height
    sw, sh = src.size
    max_w = min(float(sw), sh * aspect)
    scale = rng.uniform(0.45, 1.0)
    cw, ch = max_w * scale, max_w * scale / aspect
    x0 = rng.uniform(0.0, sw - cw)
    y0 = rng.uniform(0.0, sh - ch)
    flip = rng.random() < 0.5
    brightness, contrast, saturation = rng.uniform(0.85, 1.15, size=3)
    out = src.resize(size, Image.Resampling.BICUBIC, box=(x0, y0, x0 + cw, y0 + ch))
    if flip:
        out = out.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    out = ImageEnhance.Brightness(out).enhance(brightness)
    out = ImageEnhance.Contrast(out).enhance(contrast)
    if out.mode == "RGB":
        out = ImageEnhance.Color(out).enhance(saturation)
    return out


def _draw_encoding(rng: np.random.Generator, gray_source: bool, mix: dict) -> dict:
    """Draw the JPEG encoding of one image; always consumes the same random numbers."""
    u_mode, u_prog, u_opt, u_rst, u_orient = rng.random(5)
    quality = int(rng.integers(*mix["quality"]))
    subsampling = int(rng.choice([2, 1, 0], p=list(mix["subsampling"])))
    restart_rows, restart_blocks = int(rng.integers(1, 4)), int(rng.integers(4, 65))
    orientation = int(rng.integers(2, 9))
    tint = rng.uniform(-0.12, 0.12, size=3)
    if gray_source:
        mode = "L" if u_mode < mix["gray_source_gray"] else "RGB"
    else:
        gray, cmyk = mix["gray"], mix["cmyk"]
        mode = "L" if u_mode < gray else ("CMYK" if u_mode < gray + cmyk else "RGB")
    enc = {
        "mode": mode,
        "quality": quality,
        "progressive": bool(u_prog < mix["progressive"]),
        "optimize": bool(u_opt < mix["optimize"]),
        # CMYK JPEGs (as written by Photoshop) are 4:4:4; L has no chroma.
        "subsampling": {"L": None, "CMYK": "4:4:4"}.get(mode, _SUBSAMPLING_NAMES[subsampling]),
        "restart": None,
        "orientation": None,
    }
    if u_rst < mix["restart"] / 2:
        enc["restart"] = {"rows": restart_rows}
    elif u_rst < mix["restart"]:
        enc["restart"] = {"blocks": restart_blocks}
    if u_orient < mix["orientation"] * 2 / 3:
        enc["orientation"] = orientation
    elif u_orient < mix["orientation"]:
        enc["orientation"] = 1
    enc["_subsampling_code"] = 0 if mode == "CMYK" else subsampling
    enc["_tint"] = tint
    return enc


def encode_jpeg(upright: Image.Image, enc: dict) -> tuple[bytes, tuple[int, int]]:
    """Encode ``upright`` as a JPEG per ``enc`` (a dict of ``_draw_encoding``: mode, quality,
    progressive, optimize, restart, EXIF orientation, subsampling); returns (bytes, stored
    (width, height)): the pixels are stored so that the orientation tag shows them upright."""
    img = upright
    if enc["mode"] == "RGB" and img.mode == "L":
        # A gray source photo saved in colour: give it a mild random tint (like a toned print).
        arr = np.asarray(img, dtype=np.float32)[..., None] * (1.0 + enc["_tint"])
        img = Image.fromarray(np.clip(np.rint(arr), 0, 255).astype(np.uint8), "RGB")
    elif img.mode != enc["mode"]:
        img = img.convert(enc["mode"])
    orientation = enc["orientation"]
    if orientation and orientation > 1:
        img = img.transpose(_TO_STORED[orientation])
    kwargs = {
        "quality": enc["quality"],
        "progressive": enc["progressive"],
        "optimize": enc["optimize"],
    }
    if enc["mode"] != "L":
        kwargs["subsampling"] = enc["_subsampling_code"]
    if enc["restart"] is not None:
        key, value = next(iter(enc["restart"].items()))
        kwargs["restart_marker_" + key] = value
    if orientation is not None:
        exif = Image.Exif()
        exif[0x0112] = orientation
        kwargs["exif"] = exif.tobytes()
    buf = io.BytesIO()
    img.save(buf, "JPEG", **kwargs)
    return buf.getvalue(), img.size


def _make_image(index, seed, split, classes, sources, mix="mixed"):
    """Build image number ``index``: returns (relative path, bytes, manifest entry)."""
    rng = np.random.default_rng([seed, _SPLIT_KEYS[split], index, BUILDER_VERSION])
    cls = classes[index % len(classes)]
    options = sources[cls]
    src_idx = int(rng.integers(0, len(options)))
    src = options[src_idx]
    size = _draw_size(rng, MIXES[mix])
    upright = _augment(src, size, rng)
    enc = _draw_encoding(rng, gray_source=src.mode == "L", mix=MIXES[mix])
    data, stored = encode_jpeg(upright, enc)
    rel = f"{cls}/{cls}_{index:05d}.jpg"
    entry = {k: v for k, v in enc.items() if not k.startswith("_")}
    entry.update(
        {
            "class": cls,
            "source_index": src_idx,
            "width": size[0],
            "height": size[1],
            "stored_width": stored[0],
            "stored_height": stored[1],
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    )
    return rel, data, entry


def _manifest_header(num_images: int, seed: int, split: str, mix: str) -> dict:
    header = {
        "builder": "ndd.datasets.sample",
        "builder_version": BUILDER_VERSION,
        "split": split,
        "seed": seed,
        "num_images": num_images,
        "packages": _package_versions(),
    }
    if mix != "mixed":      # the default mix's manifests (and caches) stay as they were
        header["mix"] = mix
    return header


def _read_manifest(root: pathlib.Path) -> dict | None:
    try:
        with open(root / MANIFEST_NAME, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) else None


def _is_current(root: pathlib.Path, header: dict) -> bool:
    """True when ``root`` holds a complete build with exactly this header."""
    manifest = _read_manifest(root)
    if manifest is None or any(manifest.get(k) != v for k, v in header.items()):
        return False
    files = manifest.get("files", {})
    if len(files) != header["num_images"]:
        return False
    for rel, entry in files.items():
        path = root / rel
        if not path.is_file() or path.stat().st_size != entry.get("bytes"):
            return False
    return True


def _check_replaceable(root: pathlib.Path) -> None:
    """Refuse to delete a folder that is not ours (non-empty and without our manifest)."""
    if not root.exists():
        return
    if not root.is_dir():
        raise ValueError(f"root={str(root)!r} exists and is not a directory")
    manifest = _read_manifest(root)
    if manifest is not None and manifest.get("builder") == "ndd.datasets.sample":
        return
    if any(root.iterdir()):
        raise ValueError(
            f"root={str(root)!r} is a non-empty folder without an ndd sample-data "
            f"{MANIFEST_NAME}; refusing to overwrite it (choose an empty or new folder)"
        )


def _validate(num_images, seed, split, mix):
    if isinstance(num_images, bool) or not isinstance(num_images, (int, np.integer)):
        raise TypeError(f"num_images must be an int, got {type(num_images).__name__}")
    if num_images < 1:
        raise ValueError(f"num_images must be >= 1, got {num_images}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    if split not in _SPLIT_KEYS:
        raise ValueError(f"split must be one of {sorted(_SPLIT_KEYS)}, got {split!r}")
    if MIX_ALIASES.get(mix, mix) not in MIXES:
        raise ValueError(f"mix must be one of {sorted(MIXES) + sorted(MIX_ALIASES)}, got {mix!r}")


def build_sample_dataset(
    root=None, num_images=600, seed=0, force=False, progress=True, split="train", mix="mixed"
) -> pathlib.Path:
    """Build (or reuse) the sample photo dataset as an image folder of JPEG files.

    Parameters
    ----------
    root : str or os.PathLike, optional
        Folder that receives the class sub-folders.  Default: ``default_root() / split``.
    num_images : int, default 600
        Number of JPEG files.  Image ``i`` belongs to class ``i % num_classes`` and its bytes
        depend only on (``seed``, ``split``, ``i``), so a smaller build is a prefix of a larger one.
    seed : int, default 0
        Seed of every random choice (crop, scale, flip, jitter, encoding).
    force : bool, default False
        Rebuild even when ``root`` already holds a matching build.
    progress : bool, default True
        Show a tqdm progress bar.
    split : {"train", "val"}, default "train"
        Which random stream to use: the two splits draw different crops of the same photos.
    mix : {"mixed", "progressive-heavy", "imagenet"}, default "mixed"
        The encoding and size mix (:data:`MIXES`): ``"mixed"`` (alias ``"progressive-heavy"``)
        has 25% progressive files and much 4:2:2 / 4:4:4; ``"imagenet"`` resembles ImageNet's
        photos (mostly baseline 4:2:0, 3% progressive, ~1% gray, a few CMYK, ~400 x 350).

    Returns
    -------
    pathlib.Path
        ``root``, holding ``<class>/<class>_<index:05d>.jpg`` files and ``MANIFEST.json``
        (per file: sha256, byte size, displayed and stored width/height, mode, quality,
        progressive, subsampling, restart interval, EXIF orientation).

    Raises
    ------
    ValueError
        Bad ``num_images`` / ``seed`` / ``split`` / ``mix``, or ``root`` is a non-empty folder that is not
        an ndd sample-data build (it is never deleted).
    TypeError
        ``num_images`` is not an int.
    RuntimeError
        Fewer than 10 source classes are installed (scikit-image / scikit-learn missing).

    Notes
    -----
    The output is byte-identical for the same seed, split and versions of numpy, Pillow (and its
    libjpeg) and the packages that ship the photos.  A matching manifest is reused; otherwise
    the build is written to a temporary sibling folder and renamed into place atomically.
    """
    _validate(num_images, seed, split, mix)
    num_images, seed, mix = int(num_images), int(seed), MIX_ALIASES.get(mix, mix)
    if root is None:
        root = default_root() / (split if mix == "mixed" else f"{split}-{mix}")
    root = pathlib.Path(root).expanduser()
    header = _manifest_header(num_images, seed, split, mix)
    if not force and _is_current(root, header):
        return root
    _check_replaceable(root)
    classes, sources = _load_sources()
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".{root.name}.tmp-", dir=root.parent))
    try:
        files = {}
        for cls in classes:
            (tmp / cls).mkdir()
        bar = tqdm(range(num_images), desc=f"sample photos ({split})", disable=not progress)
        for index in bar:
            rel, data, entry = _make_image(index, seed, split, classes, sources, mix)
            (tmp / rel).write_bytes(data)
            files[rel] = entry
        manifest = dict(header, classes=classes, files=files)
        with open(tmp / MANIFEST_NAME, "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
        _swap_into_place(tmp, root, header)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return root


def _swap_into_place(tmp: pathlib.Path, root: pathlib.Path, header: dict) -> None:
    """Rename ``tmp`` to ``root``, moving an old build aside first (then deleting it)."""
    if _is_current(root, header):  # another process finished the same build first
        return
    old = None
    if root.exists():
        old = pathlib.Path(tempfile.mkdtemp(prefix=f".{root.name}.old-", dir=root.parent))
        old.rmdir()
        os.rename(root, old)
    try:
        os.rename(tmp, root)
    except OSError:
        # Another process finished first: keep its build if it is what we wanted.
        if not _is_current(root, header):
            raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def build_edge_cases(root) -> dict[str, pathlib.Path]:
    """Write a small image folder of deliberately hard files for tests of other components.

    See :func:`ndd.datasets.edge_cases.build_edge_cases` for the list of files.
    """
    return edge_cases.build_edge_cases(root)


def main(argv=None) -> int:
    """Command-line entry: ``python -m ndd.datasets.sample``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=None, help="output folder (default: cache folder)")
    parser.add_argument("--num-images", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--split", choices=sorted(_SPLIT_KEYS), default="train")
    parser.add_argument("--mix", choices=sorted(MIXES) + sorted(MIX_ALIASES), default="mixed",
                        help="encoding/size mix (imagenet: mostly baseline 4:2:0)")
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--edge-cases", metavar="DIR", help="also write the edge-case files")
    args = parser.parse_args(argv)
    root = build_sample_dataset(
        args.root, args.num_images, args.seed, args.force, not args.quiet, args.split, args.mix
    )
    print(root)
    if args.edge_cases:
        print(edge_cases.build_edge_cases(args.edge_cases)["root"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
