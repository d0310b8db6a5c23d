"""Finding the user's call site (``file:line``) of an op call."""
from __future__ import annotations

import os
import sys

_ROOTS = tuple(os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep + p + os.sep
               for p in ("ndd", "compiler", "runtime"))

# Files inside the package whose lines are the user's code (``ndd bench``'s pipelines)
_USER_FILES: set[str] = set()


def treat_as_user_code(filename: str) -> None:
    """Report calls made from ``filename`` (a module of the ndd package, e.g. the pipelines of
    ``ndd bench``) at their own lines, as calls of user code are."""
    _USER_FILES.add(os.path.abspath(filename))


def user_frame(depth: int = 2):
    """The innermost frame outside ndd/compiler/runtime (and not in ndd's generated code)."""
    f = sys._getframe(depth)
    while f is not None:
        fn = f.f_code.co_filename
        if fn in _USER_FILES or (not fn.startswith(_ROOTS) and not fn.startswith("<ndd")):
            return f
        f = f.f_back
    return None


def callsite(depth: int = 2) -> str:
    f = user_frame(depth + 1)
    if f is None:
        return "<ndd>"
    return f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}"


# Files of the op-call machinery: skipped by call-site keys. Every other frame counts, including
# pipelines written inside the ndd package (e.g. ``ndd bench``'s).
_NDD = os.path.dirname(os.path.abspath(__file__)) + os.sep
_MACHINERY = tuple(_NDD + f for f in (
    "_op_functions.py", "_invoke.py", "_handle_operators.py", "_slicing.py", "math.py",
    "compile" + os.sep, "_callsite.py", "external_source.py", "readers.py", "_evaluate.py",
    "_batch.py", "_tensor.py", "_construct.py", "random.py", "decoders.py", "_imread.py",
    "_reader_front.py", "_arrays.py", "_captured.py", "capture" + os.sep,
    "_readers_", "_external_"))     # the last two: prefixes of every reader / ExternalSource module
_SKIP = _ROOTS[1:] + _MACHINERY          # compiler/, runtime/ and the machinery files


def _machinery(f) -> bool:
    return f.f_code.co_filename.startswith(_SKIP) or f.f_code.co_filename.startswith("<ndd")


def callsite_key(depth: int = 2, max_frames: int = 6, stop=None) -> tuple:
    """Identity of a call site for compile mode: (code object, instruction offset) of the frame
    making the op call and of its enclosing frames, so one helper called from two places gives
    two keys. Frames of the op-call machinery are skipped.

    The walk ends at ``stop`` = ``(id(frame), code)`` of the frame running the compiled loop
    (included), so what lies outside the loop body (e.g. which line called the function holding
    the loop) does not matter; without ``stop`` it ends after ``max_frames`` frames. (An id and
    not the frame itself is kept, so no reference cycle holds the user's frame alive.)
    """
    f = sys._getframe(depth)
    key = []
    while f is not None and len(key) < max_frames:
        if not _machinery(f):
            key.append((f.f_code, f.f_lasti))
        if stop is not None and id(f) == stop[0] and f.f_code is stop[1]:
            break
        f = f.f_back
    return tuple(key)


def loop_frame(depth: int = 2):
    """``(id, code)`` of the frame iterating a compiled epoch: the first frame above the
    iterator's ``__next__`` that is not ndd's own iterator plumbing."""
    f = sys._getframe(depth)
    while f is not None and _machinery(f):
        f = f.f_back
    return None if f is None else (id(f), f.f_code)
