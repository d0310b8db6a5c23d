"""runtime/kernels/params/slices.py: the window of decoders.image_slice."""
import pytest

from runtime.kernels.params.slices import check_slice_args, slice_roi


def test_relative_and_absolute_windows():
    # axis_names default "WH": coordinates are (x, y)
    assert slice_roi((100, 200), {}, anchor=(0.25, 0.5), shape=(0.5, 0.25)) == (50, 50, 75, 150)
    assert slice_roi((100, 200), {}, anchor=(10, 20), shape=(30, 40)) == (20, 10, 60, 40)
    assert slice_roi((100, 200), {"axis_names": "HW", "start": (10, 20), "end": (30, 60)}) \
        == (10, 20, 30, 60)
    # a start without an extent runs to the end of the image
    assert slice_roi((100, 200), {"rel_start": (0.5, 0.5)}) == (50, 100, 100, 200)


def test_window_errors():
    with pytest.raises(ValueError, match="given twice"):
        check_slice_args({"start": (1, 1), "rel_start": (0.1, 0.1)}, None, None)
    with pytest.raises(ValueError, match="no slice window"):
        check_slice_args({}, None, None)
    with pytest.raises(ValueError, match="outside the image"):
        slice_roi((10, 10), {}, anchor=(5, 5), shape=(10, 10))
    with pytest.raises(ValueError, match="expected 2 coordinates"):
        slice_roi((10, 10), {}, anchor=(1, 2, 3), shape=(1, 1, 1))
