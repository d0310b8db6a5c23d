"""``ndd.capture``: DALI 2.4's name for compile mode's helpers (``next_epoch(capture=True)``
is ``next_epoch(compile=True)``).

``invariant(x)`` marks any Python value as constant across the iterations of a compiled loop
(see :mod:`ndd.capture._invariant`); ``report()`` is ``ndd.compile.report()``.
"""
from ndd.capture._invariant import invariant
from ndd.compile.reporting import report

__all__ = ["invariant", "report"]
