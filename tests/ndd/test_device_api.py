"""DALI 2.4's ``ndd.Device(name, device_id=None)`` and ``ndd.device(obj, id=None)``."""
import pickle

import pytest
import torch

import ndd


@pytest.mark.parametrize("args,kind,ordinal", [
    (("cpu",), "cpu", None), (("gpu",), "gpu", 0), (("gpu:1",), "gpu", 1),
    (("gpu", 2), "gpu", 2), (("cuda:3",), "gpu", 3), (("cuda",), "gpu", 0)])
def test_names_and_ordinals(args, kind, ordinal):
    d = ndd.Device(*args)
    assert (d.device_type, d.device_id) == (kind, ordinal)
    assert str(d) == (kind if ordinal is None else f"{kind}:{ordinal}")
    assert ndd.Device(str(d)) == d and hash(ndd.Device(str(d))) == hash(d)
    assert pickle.loads(pickle.dumps(d)) == d


@pytest.mark.parametrize("args,exc,words", [
    (("gpu:1", 2), ValueError, "should not appear"), (("cpu", 1), ValueError, "cpu"),
    (("tpu",), ValueError, "Invalid device type"), (("gpu:x",), ValueError, "gpu:x"),
    (("gpu", -1), ValueError, "Invalid device id: -1"), ((3,), TypeError, "3"),
    (("mixed",), ValueError, "dynamic mode uses device='gpu'")])
def test_bad_devices(args, exc, words):
    with pytest.raises(exc, match=words):
        ndd.Device(*args)


def test_device_function():
    assert ndd.device(None) is None
    d = ndd.Device("gpu", 1)
    assert ndd.device(d) is d
    assert ndd.device("gpu", 4) == ndd.Device("gpu:4")
    assert ndd.device(torch.device("cuda", 2)) == ndd.Device("gpu:2")
    assert ndd.device(torch.device("cpu")) == ndd.Device.CPU == ndd.Device("cpu")
    with pytest.raises(ValueError, match="Cannot specify id"):
        ndd.device(d, 1)


def test_handles_compare_with_devices():
    t = ndd.tensor([1, 2])
    assert t.device == ndd.Device("cpu") and t.device.device_id is None


@pytest.mark.oracle
def test_matches_dali_on_cpu():
    dyn = pytest.importorskip("nvidia.dali.experimental.dynamic")
    ours, theirs = ndd.Device("cpu"), dyn.Device("cpu")
    assert (ours.device_type, ours.device_id, str(ours)) == (theirs.device_type,
                                                             theirs.device_id, str(theirs))
    for bad in (("cpu", 1), ("tpu",)):
        with pytest.raises(ValueError):
            dyn.Device(*bad)
        with pytest.raises(ValueError):
            ndd.Device(*bad)
