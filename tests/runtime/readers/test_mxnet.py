"""RecordIO framing, image records and index files (runtime/readers/mxnet.py), checked
against bytes built by hand here with struct (dmlc-core's layout, MXNet's IRHeader)."""
import struct

import numpy as np
import pytest

from runtime.readers import mxnet as mx

MAGIC = struct.pack("<I", 0xCED7230A)


def _part(cflag, data):
    # magic | cflag << 29 | length | data | pad to 4
    body = data + bytes((4 - len(data) % 4) % 4)
    return MAGIC + struct.pack("<I", (cflag << 29) + len(data)) + body


def test_single_part_record_layout():
    assert mx.frame_record(b"abcde") == MAGIC + struct.pack("<I", 5) + b"abcde\0\0\0"
    assert mx.frame_record(b"") == MAGIC + b"\0\0\0\0"
    data, used = mx.join_record(_part(0, b"xyz") + b"junk", 0, "f.rec")
    assert (data, used) == (b"xyz", 12)


def test_magic_inside_data_splits_into_parts_and_joins_back():
    data = b"abcd" + MAGIC + b"efgh" + MAGIC + b"ij"
    framed = mx.frame_record(data)
    assert framed == _part(1, b"abcd") + _part(2, b"efgh") + _part(3, b"ij")
    assert mx.join_record(framed, 100, "f.rec") == (data, len(framed))
    # a magic word that is not 4-aligned is plain data
    odd = b"a" + MAGIC + b"bcd"
    assert mx.frame_record(odd) == _part(0, odd)
    # magic at the very start and end: empty first / last parts
    edge = MAGIC + b"zz" + b"\0\0" + MAGIC
    assert mx.join_record(mx.frame_record(edge), 0, "f.rec")[0] == edge


def test_image_header_and_labels():
    one = struct.pack("<IfQQ", 0, 4.5, 7, 0) + b"JPEGDATA"
    img, lab = mx.unpack_image(one)
    assert img.tobytes() == b"JPEGDATA" and img.dtype == np.uint8
    assert lab.dtype == np.float32 and lab.tolist() == [4.5]
    many = struct.pack("<IfQQ", 3, 0.0, 1, 2) + struct.pack("<3f", 1, -2, 0.5) + b"PNG"
    img, lab = mx.unpack_image(many)
    assert img.tobytes() == b"PNG" and lab.tolist() == [1.0, -2.0, 0.5]
    assert mx.pack_image(b"JPEGDATA", 4.5, 7) == one
    assert mx.pack_image(b"PNG", [1, -2, 0.5], 1, 2) == many
    with pytest.raises(ValueError, match="less than the 24-byte image header"):
        mx.unpack_image(b"\0" * 10, "here")
    with pytest.raises(ValueError, match="here: the header announces 5 labels"):
        mx.unpack_image(struct.pack("<IfQQ", 5, 0, 0, 0) + b"\0" * 8, "here")


def test_errors_name_file_and_offset():
    with pytest.raises(ValueError, match=r"'f.rec': bad magic 0x64636261 at offset 40 .*"
                                         r"index does not match"):
        mx.join_record(b"abcd" + b"\0" * 8, 40, "f.rec", "f.idx")
    with pytest.raises(ValueError, match=r"truncated record at offset 8: the part announces "
                                         r"9 bytes, 3 are left"):
        mx.join_record(MAGIC + struct.pack("<I", 9) + b"abc", 8, "f.rec")
    # a first part followed by the end of the data
    with pytest.raises(ValueError, match="truncated record at offset 12"):
        mx.join_record(_part(1, b"abcd"), 0, "f.rec")
    # a middle part where a record starts
    with pytest.raises(ValueError, match="continuation flag 2, expected 0 or 1"):
        mx.join_record(_part(2, b"ab"), 0, "f.rec")


def test_write_and_read_index(tmp_path):
    p, ip = tmp_path / "d.rec", tmp_path / "d.idx"
    n = mx.write_recordio(p, [(b"one", 1), (b"two" + b"\0" + MAGIC, [2, 3])], ip)
    assert n == 2
    raw = p.read_bytes()
    first = _part(0, struct.pack("<IfQQ", 0, 1.0, 0, 0) + b"one")
    assert raw[:len(first)] == first
    assert ip.read_text() == f"0\t0\n1\t{len(first)}\n"
    assert mx.read_index(ip, p) == [0, len(first)]
    data, _ = mx.join_record(raw[len(first):], len(first), str(p))
    img, lab = mx.unpack_image(data)
    assert img.tobytes() == b"two\0" + MAGIC and lab.tolist() == [2.0, 3.0]
    bad = tmp_path / "bad.idx"
    bad.write_text("0 0\n1 x\n")
    with pytest.raises(ValueError, match=r"bad.idx' line 2: expected 'key offset'"):
        mx.read_index(bad, p)
    bad.write_text(f"0 {len(raw)}\n")
    with pytest.raises(ValueError, match=r"line 1 \(offset \d+\) does not match .*d.rec"):
        mx.read_index(bad, p)
    with pytest.raises(ValueError, match="cannot be read"):
        mx.read_index(tmp_path / "none.idx", p)
