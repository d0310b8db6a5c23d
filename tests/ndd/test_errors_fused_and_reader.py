"""Errors name the user's op and line even when the compiler fused it; reader epochs close."""
import contextlib
import io

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
