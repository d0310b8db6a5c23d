"""ndd.Stream / ndd.stream and the default/current stream getters and setters (no GPU here).

Semantics from DALI 2.4's dynamic mode: a Stream wraps a handle; equality is (handle, device);
creating a new stream needs a CUDA device.
"""
import threading

import pytest

import ndd
from ndd import _stream


class _Proto:
    """A third-party stream exposing the CUDA stream protocol on device 1."""

    def __init__(self, handle):
        self.handle_value = handle
        self.device_id = 1

    def __cuda_stream__(self):
        return (0, self.handle_value)


def test_wrapping_a_raw_handle():
    s = ndd.stream(stream=7, device_id=0)
    assert isinstance(s, ndd.Stream)
    assert s.handle == 7 and s.device_id == 0
    assert s == 7 and s != 8
    assert s.__cuda_stream__() == (0, 7)
    assert str(s) == "CUDA stream 7, device_id=0"
    assert ndd.stream(stream=s) is s
    assert ndd.stream(stream=None) is None


def test_protocol_object_device_and_mismatch():
    s = ndd.stream(stream=_Proto(1234))
    assert (s.handle, s.device_id) == (1234, 1)
    assert s != ndd.stream(stream=1234, device_id=0)       # same handle, other device
    with pytest.raises(ValueError, match="device_id 0 doesn't match"):
        ndd.stream(stream=_Proto(1234), device_id=0)
    with pytest.raises(ValueError, match="device_id 2 doesn't match"):
        ndd.stream(stream=s, device_id=2)


def test_bad_inputs():
    with pytest.raises(ValueError, match="must not be None"):
        ndd.Stream(stream=None)
    with pytest.raises(TypeError, match="is not a CUDA stream"):
        ndd.stream(stream="abc")
    assert (ndd.stream(stream=3) == "abc") is False         # not comparable: not equal


@pytest.mark.skipif(_stream.cuda_device_count() > 0, reason="checks the no-GPU error")
def test_new_stream_without_gpu_raises_clearly():
    with pytest.raises(RuntimeError, match="needs a CUDA device"):
        ndd.stream()
    with pytest.raises(RuntimeError, match="needs a CUDA device"):
        ndd.stream(stream=5).synchronize()


def test_default_and_current_streams():
    assert ndd.get_default_stream() is None
    try:
        ndd.set_default_stream(11)
        assert ndd.get_default_stream() == 11
        assert ndd.get_current_stream() == 11               # falls back to the default
        seen = []
        ndd.set_current_stream(12)

        def other_thread():
            seen.append(ndd.get_current_stream())

        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        assert ndd.get_current_stream() == 12
        assert seen == [ndd.stream(stream=11)]               # current stream is per thread
        ndd.set_current_stream(None)
        assert ndd.get_current_stream() == 11
    finally:
        ndd.set_default_stream(None)
        ndd.set_current_stream(None)
    assert ndd.get_default_stream() is None
