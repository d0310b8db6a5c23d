"""runtime/readers/tf_example_wire.py (the compiled TFRecord batch parser) against
google.protobuf's parse of the same records: random Examples, hand-encoded wire variants
(unpacked and mixed repeated fields, empty features, zero-length bytes), and mutated
records, on which the fast path either answers as protobuf does or hands the record on."""
import struct

import numpy as np
import pytest

from runtime.readers.tf_example_proto import Example
from runtime.readers.tf_example_wire import (EMPTY, FALLBACK, MISSING, name_table,
                                             parse_records)
from runtime.readers.tfrecord import BYTES, CRC_TABLE, FLOAT, INT64

_KIND = {"bytes_list": BYTES, "float_list": FLOAT, "int64_list": INT64}


def _varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        out.append((v & 0x7F) | (0x80 if v >> 7 else 0))
        v >>= 7
        if not v:
            return bytes(out)


def _ld(num, payload):
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def _crc_raw(data):
    """CRC-32C bit by bit (the polynomial, not the byte table)."""
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    return c ^ 0xFFFFFFFF


def _crc(data):
    """The CRC masked as TFRecord does."""
    c = _crc_raw(data)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def _frame(data, good_crc=True):
    head = struct.pack("<Q", len(data))
    return head + struct.pack("<I", _crc(head) ^ (0 if good_crc else 1)) + data + \
        struct.pack("<I", _crc(data))


def _parse(messages, names):
    """parse_records over the framed ``messages`` laid end to end."""
    recs = [_frame(m) for m in messages]
    buf = np.frombuffer(b"".join(recs), np.uint8)
    offs = np.cumsum([0] + [len(r) for r in recs[:-1]]).astype(np.int64)
    sizes = np.array([len(r) for r in recs], np.int64)
    return buf, parse_records(buf, offs, sizes, name_table(names), CRC_TABLE)


def _located(buf, res, r, j):
    """``(kind, values)`` of feature j of record r from the parse results."""
    status, kind, first, last, count, at, crc, ivals, fvals = res
    k, c = int(kind[r, j]), int(count[r, j])
    if k in (MISSING, EMPTY):
        return k, []
    if k == BYTES:
        return k, (c, bytes(buf[first[r, j]:last[r, j]]))
    vals = ivals if k == INT64 else fvals
    return k, vals[at[r, j]:at[r, j] + c]


def _expected(msg, name):
    """``(kind, values)`` of feature ``name`` by google.protobuf."""
    ex = Example.FromString(msg)
    if name not in ex.features.feature:
        return MISSING, []
    feat = ex.features.feature[name]
    which = feat.WhichOneof("kind")
    if which is None:
        return EMPTY, []
    vals = list(getattr(feat, which).value)
    if which == "bytes_list":
        return BYTES, (len(vals), vals[0] if vals else b"")
    return _KIND[which], vals


def _check(buf, res, messages, names):
    for r, msg in enumerate(messages):
        if res[0][r]:
            continue
        for j, name in enumerate(names):
            k, got = _located(buf, res, r, j)
            ek, want = _expected(msg, name)
            assert k == ek, (r, name)
            if k == FLOAT:      # bit for bit (protobuf's Python floats quiet a NaN)
                assert got.dtype == np.float32
                with np.errstate(invalid="ignore"):
                    quiet = got.astype(np.float64).astype(np.float32)
                assert quiet.tobytes() == np.asarray(want, np.float32).tobytes()
            elif k == INT64:
                assert np.asarray(got).tolist() == want and got.dtype == np.int64
            else:
                assert got == want


def _random_example(rng):
    ex = Example()
    for i in range(int(rng.integers(0, 6))):
        feat = ex.features.feature[f"f{int(rng.integers(0, 8))}"]
        what = int(rng.integers(0, 4))
        n = int(rng.integers(0, 5))
        if what == 0:
            feat.bytes_list.value.extend(
                bytes(rng.integers(0, 256, int(rng.integers(0, 300)), np.uint8))
                for _ in range(n))
            if n == 0:
                feat.bytes_list.SetInParent()
        elif what == 1:
            v = rng.normal(size=n).astype(np.float32)
            v[rng.random(n) < 0.2] = np.inf
            feat.float_list.value.extend(v.tolist())
            if n == 0:
                feat.float_list.SetInParent()
        elif what == 2:
            feat.int64_list.value.extend(
                rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64).tolist())
            if n == 0:
                feat.int64_list.SetInParent()
        # what == 3: a Feature without a value list
    return ex.SerializeToString()


def test_random_examples_match_protobuf():
    rng = np.random.default_rng(17)
    messages = [_random_example(rng) for _ in range(300)]
    names = [f"f{k}" for k in range(8)] + ["absent"]
    buf, res = _parse(messages, names)
    assert not res[0].any()         # protobuf's own serialization: all answered
    _check(buf, res, messages, names)
    # a subset of the names, in another order
    buf, res = _parse(messages, ["f5", "f0"])
    _check(buf, res, messages, ["f5", "f0"])


def _entry(key, feature):
    return _ld(1, _ld(1, key) + _ld(2, feature))


def test_hand_encoded_variants_match_protobuf():
    f32 = struct.pack("<f", 1.5) + struct.pack("<f", float("nan")) + \
        struct.pack("<I", 0x7FA00001)             # a signalling NaN's bits
    mixed_floats = _ld(2, b"\x0d" + f32[:4] + _ld(1, f32[4:]) + b"\x0d" + f32[:4])
    mixed_ints = _ld(3, b"\x08" + _varint(-1) + _ld(1, _varint(5) + _varint(2**63 - 1)) +
                     b"\x08" + _varint(0) + _ld(1, b""))
    overlong = _ld(3, _ld(1, b"\x85\x80\x00"))    # 5 in three bytes
    messages = [
        _ld(1, _entry(b"a", mixed_floats) + _entry(b"b", mixed_ints)),
        _ld(1, _entry(b"a", _ld(1, _ld(1, b"") + _ld(1, b"x"))) + _entry(b"b", b"")),
        _ld(1, _entry(b"a", _ld(1, b"")) + _entry(b"b", _ld(2, b""))),   # empty lists
        _ld(1, b""),                    # no entries
        b"",                            # no features at all
        _ld(1, _entry(b"b", overlong) + _entry(b"zz", _ld(1, _ld(1, b"q")))),
        _ld(1, _entry(b"", _ld(1, _ld(1, b"empty key"))) + _entry(b"a", _ld(2, _ld(1, f32)))),
    ]
    names = ["a", "b", ""]
    buf, res = _parse(messages, names)
    assert not res[0].any()
    _check(buf, res, messages, names)
    assert _located(buf, res, 0, 1)[1].tolist() == [-1, 5, 2**63 - 1, 0]
    assert _located(buf, res, 0, 0)[1].view(np.uint32)[2] == 0x7FA00001
    assert _located(buf, res, 1, 0)[1] == (2, b"")      # two values, the first empty
    assert int(res[1][1, 1]) == EMPTY and int(res[1][4, 0]) == MISSING


def test_forms_outside_the_fast_path_are_handed_on():
    good = _entry(b"a", _ld(3, _ld(1, b"\x01")))
    messages = [
        _ld(1, good) + _ld(1, good),            # two `features` fields (protobuf merges)
        _ld(1, good + good),                    # the name twice (the map keeps the last)
        _ld(1, good) + b"\x38\x01",             # an unknown field
        _ld(1, _entry("é".encode(), _ld(1, b""))),   # a non-ASCII key (UTF-8 check)
        _ld(1, _ld(1, _ld(2, _ld(1, b"")) + _ld(1, b"a"))),   # value before key
        _ld(1, _entry(b"a", _ld(1, b"") + _ld(3, b""))),     # two kinds in one Feature
        _ld(1, _entry(b"a", _ld(2, _ld(1, b"\0\0\0")))),     # packed floats, 3 bytes
        _ld(1, _entry(b"a", _ld(3, _ld(1, b"\x80")))),       # a truncated packed varint
        _ld(1, _entry(b"a", _ld(3, b"\x08" + b"\xff" * 9 + b"\x02"))),  # bits past 64
        _ld(1, good)[:-1],                      # truncated message
    ]
    buf, res = _parse(messages, ["a"])
    assert res[0].tolist() == [FALLBACK] * len(messages)
    assert (res[1] == MISSING).all()


def test_framing_checks():
    msg = _ld(1, _entry(b"a", _ld(1, _ld(1, b"xyz"))))
    rec = _frame(msg)
    bad = _frame(msg, good_crc=False)
    buf = np.frombuffer(rec + bad + rec[:-2], np.uint8)
    n = len(rec)
    offs = np.array([0, n, 2 * n, 0, -1], np.int64)
    sizes = np.array([n, n, n, n - 1, n], np.int64)
    res = parse_records(buf, offs, sizes, name_table(["a"]), CRC_TABLE)
    # ok; the length's CRC wrong; past the end of the buffer; size other than the
    # record's length; a negative offset
    assert res[0].tolist() == [0, FALLBACK, FALLBACK, FALLBACK, FALLBACK]
    # the data's CRC as the record states it, unmasked: that of the data
    assert int(res[6][0]) == _crc_raw(msg)


@pytest.mark.parametrize("seed", [0, 1])
def test_mutated_records_never_disagree(seed):
    rng = np.random.default_rng(seed)
    base = [_random_example(rng) for _ in range(40)]
    messages = []
    for m in base:
        m = bytearray(m)
        for _ in range(int(rng.integers(1, 4))):
            if m:
                m[int(rng.integers(0, len(m)))] = int(rng.integers(0, 256))
        cut = int(rng.integers(0, len(m) + 1)) if rng.random() < 0.3 else len(m)
        messages.append(bytes(m[:cut]))
    names = [f"f{k}" for k in range(8)]
    buf, res = _parse(messages, names)
    # answered: protobuf reads the record, and reads it the same (a DecodeError fails here)
    _check(buf, res, messages, names)
    assert 0 < int((res[0] == 0).sum()) < len(messages)
