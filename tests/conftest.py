"""Shared fixtures: a small sample photo dataset, a tiny class-folder tree and encoded photos."""
from __future__ import annotations

import io
import os
import pathlib

import numpy as np
import pytest

# Worker processes (runtime/workers/pool.py) start in the background on first use;
# tests run on threads unless they turn them on themselves (tests/runtime/workers/test_pool.py)
# so that every other test takes the same, deterministic path.
os.environ.setdefault("NDD_PROCESS_LANES", "0")


@pytest.fixture(scope="session", autouse=True)
def _ir_checked():
    """The IR checker (compiler/checker.py) runs after every compiler pass in every test."""
    from compiler.pipeline import set_options
    set_options(check=True)
    yield


def encode_jpeg(arr: np.ndarray, quality: int = 92) -> bytes:
    """JPEG bytes of an HWC uint8 RGB array (Pillow)."""
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def encode_png(arr: np.ndarray) -> bytes:
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def skimage_photos() -> list[np.ndarray]:
    """A few real RGB photos from scikit-image (HWC uint8)."""
    from skimage import data
    return [data.astronaut(), data.chelsea(), data.coffee()]


@pytest.fixture(scope="session")
def photos():
    """Real photos cropped to small odd sizes, HWC uint8."""
    out = []
    for k, p in enumerate(skimage_photos()):
        h, w = 97 + 10 * k, 131 - 6 * k
        out.append(np.ascontiguousarray(p[40:40 + h, 60:60 + w]))
    return out


@pytest.fixture(scope="session")
def photo_jpegs(photos):
    return [encode_jpeg(p) for p in photos]


@pytest.fixture(scope="session")
def photo_pngs(photos):
    return [encode_png(p) for p in photos]


@pytest.fixture(scope="session")
def sample_dataset(tmp_path_factory) -> pathlib.Path:
    """The offline sample photo dataset (60 images in class sub-folders)."""
    from ndd.datasets.sample import build_sample_dataset
    root = tmp_path_factory.mktemp("sample") / "train"
    return build_sample_dataset(root, num_images=60, seed=0, progress=False)


@pytest.fixture(scope="session")
def image_folder(tmp_path_factory, photos) -> pathlib.Path:
    """A tiny class-folder tree: cat/ (3 files), dog/ (2 files), plus hidden entries that must be
    ignored (.ipynb_checkpoints/ folder, ._x.jpg file)."""
    root = tmp_path_factory.mktemp("folder")
    layout = {"cat": [0, 1, 2], "dog": [1, 2]}
    for c, (cls, idx) in enumerate(layout.items()):
        (root / cls).mkdir()
        for j, i in enumerate(idx):   # distinct qualities: every file's bytes are unique
            (root / cls / f"img{j}.jpg").write_bytes(encode_jpeg(photos[i], 70 + 10 * c + j))
    hidden = root / ".ipynb_checkpoints"
    hidden.mkdir()
    (hidden / "junk.jpg").write_bytes(encode_jpeg(photos[0]))
    (root / "cat" / "._img0.jpg").write_bytes(b"garbage")
    return root


def _wait_for_workers(timeout: float = 180.0):
    """The shared pool of two worker processes once it is up (started, or started again after
    a worker died); fails the test when the workers cannot start."""
    import time
    from runtime.workers import pool as worker_pool
    deadline = time.monotonic() + timeout
    while (got := worker_pool.get_workers(2)) is None:
        state = worker_pool.state
        if state.failed:
            pytest.fail(f"worker processes failed to start: {state.pool and state.pool.error}")
        if time.monotonic() > deadline:
            pytest.fail(f"worker processes did not start within {timeout:.0f} s")
        time.sleep(0.05)
    return got


@pytest.fixture
def workers_now():
    """``workers_now()``: the worker pool as it is now, waiting for a restart if needed."""
    return _wait_for_workers


@pytest.fixture(scope="module")
def workers():
    """Worker processes on (two, with two pool threads) for a module's tests; off again
    afterwards (the other tests run on threads, see NDD_PROCESS_LANES above)."""
    import ndd
    from runtime.workers import pool as worker_pool
    ndd.set_num_threads(2)
    worker_pool.set_enabled(True)
    yield _wait_for_workers()
    worker_pool.set_enabled(None)
    worker_pool.shutdown()
