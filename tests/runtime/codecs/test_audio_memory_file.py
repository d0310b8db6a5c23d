"""libsndfile reads the encoded bytes through a per-thread in-memory file descriptor
(runtime/codecs/audio.py ``_MemoryFile``) instead of Python callbacks on a BytesIO: the same
samples and rate as libsndfile reading the file from disk, files of every size one after
another on one descriptor (longer, then shorter: no stale tail), on several threads at once;
undecodable data still raises the BytesIO read's error."""
from __future__ import annotations

import io
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from runtime.codecs import audio as codec
from runtime.codecs.errors import DecodeError

sf = pytest.importorskip("soundfile")
RNG = np.random.default_rng(41)

FORMATS = [("FLAC", "PCM_16", "int16"), ("FLAC", "PCM_24", "int32"), ("OGG", "VORBIS", "float32"),
           ("WAV", "FLOAT", "float32"), ("AIFF", "PCM_16", "int16")]


def _encoded(tmp_path, k, fmt, subtype, frames, channels):
    pcm = RNG.integers(-20000, 20000, (frames, channels)).astype(np.int16)
    path = tmp_path / f"f{k}.{fmt.lower()}"
    sf.write(str(path), pcm, 16000, format=fmt, subtype=subtype)
    return str(path), path.read_bytes()


@pytest.mark.parametrize("fmt,subtype,dtype", FORMATS)
def test_memory_file_reads_what_libsndfile_reads_from_disk(tmp_path, fmt, subtype, dtype):
    assert codec._memory_file() is not None         # Linux: memfd_create
    files = [_encoded(tmp_path, k, fmt, subtype, n, c)
             for k, (n, c) in enumerate([(9000, 1), (300, 2), (20000, 1), (1, 1), (4100, 2)])]
    for path, data in files:
        got, rate = codec.decode_audio(data, dtype)
        want, want_rate = sf.read(path, dtype=dtype, always_2d=True)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes() and rate == want_rate == 16000.0


def test_memory_files_of_several_threads(tmp_path):
    files = [_encoded(tmp_path, k, "FLAC", "PCM_16", int(n), 1)
             for k, n in enumerate(RNG.integers(1, 30000, 24))]
    want = [sf.read(p, dtype="int16", always_2d=True)[0].tobytes() for p, _ in files]
    with ThreadPoolExecutor(4) as ex:
        for _ in range(3):
            got = list(ex.map(lambda f: codec.decode_audio(f[1], "int16")[0].tobytes(), files))
            assert got == want


def test_undecodable_data_raises_the_bytesio_error():
    data = b"fLaC" + bytes(RNG.integers(0, 256, 500, dtype=np.uint8))
    with pytest.raises(sf.SoundFileError) as direct:
        sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
    with pytest.raises(DecodeError, match="cannot decode audio") as ours:
        codec.decode_audio(data, "float32", sample="sample 3")
    text = str(ours.value)
    assert "(504 bytes)" in text
    # libsndfile's reason is the BytesIO read's (the object's address aside)
    assert str(direct.value).split(": ", 1)[1] in text
