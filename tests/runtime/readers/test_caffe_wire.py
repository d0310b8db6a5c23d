"""The Caffe / Caffe2 records read from their wire bytes (runtime/readers/caffe_wire.py) give
what google.protobuf gives, and every other record goes to protobuf."""
import struct

import lmdb
import numpy as np
import pytest

from runtime.readers import caffe_proto as pb
from runtime.readers.caffe import parse_datum, parse_tensor_protos
from runtime.readers.caffe_wire import common_batch, datum_parts, tensor_protos_parts
from runtime.readers.lmdb_store import LMDBStore


def _varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _field(number, wire, payload):
    tag = _varint(number << 3 | wire)
    if wire == 2:
        return tag + _varint(len(payload)) + payload
    return tag + payload


def _by_protobuf_datum(raw):
    d = pb.Datum.FromString(raw)
    return bytes(d.data), d.label


def _by_protobuf_protos(raw):
    t0, t1 = pb.TensorProtos.FromString(raw).protos
    vals = t1.int32_data if t1.data_type == pb.INT32 else t1.float_data
    assert t0.data_type == pb.STRING and len(t0.string_data) == 1 and len(vals) == 1
    return bytes(t0.string_data[0]), vals[0], t1.data_type == pb.FLOAT


RNG = np.random.default_rng(17)
IMAGES = [RNG.integers(0, 256, n, dtype=np.uint8).tobytes() for n in (0, 1, 127, 128, 300,
                                                                        20000)]
LABELS = [0, 1, 127, 128, 2 ** 31 - 1, -1, -2 ** 31, 99999]


@pytest.mark.parametrize("encoded", [None, True])
def test_common_datums_match_protobuf(encoded):
    for img in IMAGES:
        for lab in LABELS:
            d = pb.Datum(data=img, label=lab)
            if encoded is not None:
                d.encoded = encoded
            raw = d.SerializeToString()
            start, end, label = datum_parts(raw)
            assert (raw[start:end], label) == _by_protobuf_datum(raw)
            image, lab_out = parse_datum(raw, "db at key k")
            assert image.tobytes() == img and image.dtype == np.uint8 and image.flags.writeable
            assert lab_out.dtype == np.int32 and lab_out.tolist() == [lab]


def test_other_datums_go_to_protobuf():
    img = IMAGES[3]
    others = [
        pb.Datum(data=img, label=1, encoded=False, channels=1, height=1, width=128),
        pb.Datum(data=img, label=1, encoded=False),
        pb.Datum(data=img),
        pb.Datum(label=3),
        pb.Datum(data=img, label=2, channels=3),
        pb.Datum(data=img, label=2, float_data=[1.0]),
    ]
    raws = [d.SerializeToString() for d in others]
    good = pb.Datum(data=img, label=5).SerializeToString()
    raws += [
        _field(5, 0, _varint(5)) + _field(4, 2, img),          # label before data
        good + _field(5, 0, _varint(6)),                       # label twice (last wins)
        good[:-1],                                             # cut short
        good + b"\x00",                                        # trailing garbage
        b"", b"\x22", b"\x22\xff",
    ]
    for raw in raws:
        assert datum_parts(raw) is None, raw[:8]
    # a repeated label: protobuf's answer (the last), via the protobuf path
    assert parse_datum(raws[7], "k")[1].tolist() == [6]


def _protos(img, label, kind, packed=True, first=None):
    t0 = first if first is not None else \
        _field(2, 0, _varint(pb.STRING)) + _field(6, 2, img)
    if kind == "int":
        val = _field(4, 2, _varint(label)) if packed else _field(4, 0, _varint(label))
        t1 = _field(2, 0, _varint(pb.INT32)) + val
    else:
        f = struct.pack("<f", label)
        val = _field(3, 2, f) if packed else _field(3, 5, f)
        t1 = _field(2, 0, _varint(pb.FLOAT)) + val
    return _field(1, 2, t0) + _field(1, 2, t1)


@pytest.mark.parametrize("packed", [True, False])
def test_common_caffe2_records_match_protobuf(packed):
    for img in IMAGES:
        for lab in LABELS:
            raw = _protos(img, lab, "int", packed)
            start, end, label, is_float = tensor_protos_parts(raw)
            assert (raw[start:end], label, is_float) == _by_protobuf_protos(raw)
            image, lab_out = parse_tensor_protos(raw, "k")
            assert image.tobytes() == img and lab_out.dtype == np.int32
            assert lab_out.tolist() == [lab]
        for lab in (0.0, -0.0, 1.5, -3.25e-39, 3.4e38, float("inf")):
            raw = _protos(img, lab, "float", packed)
            start, end, label, is_float = tensor_protos_parts(raw)
            assert (raw[start:end], label, is_float) == _by_protobuf_protos(raw)
            image, lab_out = parse_tensor_protos(raw, "k")
            expect = np.array([_by_protobuf_protos(raw)[1]], np.float32)
            assert lab_out.dtype == np.float32 and lab_out.tobytes() == expect.tobytes()
    # the writer's own records (google.protobuf's encoding) take this path too
    msg = pb.TensorProtos()
    msg.protos.add(data_type=pb.STRING, string_data=[IMAGES[4]])
    msg.protos.add(data_type=pb.INT32, int32_data=[7])
    assert tensor_protos_parts(msg.SerializeToString())[2:] == (7, False)


def test_other_caffe2_records_go_to_protobuf():
    img = IMAGES[4]
    nan = _protos(img, float("nan"), "float")
    others = [
        nan,
        _protos(img, 1, "int", first=_field(1, 0, _varint(3)) + _field(2, 0, _varint(4))
                + _field(6, 2, img)),                                      # with dims
        _protos(img, 1, "int", first=_field(6, 2, img) + _field(2, 0, _varint(4))),  # order
        _protos(img, 1, "int", first=_field(2, 0, _varint(4)) + _field(6, 2, img)
                + _field(6, 2, img)),                                      # two strings
        _protos(img, 1, "int") + _field(1, 2, b""),                       # a third tensor
        _protos(img, 1, "int")[:-1],                                       # cut short
        _field(1, 2, _field(2, 0, _varint(4)) + _field(6, 2, img))
        + _field(1, 2, _field(4, 2, _varint(1))),                          # default FLOAT
        _field(1, 2, _field(2, 0, _varint(4)) + _field(6, 2, img))
        + _field(1, 2, _field(2, 0, _varint(2)) + _field(4, 2, _varint(1) + _varint(2))),
        b"", b"\x0a", b"\x0a\x05\x10\x04",
    ]
    for raw in others:
        assert tensor_protos_parts(raw) is None, raw[:8]
    # the NaN label keeps the bits protobuf gives
    lab = parse_tensor_protos(nan, "k")[1]
    assert lab.dtype == np.float32 and np.isnan(lab[0])


def test_a_batch_of_common_records_equals_the_record_by_record_parse():
    datums = [pb.Datum(data=img, label=lab).SerializeToString()
              for img, lab in zip(IMAGES, LABELS)]
    images, labels = common_batch(datums, caffe2=False)
    for raw, img, lab in zip(datums, images, labels):
        one_img, one_lab = parse_datum(raw, "k")
        assert img.tobytes() == one_img.tobytes() and img.flags.writeable
        assert lab.dtype == one_lab.dtype and lab.shape == (1,) and lab.tolist() == \
            one_lab.tolist()
    for kind, labs in (("int", LABELS), ("float", [0.5, -2.0, 1e-40, 7.0, 3.0, 1.0])):
        protos = [_protos(img, lab, kind) for img, lab in zip(IMAGES, labs)]
        images, labels = common_batch(protos, caffe2=True)
        for raw, img, lab in zip(protos, images, labels):
            one_img, one_lab = parse_tensor_protos(raw, "k")
            assert img.tobytes() == one_img.tobytes()
            assert lab.dtype == one_lab.dtype and lab.tobytes() == one_lab.tobytes()
    # one record outside the common form, or labels of two types: record by record
    odd = pb.Datum(data=IMAGES[2], label=1, channels=3).SerializeToString()
    assert common_batch(datums[:2] + [odd], caffe2=False) is None
    assert common_batch([_protos(IMAGES[1], 1, "int"), _protos(IMAGES[1], 1.0, "float")],
                        caffe2=True) is None


def test_views_of_the_map_give_what_bytes_give_and_never_escape(tmp_path):
    protos = [_protos(img, lab, "int") for img, lab in zip(IMAGES, LABELS)]
    env = lmdb.open(str(tmp_path / "db"), map_size=1 << 24)
    with env.begin(write=True) as txn:
        for k, raw in enumerate(protos):
            txn.put(b"%03d" % k, raw)
    env.close()
    store = LMDBStore([str(tmp_path / "db")], "readers.Caffe2")
    wanted = store.records()
    assert all(type(k) is bytes for _, k in wanted)
    assert store.read(wanted) == protos                 # bytes, copied
    seen = []

    def use(values):
        seen.extend(type(v) for v in values)
        return common_batch(values, caffe2=True)
    images, labels = store.read_with(wanted, use)
    assert set(seen) == {memoryview}
    want_images, want_labels = common_batch(protos, caffe2=True)
    assert [i.tobytes() for i in images] == [i.tobytes() for i in want_images]
    assert all(i.flags.writeable and i.flags.owndata for i in images)   # copies, not views
    assert [x.tolist() for x in labels] == [x.tolist() for x in want_labels]
    store.close()
    with pytest.raises(RuntimeError, match="closed"):
        store.read_with(wanted, use)
