"""Aliases: DALI exposes some ops under a second public name (``experimental.resize`` is
``resize``, ``experimental.decoders.image`` is ``decoders.image``...).

An alias is a schema of its own (its own op name, public name and, where DALI's alias takes
more, extra arguments) whose kernels are the original op's: :data:`ALIASES` maps the alias' op
name to the original's, and ``runtime/kernels/cpu/aliases.py`` registers the original's kernel
under the alias for every device the original has.  A public name ``"experimental.x"`` reaches
``ndd.experimental.x``, ``"experimental.decoders.x"`` ``ndd.experimental.decoders.x`` (the
namespace modules take their functions from the registry, :mod:`ndd._op_functions`).

This module is imported after every family module (``compiler/ops/__init__.py``) so that the
originals exist; other families may call :func:`alias` from their own module as well.
"""
from __future__ import annotations

import dataclasses

from compiler.schema import ArgSpec, OpSchema, get, register

__all__ = ["ALIASES", "alias"]

#: alias op name -> original op name (the kernel the alias runs)
ALIASES: dict[str, str] = {}


def alias(original: str, public_name: str, extra_args: tuple[ArgSpec, ...] = (),
          doc: str | None = None) -> OpSchema:
    """Declare ``public_name`` as a second public name of op ``original``.

    Parameters
    ----------
    original : str
        The op name of the aliased schema (``"decoders.image"``).
    public_name : str
        Where the alias appears (``"experimental.decoders.image"``); also its op name.
    extra_args : tuple of ArgSpec
        Arguments the alias accepts on top of the original's (DALI's extra knobs).
    doc : str, optional
        The docstring's opening (default: the original's, naming the alias).

    Returns
    -------
    OpSchema
        The registered alias schema (same inputs, infer rule, traits and devices).
    """
    base = get(original)
    schema = dataclasses.replace(
        base, name=public_name, public_name=public_name, args=base.args + tuple(extra_args),
        doc=doc or f"{base.doc} Alias of ``{base.public_name or original}`` (DALI "
                   f"``{public_name}``).",
        deprecated={})     # DALI's deprecated spellings stay with the original's name
    ALIASES[public_name] = original
    return register(schema)


# DALI 2.4's experimental namespace: the same operators as the non-experimental ones
for _name in ("decoders.image", "decoders.image_crop", "decoders.image_random_crop",
              "decoders.image_slice", "resize", "peek_image_shape"):
    alias(_name, "experimental." + _name)
