"""runtime/readers/mapped.py: file maps opened on demand, kept up to the limit (least
recently used dropped first), mapped again when a file changes; empty and missing files."""
import os

import numpy as np
import pytest

from runtime.readers.mapped import MappedFiles


def _write(path, data, mtime_ns=None):
    with open(path, "wb") as f:
        f.write(data)
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))


def test_bytes_limit_and_remapping(tmp_path):
    paths = [str(tmp_path / f"{k}.bin") for k in range(3)]
    for k, p in enumerate(paths):
        _write(p, bytes([k]) * (k + 5))
    m = MappedFiles(paths, limit=2)
    a = m.get(0)
    assert a.dtype == np.uint8 and a.tobytes() == b"\0" * 5 and not a.flags.writeable
    assert m.get(0) is a and m.generation(0) == 1          # kept
    m.get(1)
    m.get(2)                                               # over the limit: 0 dropped
    assert a.tobytes() == b"\0" * 5                        # a live view stays valid
    assert m.get(0) is not a and m.generation(0) == 2
    # a file replaced (another size, another time): mapped again, the new bytes
    st = os.stat(paths[1])
    _write(paths[1], b"new contents", st.st_mtime_ns + 10**9)
    assert m.get(1).tobytes() == b"new contents" and m.generation(1) == 2
    # same size, only the modification time moves: mapped again too
    _write(paths[1], b"NEW CONTENTS", st.st_mtime_ns + 2 * 10**9)
    assert m.get(1).tobytes() == b"NEW CONTENTS" and m.generation(1) == 3
    m.clear()
    assert m.get(2).tobytes() == b"\2" * 7


def test_empty_and_missing_files(tmp_path):
    empty, missing = str(tmp_path / "e"), str(tmp_path / "nope")
    _write(empty, b"")
    m = MappedFiles([empty, missing])
    assert m.get(0).size == 0
    with pytest.raises(OSError):
        m.get(1)
