"""Worker processes: a pool of ``python -c`` subprocesses that run picklable work items.

:mod:`.pool` is the parent side (:class:`~.pool.WorkerPool`, the process-wide pool that
``NDD_PROCESS_LANES`` switches, worker deaths and restarts), :mod:`.serve` the loop each worker
runs.  The pool knows no kernel: a caller names a module-level function (``"module:qualname"``)
and its arguments; shared-memory batches (:mod:`runtime.buffers`) carry the large data.
"""
