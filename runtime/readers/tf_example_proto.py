"""TensorFlow's ``tf.train.Example`` as protobuf messages built at run time with
``google.protobuf`` (no generated ``_pb2`` module), for the fast path of
``runtime/readers/tfrecord.py``'s ``parse_example``.

Field numbers and types are those of ``tensorflow/core/example/{example,feature}.proto``
(proto3)::

    message BytesList { repeated bytes value = 1; }
    message FloatList { repeated float value = 1 [packed = true]; }
    message Int64List { repeated int64 value = 1 [packed = true]; }
    message Feature   { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
                                     Int64List int64_list = 3; } }
    message Features  { map<string, Feature> feature = 1; }
    message Example   { Features features = 1; }
"""
from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = ["Example"]

_F = descriptor_pb2.FieldDescriptorProto


def _build():
    fd = descriptor_pb2.FileDescriptorProto(name="ndd_tf_example.proto",
                                            package="ndd.tensorflow", syntax="proto3")
    for name, ftype in (("BytesList", _F.TYPE_BYTES), ("FloatList", _F.TYPE_FLOAT),
                        ("Int64List", _F.TYPE_INT64)):
        m = fd.message_type.add(name=name)
        m.field.add(name="value", number=1, type=ftype, label=_F.LABEL_REPEATED)
    feat = fd.message_type.add(name="Feature")
    feat.oneof_decl.add(name="kind")
    for num, (fname, tname) in enumerate((("bytes_list", "BytesList"),
                                          ("float_list", "FloatList"),
                                          ("int64_list", "Int64List")), start=1):
        feat.field.add(name=fname, number=num, type=_F.TYPE_MESSAGE, label=_F.LABEL_OPTIONAL,
                       type_name=f".ndd.tensorflow.{tname}", oneof_index=0)
    feats = fd.message_type.add(name="Features")
    entry = feats.nested_type.add(name="FeatureEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=_F.TYPE_MESSAGE, label=_F.LABEL_OPTIONAL,
                    type_name=".ndd.tensorflow.Feature")
    feats.field.add(name="feature", number=1, type=_F.TYPE_MESSAGE, label=_F.LABEL_REPEATED,
                    type_name=".ndd.tensorflow.Features.FeatureEntry")
    ex = fd.message_type.add(name="Example")
    ex.field.add(name="features", number=1, type=_F.TYPE_MESSAGE, label=_F.LABEL_OPTIONAL,
                 type_name=".ndd.tensorflow.Features")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("ndd.tensorflow.Example"))


#: ``Example.FromString(serialized)``
Example = _build()
