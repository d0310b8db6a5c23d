"""Rules shared by every epoch source (readers, ExternalSource) for ``next_epoch``.

DALI's documented rules: a source used with ``compile=True`` (DALI 2.4: ``capture=True``)
cannot switch to non-compiled iteration and vice versa; compile mode needs a batch size, which
cannot change between its epochs; checkpointing and compile mode are mutually exclusive.  The
messages use the words of DALI 2.4 for the spelling the caller used (``capture=`` -> "capture
mode" / "eager mode", ``compile=`` -> "compiled mode" / "non-compiled mode", the words of DALI
before the rename).
"""
from __future__ import annotations


def start_epoch(source, batch_size, compile, capture, what: str) -> bool:
    """Validate a ``next_epoch`` call and record its mode on ``source``; returns whether the
    epoch is compiled.

    ``source`` must have the attributes ``_compiled`` (None until the first epoch, or again
    after a compiled epoch that captured nothing) and ``enable_checkpointing``; this sets
    ``_compile_batch_size`` and ``_compile_spelling`` on it.

    Raises
    ------
    NotImplementedError
        Compile mode with ``enable_checkpointing=True``.
    RuntimeError
        Switching between compiled and non-compiled iteration.
    ValueError
        Compile mode without ``batch_size``, or with another one than its earlier epochs'.
    """
    spelling = "capture" if capture else "compile" if compile else None
    compiled = bool(capture) or bool(compile)
    if compiled and getattr(source, "enable_checkpointing", False):
        raise NotImplementedError(f"{what}: {spelling}=True cannot be used with "
                                  f"enable_checkpointing=True (checkpointing is not supported "
                                  f"in capture mode)")
    if source._compiled is not None and source._compiled != compiled:
        if compiled:
            mode = "capture" if spelling == "capture" else "compiled"
            raise RuntimeError(
                f"{what} was previously used without {spelling}=True and cannot switch to "
                f"{mode} mode (a source cannot switch between compiled and non-compiled "
                f"iteration)")
        before = getattr(source, "_compile_spelling", "compile")
        mode = "eager" if before == "capture" else "non-compiled"
        raise RuntimeError(
            f"{what} was previously used with {before}=True and cannot switch to {mode} mode "
            f"(a source cannot switch between compiled and non-compiled iteration)")
    if compiled:
        if batch_size is None:
            raise ValueError(f"{what}: {spelling}=True requires a non-None batch_size")
        old = getattr(source, "_compile_batch_size", None)
        if old is not None and batch_size != old:
            raise ValueError(
                f"{what}: cannot change batch_size from {old} to {batch_size} in compile "
                f"(capture) mode (it was used with batch_size={old}; the batch size cannot "
                f"change)")
        source._compile_batch_size = batch_size
        source._compile_spelling = spelling
    source._compiled = compiled
    return compiled
