"""DALI 2.4's ``DType`` attributes on ``ndd.DType``: bytes, bits, exponent/significand bits, kind,
DALI's short names (``"i8"``, ``"f32"``) and the enum types (``ndd.DataType``...)."""
import numpy as np
import pytest
import torch

import ndd

ARRAY_TYPES = ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
               "float16", "float32", "float64"]


@pytest.mark.parametrize("name", ARRAY_TYPES)
def test_sizes_match_numpy(name):
    d = getattr(ndd, name)
    npd = np.dtype(name)
    assert d.bytes == npd.itemsize == d.itemsize
    assert d.bits == 8 * npd.itemsize


@pytest.mark.parametrize("name", ["float16", "float32", "float64"])
def test_float_layout_matches_numpy_finfo(name):
    d = getattr(ndd, name)
    fi = np.finfo(name)
    assert d.significand_bits == fi.nmant
    assert d.exponent_bits == fi.bits - fi.nmant - 1
    assert d.kind is ndd.DType.Kind.float


def test_bfloat16_layout_matches_torch():
    fi = torch.finfo(torch.bfloat16)
    # torch's eps is 2**-significand_bits
    assert ndd.bfloat16.significand_bits == -int(np.log2(fi.eps))
    assert ndd.bfloat16.exponent_bits == 16 - ndd.bfloat16.significand_bits - 1
    assert ndd.bfloat16.bytes == 2
    assert ndd.bfloat16.type_id is None


@pytest.mark.parametrize("name", [n for n in ARRAY_TYPES if not n.startswith("float")] + ["bool"])
def test_non_floats_have_no_float_layout(name):
    d = getattr(ndd, name)
    assert d.exponent_bits is None and d.significand_bits is None


@pytest.mark.parametrize("name", ARRAY_TYPES)
def test_short_names_round_trip(name):
    d = getattr(ndd, name)
    npd = np.dtype(name)
    letter = {"u": "u", "i": "i", "f": "f"}[npd.kind]
    short = f"{letter}{8 * npd.itemsize}"
    assert d.name == short
    assert ndd.dtype(short) is d
    assert ndd.dtype(name) is d        # ndd's long names keep working
    assert str(d) == name              # str() stays the numpy-style name (docs/semantics.md)


def test_kinds():
    K = ndd.DType.Kind
    assert ndd.int16.kind is K.signed and ndd.uint16.kind is K.unsigned
    assert ndd.bool.kind is K.bool and ndd.bool.name == "bool" and ndd.bool.bytes == 1
    assert ndd.DataType.kind is K.enum


@pytest.mark.parametrize("name", ["DataType", "ImageType", "InterpType"])
def test_enum_types(name):
    d = getattr(ndd, name)
    assert d.name == name and ndd.dtype(name) is d
    assert d.bytes == 4 and d.bits == 32
    assert d != ndd.int32


def test_numpy_char_codes_are_not_dalis_short_names():
    # "i8" is DALI's 8-bit int, not numpy's 8-byte one
    assert ndd.dtype("i8") is ndd.int8 and np.dtype("i8") == np.int64
    assert ndd.dtype(np.dtype("i8")) is ndd.int64


@pytest.mark.parametrize("bad", ["f32e8m0", "f16e0m10", "i7", "f8"])
def test_unknown_names_raise_value_error(bad):
    with pytest.raises(ValueError, match=bad):
        ndd.dtype(bad)


def test_type_id_function():
    assert ndd.type_id(ndd.float32) == ndd.types.DALIDataType.FLOAT
    assert ndd.type_id("u8") == ndd.types.DALIDataType.UINT8
    assert ndd.type_id(ndd.bfloat16) is None
    tid = ndd.type_id(ndd.float32)
    assert tid is ndd.types.DALIDataType.FLOAT and tid == 9        # the member, equal to its id
    # DALI's enums print as Class.NAME (Python's IntEnum would print the number)
    assert (str(tid), f"{ndd.types.DALIImageType.RGB}") == ("DALIDataType.FLOAT",
                                                              "DALIImageType.RGB")


@pytest.mark.oracle
def test_attributes_match_dali():
    dyn = pytest.importorskip("nvidia.dali.experimental.dynamic")
    for name in ARRAY_TYPES + ["bool", "bfloat16", "DataType", "ImageType", "InterpType"]:
        ours, theirs = getattr(ndd, name), getattr(dyn, name)
        assert ours.name == theirs.name, name
        assert ours.bytes == theirs.bytes and ours.bits == theirs.bits, name
        assert ours.exponent_bits == theirs.exponent_bits, name
        assert ours.significand_bits == theirs.significand_bits, name
        assert ours.kind.name == theirs.kind.name, name
        if theirs.type_id is None:
            assert ours.type_id is None
        else:
            assert ours.type_id == int(theirs.type_id), name
        assert ndd.dtype(theirs.name) is ours


def test_static_constructors():
    assert ndd.DType.parse("f16") is ndd.float16
    assert ndd.DType.from_type_id(9) is ndd.float32
    assert ndd.DType.from_type_id(ndd.types.DALIDataType.UINT16) is ndd.uint16
    assert ndd.DType.from_type_id(21) is ndd.DataType
    with pytest.raises(KeyError):
        ndd.DType.from_type_id(12)          # STRING: no element type
    for name in ARRAY_TYPES + ["bool"]:
        want = ndd.dtype(name)
        assert ndd.DType.from_fw_type(np.dtype(name)) is want
        assert ndd.DType.from_fw_type(np.dtype(name).type) is want


@pytest.mark.oracle
def test_static_constructors_match_dali():
    dyn = pytest.importorskip("nvidia.dali.experimental.dynamic")
    for name in ARRAY_TYPES + ["bool"]:
        theirs = dyn.DType.from_fw_type(np.dtype(name))
        assert ndd.DType.from_fw_type(np.dtype(name)).name == theirs.name
        assert ndd.DType.from_type_id(int(theirs.type_id)).name == theirs.name
