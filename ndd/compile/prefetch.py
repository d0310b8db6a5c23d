"""The compiled loop's prefetcher: runs the template on the next reader batches ahead of the
loop body (not to be confused with the reader's own read-ahead, ``runtime/readers``).
"""
from __future__ import annotations

import queue
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor, wait

from ndd._speculation import SpeculationBroken
from ndd.compile.early import EarlyBatches
from ndd.compile.replay import Instance


class BatchPrefetcher:
    """Runs the template on the next reader batches in the background (bounded queue).

    One thread walks the source: for each batch it instantiates the template (drawing the
    random seeds ahead, in batch order, through a :class:`ndd._speculation.Speculation` that
    checks them against what the body then does) and hands the instance's ``run`` to a small
    executor of ``OVERLAP`` runner threads, queueing ``("batch", handles, inst, future)`` in
    batch order.  Two batches in flight keep every pool worker busy: while the slowest chunk of
    batch ``k`` finishes, the chunks of batch ``k + 1`` already run on the other workers (one
    batch at a time left ~20 % of two cores idle at each batch's tail).  ``early``: the runs
    the reader's last epoch began on this epoch's first batches, adopted instead of starting
    them again; ``ahead``: the reader whose next epoch's first batches to begin once this
    epoch's last one is taken (``ndd/compile/early.py``).  When the speculation is given
    back, the thread stops (queueing ``("broken",)``); :meth:`close` returns the source
    batches it took but did not hand out, in order, for a new prefetcher.
    """

    OVERLAP = 2

    def __init__(self, template, batches, depth, rngs, spec, first_batch: int,
                 early=None, ahead=None):
        self.q: queue.Queue = queue.Queue(maxsize=depth)
        self.stop = threading.Event()
        self.template = template
        self.batches = batches
        self.rngs = rngs                    # entry index -> generator (random entries)
        self.spec = spec
        self.first_batch = first_batch      # number of the first batch, counted by the loop
        self.leftover: list = []            # taken from the source, not queued
        self.runner = runner_of(template)
        self.futures: list = []             # this prefetcher's runs (cancelled by close)
        # ndd/compile/early.py: the runs the last epoch began on this epoch's first batches
        # (adopted in order), and the reader whose next epoch's first ones to begin at the end
        self.early = early
        self.ahead = ahead
        self.depth = depth
        self.thread = threading.Thread(target=self._run, name="ndd-compile-prefetch",
                                       daemon=True)
        self.thread.start()

    def _run(self):
        batch = self.first_batch
        try:
            for handles in self.batches:
                if self.stop.is_set():
                    self.leftover.append(handles)
                    return
                values = [h._value for h in handles]
                adopted = self.early.adopt(values) if self.early is not None else None
                if adopted is not None:
                    inst, fut = adopted
                    fut.add_done_callback(lambda _, inst=inst: _last_plan(self.template, inst))
                else:
                    self.early = None       # (a batch not begun early: none after it is)
                    try:
                        inst = Instance(self.template, values, self.rngs, self.spec, batch)
                    except SpeculationBroken:
                        self.leftover.append(handles)
                        self._put(("broken",))
                        return
                    fut = self.runner.submit(inst.run, self.template)
                self.futures = [f for f in self.futures if not f.done()]
                self.futures.append(fut)
                if not self._put(("batch", handles, inst, fut)):
                    self.leftover.append(handles)
                    return
                batch += 1
            if self.ahead is not None and not self.stop.is_set():
                # the epoch's batches are all taken: begin the next epoch's first ones
                self.ahead.compile_early = EarlyBatches(self.template, self.ahead, self.depth,
                                                        self.runner).start()
            self._put(None)
        except BaseException as exc:  # noqa: BLE001 - reader errors go to the consumer
            self._put(("error", exc))

    def _put(self, item) -> bool:
        while not self.stop.is_set():
            try:
                self.q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def get(self):
        return self.q.get()

    def _drain(self, into: list) -> None:
        while True:
            try:
                item = self.q.get_nowait()
            except queue.Empty:
                return
            if item is not None and item[0] == "batch":
                into.append(item[1])

    def close(self) -> list:
        """Stop; returns the source batches taken but not handed out (in order)."""
        self.stop.set()
        if self.early is not None:      # early runs this epoch did not get to
            self.early.stop()
            self.early = None
        unused: list = []
        self._drain(unused)
        self.thread.join(timeout=60)
        self._drain(unused)         # one put may have raced the stop
        # the runs not begun are cancelled, the others finish (the runner threads stay for
        # the template's next epoch)
        for f in self.futures:
            f.cancel()
        wait(self.futures)
        self.futures = []
        return unused + self.leftover


def _last_plan(template, inst) -> None:
    """An adopted early run is done: its plan is the template's latest (as a run's own)."""
    plan = getattr(inst, "plan", None)
    if plan is not None:
        template.last_plan = plan


_runners: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_runners_lock = threading.Lock()


def runner_of(template) -> ThreadPoolExecutor:
    """The executor of ``OVERLAP`` threads running ``template``'s batches: started with the
    template's first replayed epoch and kept for its later ones (a compiled reader's epochs
    reuse their threads, as a pipeline's never stop); its threads end when the template is
    dropped (or at interpreter exit).  A compiled loop nested in another's body has its own
    template, so its runs never queue behind the outer loop's."""
    with _runners_lock:
        runner = _runners.get(template)
        if runner is None:
            runner = _runners[template] = ThreadPoolExecutor(
                BatchPrefetcher.OVERLAP, thread_name_prefix="ndd-compile-run")
        return runner
