"""ndd.DType objects, aliases, ndd.dtype() conversions, ndd.types enums and ndd.device."""
import numpy as np
import pytest
import torch

import ndd
from ndd import types

NAMES = ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
         "float16", "float32", "float64"]


@pytest.mark.parametrize("name", NAMES)
def test_aliases_and_conversions_agree(name):
    d = getattr(ndd, name)
    assert isinstance(d, ndd.DType)
    assert ndd.dtype(name) is d
    assert ndd.dtype(np.dtype(name)) is d
    assert ndd.dtype(getattr(np, name)) is d
    assert ndd.dtype(getattr(torch, name)) is d
    assert ndd.dtype(d) is d


def test_bool_and_bfloat16():
    assert ndd.dtype(np.bool_) is ndd.bool
    assert ndd.dtype(torch.bool) is ndd.bool
    assert ndd.dtype("bool") is ndd.bool
    assert ndd.dtype(torch.bfloat16) is ndd.bfloat16
    assert ndd.dtype(bool) is ndd.bool


def test_python_types_follow_dali_defaults():
    # DALI: Python float -> float32, int -> int32
    assert ndd.dtype(float) is ndd.float32
    assert ndd.dtype(int) is ndd.int32


@pytest.mark.parametrize("enum_name,name", [
    ("UINT8", "uint8"), ("INT16", "int16"), ("INT32", "int32"), ("INT64", "int64"),
    ("FLOAT", "float32"), ("FLOAT16", "float16"), ("FLOAT64", "float64"), ("BOOL", "bool"),
    ("UINT64", "uint64")])
def test_dali_data_type_enum(enum_name, name):
    e = getattr(types.DALIDataType, enum_name)
    assert getattr(types, enum_name) is e
    assert ndd.dtype(e) is ndd.dtype(name)


def test_dali_data_type_ids_match_dali_numbering():
    # DALI 2.4 DALIDataType values (observed): UINT8=0, INT32=6, FLOAT=9, BOOL=11
    assert int(types.DALIDataType.UINT8) == 0
    assert int(types.DALIDataType.INT32) == 6
    assert int(types.DALIDataType.FLOAT) == 9
    assert int(types.DALIDataType.BOOL) == 11


@pytest.mark.parametrize("bad", ["float33", "notatype", object(), 3.5])
def test_bad_dtype_spec_raises(bad):
    with pytest.raises((TypeError, ValueError)) as ei:
        ndd.dtype(bad)
    assert str(ei.value)


def test_string_dtype_error_names_value():
    with pytest.raises((TypeError, ValueError), match="float33"):
        ndd.dtype("float33")


def test_device_parsing():
    cpu = ndd.device("cpu")
    assert cpu.kind == "cpu"
    assert str(cpu) == "cpu"
    g = ndd.device("gpu:1")
    assert g.kind == "gpu" and g.index == 1
    assert ndd.device("gpu").index == 0
    assert ndd.device() == cpu
    with pytest.raises((TypeError, ValueError), match="tpu"):
        ndd.device("tpu")


def test_enums_exposed():
    assert types.RGB == types.DALIImageType.RGB
    assert types.INTERP_CUBIC.canonical == "cubic"
    assert types.INTERP_LINEAR == types.DALIInterpType.INTERP_LINEAR


@pytest.mark.oracle
def test_dtype_enum_values_match_dali():
    pytest.importorskip("nvidia.dali")
    from nvidia.dali import types as dtypes
    for n in ["UINT8", "UINT16", "INT8", "INT32", "INT64", "FLOAT", "FLOAT16", "FLOAT64", "BOOL"]:
        assert int(getattr(types.DALIDataType, n)) == int(getattr(dtypes.DALIDataType, n)), n
    for n in ["RGB", "BGR", "GRAY", "YCbCr"]:
        assert int(getattr(types.DALIImageType, n)) == int(getattr(dtypes.DALIImageType, n)), n
    for n in ["INTERP_NN", "INTERP_LINEAR", "INTERP_CUBIC", "INTERP_LANCZOS3",
              "INTERP_TRIANGULAR", "INTERP_GAUSSIAN"]:
        assert int(getattr(types.DALIInterpType, n)) == int(getattr(dtypes.DALIInterpType, n)), n
