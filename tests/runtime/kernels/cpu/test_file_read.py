"""runtime/kernels/cpu/file_read.py: io.file.read's path decoding and file reading."""
import numpy as np
import pytest

from runtime.kernels.cpu.file_read import path_of, read_file, write_ppm


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


def test_write_ppm_ascii_format(tmp_path):
    img = np.arange(18, dtype=np.uint8).reshape(2, 3, 3)
    write_ppm(str(tmp_path / "a.ppm"), img)
    rows = [" ".join(str(v) for v in img[r].ravel()) + " " for r in range(2)]
    assert (tmp_path / "a.ppm").read_text() == "P3\n3 2\n255\n" + "\n".join(rows) + "\n"
    write_ppm(str(tmp_path / "g.ppm"), np.full((1, 2, 1), 255, np.uint8))
    assert (tmp_path / "g.ppm").read_text() == "P2\n2 1\n255\n255 255 \n"
    with pytest.raises(ValueError, match="1 or 3 channels"):
        write_ppm(str(tmp_path / "x.ppm"), np.zeros((2, 2, 4), np.uint8))
