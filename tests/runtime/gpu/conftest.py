"""The fake GPU (``runtime/gpu/fake.py``) installed as the device interface for one test."""
from __future__ import annotations

import pytest

from runtime.device import use_api
from runtime.gpu.fake import FakeApi


@pytest.fixture
def fake():
    """A fresh :class:`FakeApi` in use for the test (the previous interface restored after)."""
    api = FakeApi()
    with use_api(api):
        yield api
