"""Fixtures shared by the front-end tests."""
import pytest

from runtime.device import use_api
from runtime.gpu.fake import FakeApi


@pytest.fixture
def gpu():
    """The fake GPU device (runtime/gpu/fake.py) for the test; none of its ordering checks may
    have fired by the end."""
    api = FakeApi()
    with use_api(api):
        yield api
    assert api.violations == []
