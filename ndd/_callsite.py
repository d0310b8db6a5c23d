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
