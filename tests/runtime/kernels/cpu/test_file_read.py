"""runtime/kernels/cpu/file_read.py: io.file.read's path decoding and file reading."""
import numpy as np
import pytest

from runtime.kernels.cpu.file_read import path_of, read_file


def _enc(s: str) -> np.ndarray:
    return np.frombuffer(s.encode("utf-8"), np.uint8)


def test_reads_whole_files(tmp_path):
    payload = bytes(range(256)) * 37 + b"tail"
    (tmp_path / "f.bin").write_bytes(payload)
    out = read_file(path_of(_enc(str(tmp_path / "f.bin"))))
    assert out.dtype == np.uint8 and out.shape == (len(payload),)
    assert out.tobytes() == payload


def test_empty_file_is_an_empty_sample(tmp_path):
    (tmp_path / "e").write_bytes(b"")
    assert read_file(path_of(_enc(str(tmp_path / "e")))).shape == (0,)


def test_path_ends_at_nul_and_takes_int8_and_utf8(tmp_path):
    name = tmp_path / "ünï cödé.txt"
    name.write_bytes(b"abc")
    raw = np.concatenate([_enc(str(name)), np.array([0, 65, 66], np.uint8)])
    assert path_of(raw) == str(name).encode()
    assert read_file(path_of(raw.view(np.int8))).tobytes() == b"abc"


def test_errors(tmp_path):
    with pytest.raises(RuntimeError, match="No such file"):
        read_file(path_of(_enc(str(tmp_path / "missing"))))
    with pytest.raises(RuntimeError, match="directory"):
        read_file(path_of(_enc(str(tmp_path))))
    with pytest.raises(ValueError, match="1-D"):
        path_of(_enc("abc").reshape(1, 3))
    with pytest.raises(ValueError, match="empty"):
        path_of(np.zeros(3, np.uint8))
