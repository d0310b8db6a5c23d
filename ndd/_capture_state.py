"""The thread-local compile-mode capture/replay contexts (set by ``ndd.compile``).

A stack per thread: a compiled loop running inside another compiled loop's body pushes its
context on top and removes it when its body is left, so the outer loop's context is current
again.  ``current_capture()`` is the top.
"""
from __future__ import annotations

import threading
import weakref

_local = threading.local()


class BatchSizeChangedError(RuntimeError, ValueError):
    """A call inside a compiled loop whose ``batch_size`` argument contradicts its inputs'.

    DALI 2.4 raises RuntimeError ("Cannot change batch size") in capture mode where eager
    execution raises ValueError; this is both, so code catching either works.
    """

# 0-d values made from numpy scalar operands (``np.float32(0.5) * batch``) -> (dtype, value):
# compile mode replays their calls while the operand keeps its type and value
scalar_constants: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _stack() -> list:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def current_capture():
    """The active compile-mode context on this thread, if any."""
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


def push_capture(ctx) -> list:
    """Make ``ctx`` the current context (above the ones active now); returns the thread's
    stack, for :func:`pop_capture`."""
    stack = _stack()
    stack.append(ctx)
    return stack


def pop_capture(ctx, stack: list | None = None) -> bool:
    """Remove ``ctx`` from ``stack`` (that of the thread that pushed it, which need not be
    the calling one: a generator may be finalised by the garbage collector on any thread;
    default: the calling thread's).  True when it was the current one (False: another context
    was pushed above it meanwhile and stays current, or ``ctx`` was not there)."""
    if stack is None:
        stack = _stack()
    if stack and stack[-1] is ctx:
        stack.pop()
        return True
    for k in range(len(stack) - 1, -1, -1):
        if stack[k] is ctx:
            del stack[k]
            break
    return False
