"""runtime/kernels/params/layouts.py: the default layouts and the axes of a layout."""
import pytest

from compiler.ir import ValueMeta
from runtime.kernels.params.layouts import (DEFAULT_LAYOUTS, default_layout, hw_axes,
                                            layout_axes, meta_layout)


def test_default_layouts_by_rank():
    assert DEFAULT_LAYOUTS == {2: "HW", 3: "HWC", 4: "FHWC"}
    assert [default_layout(n) for n in (1, 2, 3, 4, 5)] == ["", "HW", "HWC", "FHWC", ""]


def test_meta_layout_keeps_a_given_layout():
    u8 = "uint8"
    assert meta_layout(ValueMeta(u8, 3, "CHW")) == "CHW"
    assert meta_layout(ValueMeta(u8, 3, "")) == "HWC"
    assert meta_layout(ValueMeta(u8, 4, "")) == "FHWC"
    assert meta_layout(ValueMeta(u8, 1, "")) == ""


def test_layout_axes_defaults_and_errors():
    assert layout_axes(None, 3) == ("HWC", {"H": 0, "W": 1, "C": 2})
    assert layout_axes("", 2) == ("HW", {"H": 0, "W": 1})
    assert layout_axes(None, 4)[0] == "FHWC"
    assert layout_axes("CHW", 3)[1] == {"C": 0, "H": 1, "W": 2}
    with pytest.raises(ValueError, match="cannot be inferred"):
        layout_axes(None, 5)
    with pytest.raises(ValueError, match="3 dimensions"):
        layout_axes("HW", 3)
    with pytest.raises(ValueError, match="repeated"):
        layout_axes("HHW", 3)
    with pytest.raises(ValueError, match="'W' axis"):
        layout_axes("HCD", 3)
    with pytest.raises(TypeError, match="layout string"):
        layout_axes(3, 3)


def test_hw_axes():
    assert hw_axes("HWC") == hw_axes("HW") == (0, 1)
    assert hw_axes("CHW") == hw_axes("FHWC") == (1, 2)
