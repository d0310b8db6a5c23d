"""``CapturedBatch``: the Batch a compiled (capture-mode) loop hands to its body for a call it
recorded (the traced iteration) or replayed (the later ones), and for the source's outputs.

DALI 2.4 names the class ``CapturedBatch`` (``_capture.CapturedBatch``, a ``Batch`` subclass
carrying the capture graph's provenance); code and tests tell a captured result from an eager
one by it.  Here it behaves exactly as a Batch; ``_capture_ref`` says where the value comes
from (``("source", k)`` or ``("call", entry, output)`` of the loop's template) and
``_capture_iteration`` which batch of the epoch it belongs to.
"""
from __future__ import annotations

from compiler.ir import Value
from ndd._batch import Batch

__all__ = ["CapturedBatch"]


class CapturedBatch(Batch):
    """A :class:`ndd.Batch` produced by a compiled loop's trace or replay.

    Parameters
    ----------
    value : compiler.ir.Value
        The batch's value (shared, not copied).
    ref : tuple
        Provenance in the loop's template: ``("source", k)`` or ``("call", entry, output)``.
    iteration : int
        The batch of the epoch (0: the traced one, in the first compiled epoch).
    """

    __slots__ = ("_capture_ref", "_capture_iteration")

    def __init__(self, value: Value, ref: tuple, iteration: int):
        super().__init__(value)
        self._capture_ref = ref
        self._capture_iteration = iteration
