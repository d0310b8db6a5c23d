"""runtime/kernels/params/interp.py: filter names as resize takes them, and for planning."""
import numpy as np
import pytest

from runtime.kernels.params.interp import FILTER_SUPPORT, INTERP_TYPES, filter_name, interp_name


class _Enum:
    def __init__(self, name):
        self.name = name


@pytest.mark.parametrize("value, name", [
    ("linear", "linear"), ("INTERP_CUBIC", "cubic"), (" Bilinear ", "linear"),
    ("nearest", "nn"), ("lanczos", "lanczos3"), ("triangle", "triangular"),
    (_Enum("INTERP_GAUSSIAN"), "gaussian"), (0, "nn"), (np.int64(3), "lanczos3"), (None, None),
])
def test_interp_name(value, name):
    assert interp_name("interp_type", value) == name


def test_interp_name_errors_name_the_argument():
    with pytest.raises(ValueError, match="`min_filter` must be one of"):
        interp_name("min_filter", "sharp")
    with pytest.raises(ValueError, match="0..5"):
        interp_name("mag_filter", 9)
    with pytest.raises(TypeError, match="string or an INTERP_"):
        interp_name("interp_type", True)


def test_filter_name_never_raises():
    assert filter_name("INTERP_LINEAR") == "linear" and filter_name(None) is None
    assert filter_name("sharp") == filter_name(7) == filter_name(1.5) == "?"
    assert set(FILTER_SUPPORT) == set(INTERP_TYPES)
