"""Finding the user's call site (``file:line``) of an op call."""
from __future__ import annotations

import os
import sys

_ROOTS = tuple(os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep + p + os.sep
               for p in ("ndd", "compiler", "runtime"))


def user_frame(depth: int = 2):
    """The innermost frame outside ndd/compiler/runtime (and not in ndd's generated code)."""
    f = sys._getframe(depth)
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith(_ROOTS) and not fn.startswith("<ndd"):
            return f
        f = f.f_back
    return None


def callsite(depth: int = 2) -> str:
    f = user_frame(depth + 1)
    if f is None:
        return "<ndd>"
    return f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}"


def callsite_key(depth: int = 2, max_frames: int = 6) -> tuple:
    """Identity of a call site for compile mode: (code object, instruction offset) of the user's
    frame and of up to ``max_frames - 1`` enclosing user frames, so one helper called from two
    places gives two keys."""
    f = user_frame(depth + 1)
    key = []
    while f is not None and len(key) < max_frames:
        fn = f.f_code.co_filename
        if not fn.startswith(_ROOTS):
            key.append((f.f_code, f.f_lasti))
        f = f.f_back
    return tuple(key)
