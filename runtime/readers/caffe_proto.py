"""The protobuf messages of Caffe and Caffe2 LMDB records, built at run time with
``google.protobuf`` (no generated ``_pb2`` module, no ``protoc``).

Field numbers and types are those of the public ``caffe.proto`` (``Datum``) and
``caffe2.proto`` (``TensorProto``, ``TensorProtos``), proto2 syntax:

    message Datum {                       // Caffe: one record per sample
      optional int32 channels = 1;  optional int32 height = 2;  optional int32 width = 3;
      optional bytes data = 4;      // the encoded file, or raw pixels (encoded = false)
      optional int32 label = 5;
      repeated float float_data = 6;
      optional bool encoded = 7 [default = false];
    }
    message TensorProto {                 // Caffe2: one tensor of a record
      repeated int64 dims = 1;
      optional DataType data_type = 2 [default = FLOAT];
      repeated float float_data = 3 [packed];   repeated int32 int32_data = 4 [packed];
      optional bytes byte_data = 5;             repeated bytes string_data = 6;
      optional string name = 7;                 repeated double double_data = 9 [packed];
      repeated int64 int64_data = 10 [packed];
    }
    message TensorProtos { repeated TensorProto protos = 1; }   // Caffe2: one record

``DataType``: UNDEFINED 0, FLOAT 1, INT32 2, BYTE 3, STRING 4, BOOL 5, UINT8 6, INT8 7,
UINT16 8, INT16 9, INT64 10, FLOAT16 12, DOUBLE 13. (The ``segment`` field of the full
definition is left out: a parser skips fields it does not know.)
"""
from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = ["Datum", "TensorProto", "TensorProtos", "DATA_TYPES", "FLOAT", "INT32", "BYTE",
           "STRING", "INT64"]

#: TensorProto.DataType names by value
DATA_TYPES = {0: "UNDEFINED", 1: "FLOAT", 2: "INT32", 3: "BYTE", 4: "STRING", 5: "BOOL",
              6: "UINT8", 7: "INT8", 8: "UINT16", 9: "INT16", 10: "INT64", 12: "FLOAT16",
              13: "DOUBLE"}
FLOAT, INT32, BYTE, STRING, INT64 = 1, 2, 3, 4, 10

_F = descriptor_pb2.FieldDescriptorProto


def _field(msg, name, number, ftype, label=_F.LABEL_OPTIONAL, *, packed=False,
           type_name=None, default=None):
    f = msg.field.add(name=name, number=number, type=ftype, label=label)
    if packed:
        f.options.packed = True
    if type_name:
        f.type_name = type_name
    if default is not None:
        f.default_value = default
    return f


def _build():
    rep = _F.LABEL_REPEATED
    caffe = descriptor_pb2.FileDescriptorProto(name="ndd_caffe.proto", package="ndd.caffe",
                                               syntax="proto2")
    d = caffe.message_type.add(name="Datum")
    _field(d, "channels", 1, _F.TYPE_INT32)
    _field(d, "height", 2, _F.TYPE_INT32)
    _field(d, "width", 3, _F.TYPE_INT32)
    _field(d, "data", 4, _F.TYPE_BYTES)
    _field(d, "label", 5, _F.TYPE_INT32)
    _field(d, "float_data", 6, _F.TYPE_FLOAT, rep)
    _field(d, "encoded", 7, _F.TYPE_BOOL, default="false")

    caffe2 = descriptor_pb2.FileDescriptorProto(name="ndd_caffe2.proto", package="ndd.caffe2",
                                                syntax="proto2")
    t = caffe2.message_type.add(name="TensorProto")
    enum = t.enum_type.add(name="DataType")
    for value, name in DATA_TYPES.items():
        enum.value.add(name=name, number=value)
    _field(t, "dims", 1, _F.TYPE_INT64, rep)
    _field(t, "data_type", 2, _F.TYPE_ENUM, type_name=".ndd.caffe2.TensorProto.DataType",
           default="FLOAT")
    _field(t, "float_data", 3, _F.TYPE_FLOAT, rep, packed=True)
    _field(t, "int32_data", 4, _F.TYPE_INT32, rep, packed=True)
    _field(t, "byte_data", 5, _F.TYPE_BYTES)
    _field(t, "string_data", 6, _F.TYPE_BYTES, rep)
    _field(t, "name", 7, _F.TYPE_STRING)
    _field(t, "double_data", 9, _F.TYPE_DOUBLE, rep, packed=True)
    _field(t, "int64_data", 10, _F.TYPE_INT64, rep, packed=True)
    ts = caffe2.message_type.add(name="TensorProtos")
    _field(ts, "protos", 1, _F.TYPE_MESSAGE, rep, type_name=".ndd.caffe2.TensorProto")

    pool = descriptor_pool.DescriptorPool()
    pool.Add(caffe)
    pool.Add(caffe2)
    get = message_factory.GetMessageClass
    return (get(pool.FindMessageTypeByName("ndd.caffe.Datum")),
            get(pool.FindMessageTypeByName("ndd.caffe2.TensorProto")),
            get(pool.FindMessageTypeByName("ndd.caffe2.TensorProtos")))


#: message classes: ``Datum()`` / ``Datum.FromString(b)``, ``TensorProtos.FromString(b)``
Datum, TensorProto, TensorProtos = _build()
