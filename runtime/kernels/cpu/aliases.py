"""Kernels of the op aliases (:data:`compiler.ops.aliases.ALIASES`): each alias runs its
original's kernel on every device the original has one for.

Imported last by :mod:`.catalog`, after every module that registers an original.
"""
from __future__ import annotations

from compiler.ops.aliases import ALIASES
from runtime.kernels.registry import KERNELS, register

__all__ = ["register_aliases"]


def register_aliases() -> list[tuple[str, str]]:
    """Register the original's kernel under each alias not registered yet; returns the
    ``(alias, device)`` pairs registered now."""
    done = []
    for name, original in ALIASES.items():
        for (op, device), fn in list(KERNELS.items()):
            if op == original and (name, device) not in KERNELS:
                register(name, device)(fn)
                done.append((name, device))
    return done


register_aliases()
