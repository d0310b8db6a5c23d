"""runtime/readers/tfrecord.py and tfrecord_reader.py: CRC-32C, framing, index files, the
tf.train.Example wire format, feature extraction."""
import os
import struct

import numpy as np
import pytest

from runtime.readers.tfrecord import (BYTES, FLOAT, INT64, crc32c, crc_lanes,
                                      encode_example, frame_record, masked_crc32c, parse_example,
                                      read_index, read_record, scan_records, write_index,
                                      write_tfrecord)
from runtime.readers.tfrecord_reader import Feature, TFRecordReaderCore, extract_feature

REFERENCE = "/work/shared/peer/data/extra/db/tfrecord/train"   # written by TensorFlow


def test_crc32c_known_values():
    # RFC 3720 (iSCSI) test vectors of CRC-32C
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(bytes(32)) == 0x8A9136AA
    assert crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(bytes(range(32))) == 0x46DD794E
    c = crc32c(b"abc")
    assert masked_crc32c(b"abc") == (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _hand_encoded_example():
    """A tf.train.Example built byte by byte (unpacked floats and ints, a negative int64,
    an unknown field) -- independent of encode_example."""
    def ld(num, payload):
        assert len(payload) < 128
        return bytes([num << 3 | 2, len(payload)]) + payload
    ints = ld(3, bytes([1 << 3 | 0, 5]) + bytes([1 << 3 | 0]) + b"\xff" * 9 + b"\x01")  # 5, -1
    floats = ld(2, bytes([1 << 3 | 5]) + struct.pack("<f", 1.5) +
                bytes([1 << 3 | 5]) + struct.pack("<f", -2.0))
    strs = ld(1, ld(1, b"ab") + ld(1, b""))
    entries = b"".join(ld(1, ld(1, k) + ld(2, v)) for k, v in
                       [(b"i", ints), (b"f", floats), (b"s", strs)])
    return ld(1, entries) + bytes([7 << 3 | 0, 1])      # + an unknown varint field 7


def test_parse_hand_encoded_example():
    ex = parse_example(_hand_encoded_example())
    assert ex == {"i": (INT64, [5, -1]), "f": (FLOAT, [1.5, -2.0]), "s": (BYTES, [b"ab", b""])}


def test_encode_decode_roundtrip():
    feats = {"img": b"\x00\x01\xff" * 100, "lab": [3, -7, 2**40], "box": np.array([0.5, 1.25]),
             "names": ["a", "bc"]}
    ex = parse_example(encode_example(feats))
    assert ex["img"] == (BYTES, [feats["img"]])
    assert ex["lab"] == (INT64, [3, -7, 2**40])
    assert ex["box"] == (FLOAT, [0.5, 1.25])
    assert ex["names"] == (BYTES, [b"a", b"bc"])


@pytest.mark.skipif(not os.path.exists(REFERENCE), reason="peer data absent")
def test_reference_file_written_by_tensorflow(tmp_path):
    recs = scan_records(REFERENCE)
    with open(REFERENCE + ".idx") as f:
        ref = [tuple(int(x) for x in ln.split()) for ln in f if ln.strip()]
    assert recs == ref
    write_index(REFERENCE, tmp_path / "i.idx")
    assert (tmp_path / "i.idx").read_text() == open(REFERENCE + ".idx").read()
    fd = os.open(REFERENCE, os.O_RDONLY)
    try:
        for off, size in recs:        # both CRCs of every record check
            ex = parse_example(read_record(fd, REFERENCE, off, size))
            kind, (jpeg,) = ex["image/encoded"]
            assert kind == BYTES and jpeg[:3] == b"\xff\xd8\xff" and jpeg[-2:] == b"\xff\xd9"
            assert ex["image/class/label"][0] == INT64
    finally:
        os.close(fd)


def test_corruption_and_mismatched_index(tmp_path):
    p, ip = str(tmp_path / "d.tfrecord"), str(tmp_path / "d.idx")
    write_tfrecord(p, [{"x": [i]} for i in range(3)], ip)
    recs = read_index(ip, p)
    assert recs == scan_records(p)
    data = bytearray(open(p, "rb").read())
    off, size = recs[1]
    data[off + 14] ^= 1              # a bit of record 1's data
    open(p, "wb").write(bytes(data))
    fd = os.open(p, os.O_RDONLY)
    try:
        read_record(fd, p, *recs[0])
        with pytest.raises(ValueError, match=rf"d.tfrecord.*offset {off}: corrupt record: "
                                             r"the CRC of the data"):
            read_record(fd, p, *recs[1])
        data[off + 14] ^= 1
        data[off + 2] ^= 1            # the length
    finally:
        os.close(fd)
    open(p, "wb").write(bytes(data))
    fd = os.open(p, os.O_RDONLY)
    try:
        with pytest.raises(ValueError, match="index entry says.*d.idx.*does not match"):
            read_record(fd, p, *recs[1], index_path=ip)
    finally:
        os.close(fd)
    open(ip, "a").write(f"{off} 99999\n")
    with pytest.raises(ValueError, match=r"d.idx.*line 4.*does not match.*d.tfrecord"):
        read_index(ip, p)
    open(ip, "w").write("0 x\n")
    with pytest.raises(ValueError, match="line 1: expected 'offset size'"):
        read_index(ip, p)
    open(p, "wb").write(frame_record(b"abc")[:-5])
    with pytest.raises(ValueError, match="offset 0 announces 3 bytes, past the end"):
        scan_records(p)


def test_extract_feature():
    parsed = {"i": (INT64, [1, 2, 3, 4, 5, 6]), "s": (BYTES, [b"xyz", b"w"]),
              "f": (FLOAT, [0.5])}
    i64, s, f32 = 0, 1, 2
    e = extract_feature
    np.testing.assert_array_equal(e("i", Feature(False, [2, 3], i64), parsed, "w"),
                                  np.arange(1, 7).reshape(2, 3))
    assert e("i", Feature(True, None, i64), parsed, "w").dtype == np.int64
    assert e("i", Feature(True, [3], i64), parsed, "w").shape == (2, 3)
    np.testing.assert_array_equal(e("s", Feature(False, [], s), parsed, "w"),
                                  np.frombuffer(b"xyz", np.uint8))
    assert e("f", Feature(False, [], f32), parsed, "w").shape == ()
    np.testing.assert_array_equal(e("nope", Feature(False, [2], f32, 0.25), parsed, "w"),
                                  [0.25, 0.25])
    assert e("nope", Feature(True, None, i64, 7), parsed, "w").shape == (0,)
    assert e("nope", Feature(False, [], s, "ab"), parsed, "w").tobytes() == b"ab"
    with pytest.raises(ValueError, match=r"w: feature 'i' holds a int64_list \(int64\), but is described as float32"):
        e("i", Feature(False, [6], f32), parsed, "w")
    with pytest.raises(ValueError, match="has 6 value.*needs 4"):
        e("i", Feature(False, [4], i64), parsed, "w")
    with pytest.raises(ValueError, match="not a multiple of the partial shape"):
        e("i", Feature(True, [4], i64), parsed, "w")
    with pytest.raises(TypeError, match="dtype"):
        Feature(False, [], 5)


def test_core_reads_records_across_files(tmp_path):
    paths, idx = [], []
    for k, n in enumerate([3, 2]):
        p, ip = str(tmp_path / f"{k}.tfrecord"), str(tmp_path / f"{k}.idx")
        write_tfrecord(p, [{"v": [10 * k + j]} for j in range(n)], ip)
        paths.append(p)
        idx.append(ip)
    core = TFRecordReaderCore(path=paths, index_path=idx,
                              features={"v": Feature(False, [1], 0)})
    (vals,), = [tuple(b) for b in core.next_epoch(5)]
    assert [int(v[0]) for v in vals] == [0, 1, 2, 10, 11]
    with pytest.raises(ValueError, match="2 TFRecord file.*1 index file"):
        TFRecordReaderCore(path=paths, index_path=idx[:1], features={"v": Feature(False, [1], 0)})


def test_crc32c_parallel_lanes_match_bytewise():
    rng = np.random.default_rng(0)
    t = [0] * 256
    for i in range(256):        # the table, rebuilt here bit by bit
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 * (c & 1))
        t[i] = c
    for n in [63, 64, 71, 4095, 4096, 4097, 64 * 100 + 17, 70001]:
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        crc = 0xFFFFFFFF
        for b in data:
            crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
        assert crc32c(data) == crc ^ 0xFFFFFFFF, n      # numba's loop
        if n >= 128:
            assert crc_lanes(0xFFFFFFFF, data) == crc, n  # numpy lanes
