"""Checkpoints of stateful objects (readers and RNGs): ``ndd.checkpoint.Checkpoint``.

Dynamic mode has no pipeline-level checkpoint: a Checkpoint aggregates the ``get_state()`` of
registered objects. Restoring: build fresh objects, ``load`` then ``register`` (the loaded state is
applied at registration). Source: DALI dynamic-mode checkpointing guide; the API, its rules and
its messages are those of DALI 2.4's ``nvidia.dali.experimental.dynamic.checkpoint``.

Every ``ndd.EvalContext`` owns one Checkpoint (``EvalContext.checkpoint``, made on first use);
:func:`current` is the current context's.

The states themselves are the ASCII strings of ``ndd._state_strings`` (their layout and keys
are described there and in ``docs/semantics.md``, "State and checkpoints").
"""
from __future__ import annotations

from ndd._checkpoint import FORMAT_VERSION, STATE_VERSION, Checkpoint
from ndd._eval_mode import EvalContext

__all__ = ["Checkpoint", "current", "FORMAT_VERSION", "STATE_VERSION"]

Checkpoint.__module__ = __name__     # documented and shown as ndd.checkpoint.Checkpoint


def current() -> Checkpoint:
    """The Checkpoint bound to this thread's current ``EvalContext``:
    ``ndd.EvalContext.current().checkpoint`` (one per context; call ``clear()`` to reuse it for
    an unrelated run, as DALI advises).

    Returns
    -------
    Checkpoint
    """
    return EvalContext.current().checkpoint
