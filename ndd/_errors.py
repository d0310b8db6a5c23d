"""Errors of asynchronous (eager) and deferred execution, raised where a value is consumed.

An op's error in ``EvalMode.eager`` or ``deferred`` happens after the call returned, in the
eager worker or in a compiled plan. As in DALI 2.4, the consuming call raises a *new* exception
of the same type and message, whose ``__cause__`` is the op's error with a traceback rebuilt
from the user's stack *at the op call* (so a traceback print, or ``traceback.extract_tb`` of the
cause, ends at the line that called the op, not in ndd's machinery). In the ``sync_*`` modes,
and for calls given external arrays (which run at once, see ``ndd/_invoke.py``), the error is
raised inside the call and re-raised as it is.

The stack is kept as ``(code object, line)`` pairs on the node's call site text
(:class:`CallSite`, a ``str``), never as frames, so no user frame (and its locals) is kept alive.
"""
from __future__ import annotations

import sys
import types

from ndd._callsite import user_frame
from ndd._eval_mode import EvalMode

_LATER = (EvalMode.eager, EvalMode.deferred)


class CallSite(str):
    """A node's call site text (``"file.py:12"``) with the call's stack and evaluation mode.

    Attributes
    ----------
    stack : tuple of (types.CodeType, int)
        The user's frames at the call, innermost first: each code object and instruction
        offset (``f_lasti``; the line is looked up only when an error is raised).
    mode : EvalMode or None
        The mode the call was recorded in; None when it ran at once (external inputs).
    """

    __slots__ = ("stack", "mode")

    def __reduce__(self):       # pickles (and copies) as the plain text: code objects don't
        return (str, (str(self),))


def call_site(text: str, depth: int, mode) -> CallSite:
    """``text`` with the stack from the user's frame ``depth`` levels above the caller up to
    the outermost frame, for ``mode``."""
    site = CallSite(text)
    frames = []
    f = user_frame(depth + 1)
    while f is not None:
        frames.append((f.f_code, f.f_lasti))    # f_lineno would decode the line table now
        f = f.f_back
    site.stack = tuple(frames)
    site.mode = mode
    return site


# A one-line function returning its own frame: a copy of its code under another file name,
# function name and first line gives a frame that a traceback shows at that file and line
# (every instruction of a one-line function maps to its first line).
def _own_frame(): return sys._getframe()  # noqa: E704 - must stay on one line


def _frame_at(code: types.CodeType, line: int):
    fake = _own_frame.__code__.replace(co_filename=code.co_filename, co_name=code.co_name,
                                       co_qualname=getattr(code, "co_qualname", code.co_name),
                                       co_firstlineno=max(1, line))
    return types.FunctionType(fake, {"sys": sys})()


def _line_of(code: types.CodeType, lasti: int) -> int:
    """The source line of instruction offset ``lasti`` in ``code``."""
    line = code.co_firstlineno
    for start, end, number in code.co_lines():
        if start <= lasti < end:
            return number if number is not None else line
        if number is not None:
            line = number
    return line


def traceback_of(stack) -> types.TracebackType | None:
    """A traceback whose entries are ``stack``'s frames, outermost first (as Python prints
    them), ending at ``stack[0]``."""
    tb = None
    for code, lasti in stack:
        line = _line_of(code, lasti)
        # lasti -1: no instruction, so printers take the line number and draw no carets
        tb = types.TracebackType(tb, _frame_at(code, line), -1, max(1, line))
    return tb


def raise_stored(err: BaseException):
    """Raise the error an op left for the consumer of its value.

    When ``err`` names a call site recorded in eager or deferred mode (the ``_ndd_site`` the
    executor attaches), raise a new exception of its type and message from ``err``, ``err``'s
    traceback being the stack of the op call; otherwise raise ``err`` itself.
    """
    site = getattr(err, "_ndd_site", None)
    stack = getattr(site, "stack", None) if isinstance(site, CallSite) else None
    outer = None
    if stack and site.mode in _LATER and isinstance(err, Exception):
        try:
            outer = type(err)(str(err))
            if str(outer) != str(err):
                outer = None
            else:
                outer.__dict__.update(err.__dict__)
        except Exception:  # noqa: BLE001 - a constructor wanting other arguments: raise as is
            outer = None
    if outer is None:
        raise err
    raise outer from err.with_traceback(traceback_of(stack))
