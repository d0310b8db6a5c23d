"""Compile mode: ``reader.next_epoch(batch_size=N, compile=True)``.

The first batch runs eagerly while every op call is traced (call site, op, arguments, where its
inputs came from). The traced calls form a per-batch graph template; for later batches a
prefetch worker instantiates the template on the reader's next batches, compiles it (plans are
cached by signature, so this happens once per batch size) and runs it ahead of time. In the loop
body, a call that matches the trace (same call site and occurrence, op, arguments — the guards —
and inputs that are this batch's reader outputs or replayed results) returns the prepared
result; anything else runs eagerly. Random ops draw their seeds from the same generators in the
same order as eager execution, so a seeded compiled epoch equals a seeded eager epoch.

``ndd.compile.invariant(x)`` (DALI 2.4: ``ndd.capture.invariant``) promises that a value built
by Python code never changes: a Tensor/Batch is registered, so calls that take it can be
replayed; any other value is wrapped in a proxy (``ndd/capture/_invariant.py``), and an
argument marked when the loop was traced must stay marked.  Results the loop traced or
replayed, and the source's batches, are ``CapturedBatch``es (``ndd/_captured.py``), as in
DALI 2.4.

The package: ``trace.py`` (the traced first iteration and its template), ``replay.py`` (a
template instantiated on one batch, and the replayer answering the body's calls),
``prefetch.py`` (the thread running it on the next batches), ``epoch.py`` (the iterator
``next_epoch(compile=True)`` returns) and ``reporting.py`` (``ndd.compile.report()``).
"""
from __future__ import annotations

from ndd.compile.epoch import DEFAULT_QUEUE_DEPTH, CompiledEpoch, compiled_epoch
from ndd.compile.reporting import Report, report
from ndd.compile.trace import TraceEntry, invariant

capture = invariant   # alias namespace helper: ndd.capture.invariant
__all__ = ["invariant", "report", "compiled_epoch", "Report"]
