"""Rules shared by every epoch source (readers, ExternalSource) for ``next_epoch``.

DALI's documented rules: a source used with ``compile=True`` cannot switch to non-compiled
iteration and vice versa; ``compile=True`` needs a batch size; checkpointing and compile mode
are mutually exclusive.
"""
from __future__ import annotations


def start_epoch(source, batch_size, compile, capture, what: str) -> bool:
    """Validate a ``next_epoch`` call and record its mode on ``source``; returns ``compile``.

    ``source`` must have the attributes ``_compiled`` (None until the first epoch) and
    ``enable_checkpointing``.
    """
    if capture is not None:
        compile = bool(capture) or bool(compile)
    compile = bool(compile)
    if source._compiled is not None and source._compiled != compile:
        raise RuntimeError(
            f"{what}: it was used with compile={source._compiled} before; a source cannot "
            f"switch between compiled and non-compiled iteration")
    if compile:
        if batch_size is None:
            raise ValueError(f"{what}: next_epoch(compile=True) needs a batch_size")
        if getattr(source, "enable_checkpointing", False):
            raise NotImplementedError(f"{what}: compile=True cannot be used with "
                                      f"enable_checkpointing=True")
    source._compiled = compile
    return compile
