"""parse_example's protobuf fast path (runtime/readers/tf_example_proto.py) against the
inputs of encode_example and against the hand-written wire-format parser."""
import struct

import numpy as np
import pytest

from runtime.readers.tfrecord import (BYTES, FLOAT, INT64, encode_example, parse_example,
                                      parse_example_by_hand)


def _ld(num, payload):
    """A length-delimited field, written here independently of encode_example."""
    n, out = len(payload), bytearray()
    key = num << 3 | 2
    out.append(key)
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out) + payload


def test_values_match_the_inputs():
    rng = np.random.default_rng(3)
    for _ in range(30):
        feats = {
            "image": rng.integers(0, 256, int(rng.integers(0, 3000)), np.uint8).tobytes(),
            "label": rng.integers(-2**63, 2**63 - 1, int(rng.integers(0, 5)),
                                  dtype=np.int64).tolist(),
            "box": rng.normal(size=int(rng.integers(1, 9))).astype(np.float32).tolist(),
            "names": [b"a", b"", "\u00e9t\u00e9".encode()],
        }
        got = parse_example(encode_example(feats))
        assert got == parse_example_by_hand(encode_example(feats))
        assert got["image"] == (BYTES, [feats["image"]])
        assert got["label"][1] == feats["label"] and got["box"] == (FLOAT, feats["box"])
        assert got["names"] == (BYTES, feats["names"])
        assert got["label"][0] == (INT64 if feats["label"] else got["label"][0])


def test_unpacked_values_empty_features_and_fallback():
    # a FloatList with two unpacked fixed32 values, an Int64List with one unpacked varint,
    # and a Feature with no value list
    floats = _ld(1, b"\x0d" + struct.pack("<f", 1.5) + b"\x0d" + struct.pack("<f", -2.0))
    ints = _ld(1, b"\x08\x07")
    entries = (_ld(1, _ld(1, b"f") + _ld(2, _ld(2, floats[2:]))) +
               _ld(1, _ld(1, b"i") + _ld(2, _ld(3, ints[2:]))) +
               _ld(1, _ld(1, b"none") + _ld(2, b"")))
    data = _ld(1, entries)
    assert parse_example(data) == parse_example_by_hand(data) == {
        "f": (FLOAT, [1.5, -2.0]), "i": (INT64, [7]), "none": (None, [])}
    # a truncated message: protobuf rejects it, the hand parser names the problem
    with pytest.raises(ValueError, match="runs past the end|truncated"):
        parse_example(data[:-3])
