"""Alias of :mod:`ndd.compile` under DALI 2.4's name (``capture=True``)."""
from ndd.compile import invariant, report  # noqa: F401

__all__ = ["invariant", "report"]
