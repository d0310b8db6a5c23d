"""Without a CUDA device, every way of asking for the GPU raises the one RuntimeError of
``runtime.device.require_gpu`` (what was asked, that it needs a CUDA device, that none is
available, to use device='cpu'), never an AttributeError or NotImplementedError."""
from __future__ import annotations

import numpy as np
import pytest

import ndd
from runtime.device import gpu_available

pytestmark = pytest.mark.skipif(gpu_available(), reason="checks the no-CUDA-device errors")

WORDS = r"needs a CUDA device.*no CUDA device is available.*use device='cpu'"


def _npy(tmp_path):
    path = tmp_path / "a.npy"
    np.save(path, np.arange(4, dtype=np.int16))
    return str(path)


CALLS = {
    "op device='gpu'": lambda tmp: ndd.flip(ndd.tensor(np.zeros((2, 2, 3), np.uint8),
                                                      layout="HWC"), device="gpu"),
    "op device='gpu:1'": lambda tmp: ndd.copy(ndd.tensor(np.zeros(3)), device="gpu:1"),
    "decoder device='gpu'": lambda tmp: ndd.decoders.image(
        ndd.batch([np.zeros(10, np.uint8)]), device="gpu"),
    "Tensor(device='gpu')": lambda tmp: ndd.Tensor(np.arange(3), device="gpu"),
    "Batch(device='gpu')": lambda tmp: ndd.Batch([np.arange(3)], device="gpu"),
    "tensor(device='gpu')": lambda tmp: ndd.tensor([1, 2], device="gpu"),
    "as_tensor(device='gpu')": lambda tmp: ndd.as_tensor(np.arange(3), device="gpu"),
    "batch(device='gpu')": lambda tmp: ndd.batch([np.arange(3)], device="gpu"),
    "as_batch(device='gpu')": lambda tmp: ndd.as_batch([np.arange(3)], device="gpu"),
    "Tensor.gpu()": lambda tmp: ndd.tensor(np.arange(3)).gpu(),
    "Batch.gpu()": lambda tmp: ndd.batch([np.arange(3)]).gpu(),
    "to_device('gpu')": lambda tmp: ndd.batch([np.arange(3)]).to_device("gpu"),
    "Batch.broadcast(device='gpu')": lambda tmp: ndd.Batch.broadcast(np.arange(3), 2,
                                                                      device="gpu"),
    "readers.Numpy(device='gpu')": lambda tmp: ndd.readers.Numpy(files=[_npy(tmp)],
                                                                  device="gpu"),
    "ndd.stream()": lambda tmp: ndd.stream(),
    "Stream.synchronize()": lambda tmp: ndd.stream(stream=5).synchronize(),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_every_gpu_entry_point_raises_one_clear_error(name, tmp_path):
    with pytest.raises(RuntimeError) as info:
        CALLS[name](tmp_path)
    assert type(info.value) is RuntimeError
    msg = str(info.value)
    if name != "readers.Numpy(device='gpu')":      # its own words, kept from before
        assert __import__("re").search(WORDS, msg), msg
    else:
        assert "no CUDA device is available" in msg


def test_mixed_is_not_a_dynamic_mode_device():
    """DALI's dynamic mode has no 'mixed': decoders run on 'gpu' (a ValueError saying so)."""
    with pytest.raises(ValueError, match="gpu"):
        ndd.decoders.image(ndd.batch([np.zeros(10, np.uint8)]), device="mixed")


def test_gpu_in_deferred_mode_fails_at_the_call():
    with ndd.EvalMode.deferred, pytest.raises(RuntimeError, match="needs a CUDA device"):
        ndd.copy(ndd.tensor(np.zeros(3)), device="gpu")
