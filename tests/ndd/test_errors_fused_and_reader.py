"""Errors name the user's op and line even when the compiler fused it; reader epochs close;
bad files (decompression bombs, truncated files, a crashing worker) cost only their batch."""
import contextlib
import io
import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from PIL import Image

import ndd


def _jpeg(seed):
    rng = np.random.default_rng(seed)
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 255, (40, 50, 3), dtype=np.uint8)).save(buf, "JPEG")
    return np.frombuffer(buf.getvalue(), np.uint8)


def test_error_in_fused_decode_names_decoder_and_its_line():
    data = [_jpeg(0), np.frombuffer(b"this is not an image", np.uint8)]
    with ndd.EvalMode.deferred:
        imgs = ndd.decoders.image(ndd.as_batch(data)); decode_line = _line()  # noqa: E702
        out = ndd.resize(imgs, size=(16, 16))
        with pytest.raises(ValueError) as err:
            out.evaluate()
    msg = str(err.value)
    assert "decoders.image" in msg and f":{decode_line}" in msg and "sample 1" in msg
    assert "fused.image" not in msg


def _line():
    import inspect
    return inspect.currentframe().f_back.f_lineno


@pytest.fixture()
def folder(tmp_path):
    for c in ("a", "b"):
        (tmp_path / c).mkdir()
        for k in range(3):
            (tmp_path / c / f"{k}.jpg").write_bytes(_jpeg(k).tobytes())
    return str(tmp_path)


def test_unknown_reader_argument_is_named(folder):
    with pytest.raises(TypeError, match="bogus_arg"):
        ndd.readers.File(file_root=folder, bogus_arg=3)


@pytest.mark.parametrize("compile", [False, True])
def test_break_then_close_starts_next_epoch(folder, compile):
    reader = ndd.readers.File(file_root=folder)
    it = reader.next_epoch(batch_size=2, compile=compile)
    for jpegs, labels in it:
        ndd.decoders.image(jpegs).evaluate()
        break
    with pytest.raises(RuntimeError, match="close"):
        reader.next_epoch(batch_size=2, compile=compile)
    it.close()
    warns = pytest.warns(RuntimeWarning, match="no replayable ndd calls") if compile else \
        contextlib.nullcontext()
    with warns:         # this loop's body makes no ndd calls: compile mode runs it eagerly
        n = sum(j.batch_size for j, _ in reader.next_epoch(batch_size=2, compile=compile))
    assert n == 6


# ------------------------------------------------------------------ bad files in batches
# A decompression bomb (a PNG declaring 20000x20000 pixels) and a truncated JPEG among real
# photos: every way of decoding raises a DecodeError (a ValueError) where the batch is
# consumed, naming the sample (and the file, from a reader), and the other batches come out.

MEAN, STD = [120.0, 110.0, 100.0], [60.0, 55.0, 50.0]


def _png_bomb_header(width, height):
    """A PNG whose IHDR declares ``width`` x ``height`` RGB pixels (only its first row
    encoded: nothing past the header is ever read)."""
    import struct
    import zlib

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(bytes(1 + 3 * width))) + chunk(b"IEND", b""))


BOMB_MESSAGE = (r"PNG image declares 20000x20000 pixels \(400,000,000 pixels\), more than the "
                r"limit of 178,956,970 pixels per image.*ndd\.set_max_image_pixels")


@pytest.mark.parametrize("call", [
    lambda b: ndd.decoders.image(b),
    lambda b: ndd.decoders.image_crop(b, crop=(8, 8)),
    lambda b: ndd.decoders.image_slice(b, start=[2, 2], shape=[8, 8], normalized_anchor=False,
                                       normalized_shape=False),
    lambda b: ndd.decoders.image_random_crop(b),
    lambda b: ndd.peek_image_shape(b),
], ids=["image", "image_crop", "image_slice", "image_random_crop", "peek_image_shape"])
def test_a_bomb_in_a_batch_raises_for_every_decoder(photo_jpegs, call):
    enc = ndd.as_batch([np.frombuffer(photo_jpegs[0], np.uint8),
                        np.frombuffer(_png_bomb_header(20000, 20000), np.uint8)])
    with pytest.raises(ValueError, match=BOMB_MESSAGE) as err:
        call(enc).evaluate()
    assert type(err.value).__name__ == "DecodeError" and "sample 1" in str(err.value)


def test_a_bomb_in_a_fused_chain_names_the_decoder(photo_jpegs):
    enc = ndd.as_batch([np.frombuffer(photo_jpegs[1], np.uint8),
                        np.frombuffer(_png_bomb_header(20000, 20000), np.uint8)])
    with ndd.EvalMode.deferred:
        imgs = ndd.decoders.image(enc); line = _line()  # noqa: E702
        out = ndd.crop_mirror_normalize(ndd.resize(imgs, size=(24, 24)), crop=(16, 16),
                                        mean=MEAN, std=STD)
        with pytest.raises(ValueError, match=BOMB_MESSAGE) as err:
            out.evaluate()
    assert f"decoders.image (called at" in str(err.value) and f":{line}" in str(err.value)
    assert "sample 1" in str(err.value)


@pytest.fixture()
def bad_folder(tmp_path, photo_jpegs):
    """10 files, sorted: batches of 2 are [00 01] [02 03] [04 05] [06 07] [08 09]; 03.png is a
    bomb, 06.jpg a truncated JPEG, the others real photos."""
    root = tmp_path / "bad"
    (root / "a").mkdir(parents=True)
    for k in range(10):
        data = photo_jpegs[k % len(photo_jpegs)]
        name = f"{k:02d}.jpg"
        if k == 3:
            name, data = "03.png", _png_bomb_header(20000, 20000)
        elif k == 6:
            data = data[:len(data) // 2]
        (root / "a" / name).write_bytes(data)
    return str(root)


def test_peek_image_shape_names_the_file_of_a_bomb(bad_folder):
    """peek_image_shape refuses the bomb from its header, naming the reader's file (as the
    decoders do); the real photos' shapes are those of their decodes."""
    reader = ndd.readers.File(file_root=bad_folder)
    got = []
    for jpegs, _ in reader.next_epoch(batch_size=2):
        try:
            shapes = ndd.peek_image_shape(jpegs)
            got.append([tuple(np.asarray(t).tolist()) for t in shapes.tensors])
        except ValueError as exc:
            got.append(str(exc))
    assert isinstance(got[1], str) and "03.png" in got[1] and "20000x20000" in got[1], got[1]
    assert "sample 1" in got[1] and "set_max_image_pixels" in got[1]
    first = ndd.decoders.image(next(iter(reader.next_epoch(batch_size=2)))[0])
    assert got[0] == [tuple(np.asarray(t).shape) for t in first.tensors]


def _bad_epoch(root, mode):
    """One epoch of a resize -> crop_mirror_normalize body: per batch, the output or the
    error's message."""
    reader = ndd.readers.File(file_root=root)
    got = []
    ctx = ndd.EvalMode.deferred if mode == "deferred" else contextlib.nullcontext()
    with ctx:
        for jpegs, _ in reader.next_epoch(batch_size=2, compile=mode == "compile"):
            out = ndd.crop_mirror_normalize(ndd.resize(ndd.decoders.image(jpegs),
                                                       size=(24, 24)),
                                            crop=(16, 16), mean=MEAN, std=STD)
            try:
                got.append(out.torch().numpy().copy())
            except ValueError as exc:           # DecodeError is a ValueError
                assert type(exc).__name__ == "DecodeError", exc
                got.append(str(exc))
    return got


def _check_bad_epoch(got, want=None):
    assert len(got) == 5
    assert [isinstance(g, str) for g in got] == [False, True, False, True, False]
    assert "03.png" in got[1] and re.search(BOMB_MESSAGE, got[1]), got[1]
    assert "06.jpg" in got[3] and "truncated JPEG" in got[3], got[3]
    assert "decoders.image (called at" in got[1] and "decoders.image (called at" in got[3]
    if want is not None:
        for g, w in zip(got, want):
            if isinstance(w, str):
                assert g == w
            else:
                np.testing.assert_array_equal(g, w)


def test_a_bad_file_costs_its_batch_in_every_mode(bad_folder):
    """Eager, deferred and compile mode: the batch with the bomb and the one with the
    truncated file raise where they are consumed, naming the file; the other three batches
    come out, the same in every mode."""
    eager = _bad_epoch(bad_folder, "eager")
    _check_bad_epoch(eager)
    for mode in ("deferred", "compile"):
        _check_bad_epoch(_bad_epoch(bad_folder, mode), eager)


def test_the_size_limit_travels_to_the_process_lanes(workers, workers_now):
    """Workers are separate processes: every call carries ndd's limit (and Pillow's own)."""
    from PIL import Image
    saved, saved_pil = ndd.get_max_image_pixels(), Image.MAX_IMAGE_PIXELS
    pool = workers_now()
    try:
        ndd.set_max_image_pixels(12345)
        Image.MAX_IMAGE_PIXELS = 777
        assert pool.broadcast("runtime.codecs.limits:get_max_image_pixels") == [12345] * 2
        assert pool.call("runtime.codecs.limits:process_settings") == (12345, 777)
        ndd.set_max_image_pixels(None)
        assert pool.call("runtime.codecs.limits:get_max_image_pixels") is None
    finally:
        ndd.set_max_image_pixels(saved)
        Image.MAX_IMAGE_PIXELS = saved_pil
    assert pool.call("runtime.codecs.limits:process_settings") == (saved, saved_pil)


@pytest.mark.parametrize("mode", ["deferred", "compile"])
def test_a_bad_file_costs_its_batch_with_process_lanes(bad_folder, workers, workers_now, mode):
    """The fused decode chain runs in the worker processes: the same batches fail with the
    same messages, the others come out with the same values as on threads."""
    from runtime.workers import pool as worker_pool
    calls = workers_now().calls
    got = _bad_epoch(bad_folder, mode)
    assert workers_now().calls > calls                   # the lanes did run batches
    worker_pool.set_enabled(False)
    try:
        want = _bad_epoch(bad_folder, mode)
    finally:
        worker_pool.set_enabled(True)
    _check_bad_epoch(got, want)


_CRASH_HOOK = """
import os, signal
import runtime.codecs.image as image
_source = image._source

def crashing_source(data, sample):
    raw = data.buf if data.__class__ is image.ParsedImage else data
    if bytes(memoryview(raw)[:9]) == b"NDD-CRASH":
        os.kill(os.getpid(), signal.SIGSEGV)       # what a native crash in a codec does
    return _source(data, sample)

image._source = crashing_source
"""


@pytest.mark.parametrize("mode", ["deferred", "compile"])
def test_a_worker_that_crashes_costs_only_its_batch(tmp_path, photo_jpegs, workers, workers_now,
                                                     monkeypatch, mode):
    """A worker process killed by SIGSEGV while it decodes a file (test hook: a file that
    crashes the workers' decoder) costs that batch an error naming its files, and a warning;
    the batch is not decoded again in the training process (where a real crashing file would
    crash it); the training process and the epoch's other batches go on, on new workers."""
    from runtime.workers import pool as worker_pool
    monkeypatch.setattr(worker_pool.state, "deaths", 0)
    monkeypatch.setattr(worker_pool.state, "crashes", 0)
    root = tmp_path / "crash"
    (root / "a").mkdir(parents=True)
    for k in range(6):
        data = b"NDD-CRASH: not an image" if k == 2 else photo_jpegs[k % len(photo_jpegs)]
        (root / "a" / f"{k}.jpg").write_bytes(data)
    hooked = workers_now()
    with ThreadPoolExecutor(2) as helper:   # the hook, in every worker (a busy one: once free)
        hooked.broadcast("builtins:exec", _CRASH_HOOK, {}, helper=helper.submit)
    reader = ndd.readers.File(file_root=str(root))
    got = []

    def body(jpegs):
        out = ndd.crop_mirror_normalize(ndd.resize(ndd.decoders.image(jpegs), size=(24, 24)),
                                        crop=(16, 16), mean=MEAN, std=STD)
        try:
            got.append(tuple(out.torch().shape))
        except worker_pool.WorkerCrashed as exc:
            got.append(str(exc))
    # batches [0 1] [2 3] [4 5]; compile mode traces the first batch on threads
    with pytest.warns(RuntimeWarning, match=r"worker process crashed .*SIGSEGV.*not redone"):
        if mode == "compile":
            for jpegs, _ in reader.next_epoch(batch_size=2, compile=True):
                body(jpegs)
        else:
            with ndd.EvalMode.deferred:
                for jpegs, _ in reader.next_epoch(batch_size=2):
                    body(jpegs)
    assert got[0] == got[2] == (2, 3, 16, 16), got
    assert "crashed (SIGSEGV)" in got[1] and "2.jpg" in got[1] and "3.jpg" in got[1], got[1]
    assert "not decoded again in this process" in got[1]
    assert hooked.closed and worker_pool.state.crashes == 1
    assert worker_pool.state.deaths == 0 and not worker_pool.state.failed
    fresh = workers_now()                                 # new workers, without the hook
    assert fresh is not hooked
