"""``ndd.ExternalSource``: data from user code (a callable or an iterable).

Two ways to use one, as in DALI 2.4 plus ndd's epochs:

* DALI 2.4's: the instance is called, ``src()`` (or ``src(batch_size=N)``), and returns the
  source's next item as a Tensor / Batch (a tuple of them with ``num_outputs > 1``);
  ``src.captured(batch_size=N)`` iterates the source with its loop body captured and replayed
  (``reader.next_epoch(batch_size=N, capture=True)`` for an ExternalSource), and other
  ExternalSources called inside such a loop are prefetched with it (*feeders*);
* ndd's: ``src.next_epoch(batch_size=N, compile=...)`` iterates one epoch with the readers'
  rules, including per-sample sources (``batch=False``) and callables told a
  :class:`SampleInfo` / :class:`BatchInfo`.

Example::

    src = ndd.ExternalSource(lambda: np.arange(3))
    src(batch_size=2)                   # a Batch of two [0, 1, 2]

    src = ndd.ExternalSource(lambda info: load_sample(info.idx_in_epoch), batch=False,
                             num_outputs=2, epoch_size=1000)
    for images, labels in src.next_epoch(batch_size=32, compile=True):
        ...
"""
from __future__ import annotations

import inspect
from collections.abc import Sequence

from compiler.types import parse_device
from ndd import _external_capture as capture_loop
from ndd._batch import Batch
from ndd._capture_state import current_capture
from ndd._construct import as_batch, as_tensor, batch, tensor
from ndd._external_callback import (Poller, cycle_mode, per_output, positional_param_count,
                                    source_kind)
from ndd._external_capture import Role
from ndd._external_epochs import BatchInfo, EpochsMixin, SampleInfo
from ndd._external_feeders import release_if_abandoned, side_feeder_call
from ndd.capture._invariant import unwrap_invariant

class ExternalSource(EpochsMixin):
    """A source of data written in Python.

    Parameters
    ----------
    source : callable | iterable | generator function
        Polled once per item: ``next(iter(source))`` for an iterable, a fresh generator for a
        generator function, ``source()`` for a callable (DALI 2.4 accepts only callables
        without parameters). An item is one output (array-like, Tensor, Batch) or a sequence
        of ``num_outputs`` of them. ndd's extension: with ``batch=True`` / ``batch=False``
        given, a callable may take one argument, a :class:`BatchInfo` / :class:`SampleInfo`
        (used by :meth:`next_epoch`).
    num_outputs : int, default 1
        Outputs per item; with more than one, results are tuples.
    cycle : None | bool | {"no", "quiet", "raise"}, optional
        What ``src()`` and ``captured()`` do at the end of an iterable: ``None`` / ``False`` /
        ``"no"``: raise ``StopIteration`` from then on; ``True`` / ``"quiet"``: start over;
        ``"raise"``: raise ``StopIteration`` once, then start over (DALI 2.4). Only an
        iterable may cycle. ``next_epoch`` always makes one pass per epoch.
    device : "cpu" | "gpu" | "gpu:N" | ndd.Device, default "cpu"
        Device of the outputs (resolved at each call). ``"gpu"`` needs a CUDA device.
    layout : str | sequence of str, optional
        Layout of each output's samples (one for all outputs, or one per output).
    dtype : ndd.DType | sequence, optional
        Convert each output to this type (one for all outputs, or one per output).
    batch : bool, optional
        ndd's :meth:`next_epoch`: items are whole batches (``True``, the default: lists of
        samples or arrays with a leading sample dimension) or samples (``False``), grouped by
        ``next_epoch(batch_size=N)``. Giving it allows a callable with an info argument.
    epoch_size : int, optional
        ndd's :meth:`next_epoch`: items per epoch of a callable that never raises
        StopIteration.
    name : str, optional
        Shown in error messages.

    Raises
    ------
    TypeError
        A ``source`` that is neither callable nor iterable; a callable with ``*args``,
        ``**kwargs``, keyword-only or several parameters; cycling a generator object.
    ValueError
        ``cycle`` with a callable or an invalid ``cycle``; a callable with a parameter and no
        ``batch=``; ``num_outputs < 1``; ``layout`` / ``dtype`` sequences of another length
        than ``num_outputs``; a bad ``epoch_size``.
    """

    def __init__(self, source, num_outputs: int | None = 1, *, cycle=None, device="cpu",
                 layout=None, dtype=None, batch: bool | None = None,
                 epoch_size: int | None = None, name: str | None = None):
        # as DALI: these may be given as ndd.capture.invariant(...) proxies
        source, num_outputs, cycle, device = (unwrap_invariant(v) for v in
                                              (source, num_outputs, cycle, device))
        mode = cycle_mode(cycle)
        kind = source_kind(source)
        if kind == "callable" and cycle is not None:
            raise ValueError("ExternalSource: The argument `cycle` can only be specified if "
                             "`source` is iterable")
        if inspect.isgenerator(source) and mode != "no":
            raise TypeError("ExternalSource: Cannot cycle through a generator; pass the "
                            "generator function itself as `source`")
        nparams = positional_param_count(source) if kind == "callable" else 0
        if nparams and batch is None:
            raise ValueError(
                "ndd.ExternalSource only supports callables with no parameters (ndd: a callable "
                "told a BatchInfo / SampleInfo needs batch=True / batch=False and is iterated "
                "with next_epoch)")
        if num_outputs is None:
            num_outputs = 1
        if isinstance(num_outputs, bool) or not isinstance(num_outputs, int):
            raise TypeError(f"ExternalSource: num_outputs must be an int, got "
                            f"{type(num_outputs).__name__}")
        if num_outputs <= 0:
            raise ValueError(f"ExternalSource: num_outputs must be strictly positive, got "
                             f"{num_outputs}")
        if epoch_size is not None and (isinstance(epoch_size, bool) or
                                       not isinstance(epoch_size, int) or epoch_size < 1):
            raise ValueError(f"ExternalSource: epoch_size must be a positive int, got "
                             f"{epoch_size!r}")
        parse_device(device)        # validated now, resolved at each call
        self.source = source
        self.num_outputs = num_outputs
        self.cycle = mode
        self.device = device
        self.layout = layout
        self.dtype = dtype
        self.layouts = per_output(layout, num_outputs, "layout")
        self.dtypes = per_output(dtype, num_outputs, "dtype")
        self.batch = True if batch is None else bool(batch)
        self.epoch_size = epoch_size
        self.name = name
        self.enable_checkpointing = False
        self.kind = kind
        self.takes_info = nparams == 1
        self.poll = Poller(source, kind, mode)
        #: how the instance is used (DALI's roles: eagerly, as a captured loop's root or as a
        #: feeder of one; ndd's next_epoch)
        self.role = Role.UNUSED
        #: the captured loop this instance is the root or a feeder of (``_external_capture``)
        self.capture_ctx = None
        self._compiled = None
        self._epoch = 0
        self._batch_size = None
        self._active = False
        self._ahead = False     # compile mode: the source is called ahead of the body
        self._compiled_it = None    # weakref to the last compiled epoch's iterator
        #: compile mode's traced per-batch template (``ndd.compile``), set by the first compiled
        #: epoch and replayed by the later ones (False: that epoch made no replayable calls)
        self.compile_template = None

    # ------------------------------------------------------------------ DALI 2.4: calls
    def __call__(self, *, batch_size: int | None = None):
        """Consume one item from the source.

        Parameters
        ----------
        batch_size : int, optional
            Broadcast Tensor outputs to a Batch of this many samples; Batch outputs must have
            this size.

        Returns
        -------
        ndd.Tensor | ndd.Batch | tuple
            A Batch for a Batch item, else a Tensor (a Batch with ``batch_size``); a tuple of
            ``num_outputs`` of them when ``num_outputs > 1``. Inside a captured loop, the
            values prefetched for this step.

        Raises
        ------
        StopIteration
            At the end of the data (see ``cycle``).
        ValueError
            A Batch item of another size than ``batch_size``; an item without
            ``num_outputs`` outputs.
        TypeError
            Outputs that are not all Tensors or all Batches; a callable with an info argument.
        RuntimeError
            The instance is used otherwise (its epochs, a captured loop; DALI's roles).
        """
        batch_size = unwrap_invariant(batch_size)
        check_batch_size(batch_size, self.what())
        ctx = capture_loop.active_context()
        cap = current_capture()
        if ctx is not None and cap is ctx.capture:      # in a captured ExternalSource's loop
            return capture_loop.feeder_call(self, ctx, batch_size)
        if cap is not None:                             # in a reader's compiled loop
            return side_feeder_call(self, cap, batch_size)
        if ctx is not None:
            return capture_loop.feeder_call(self, ctx, batch_size)
        release_if_abandoned(self)
        if self.role in (Role.FEEDER, Role.ROOT):
            raise RuntimeError("This ExternalSource is already used in a capture-mode loop")
        self.require_role(Role.EAGER)
        return self.shape(self.convert(self.pull(), batch_size))

    def captured(self, batch_size: int, ctx=None):
        """Iterate the source with the loop body captured: ``reader.next_epoch(batch_size=N,
        capture=True)`` for an ExternalSource (DALI 2.4).

        The epoch ends when the source raises ``StopIteration`` (see ``cycle``). The first
        step runs eagerly and is traced; later steps replay the trace on batches prefetched
        ahead of the body. Every other ExternalSource called in the body (a *feeder*) must be
        called exactly once per step, with the same batch size; feeders are prefetched with
        this source, so leaving the loop early gives back what was read ahead.

        Parameters
        ----------
        batch_size : int
            Samples per batch: Tensor items are broadcast to it, Batch items must have it.
        ctx : ndd.EvalContext, optional
            Accepted for DALI's signature; ndd evaluates in the current context.

        Returns
        -------
        iterator
            Of Batches (tuples of Batches with ``num_outputs > 1``).

        Raises
        ------
        RuntimeError
            The instance was used eagerly or as a feeder; misused feeders (see above).
        ValueError
            A bad ``batch_size`` or another than the last ``captured()``'s; a Batch item of
            another size.
        """
        batch_size = unwrap_invariant(batch_size)
        check_batch_size(batch_size, self.what())
        if batch_size is None:
            raise ValueError(f"{self.what()}.captured requires a non-None batch_size")
        if self.role is Role.EAGER:
            raise RuntimeError("This ExternalSource was already used eagerly")
        if self.role is Role.FEEDER:
            raise RuntimeError("This ExternalSource is already used in a capture-mode loop: "
                               "Instance already used through __call__ (as a feeder)")
        if self.role is Role.EPOCHS:
            raise RuntimeError(f"{self.what()} is iterated with next_epoch; it cannot also "
                               f"be used through .captured()")
        return capture_loop.captured_epoch(self, batch_size)

    # ------------------------------------------------------------------ conversions
    def pull(self):
        """The source's next raw item (StopIteration at its end)."""
        if self.takes_info:
            raise TypeError(f"{self.what()}: a callable taking a BatchInfo / SampleInfo is "
                            f"iterated with next_epoch, not called")
        return self.poll()

    def outputs_of(self, item) -> tuple:
        """The ``num_outputs`` outputs of one item (a tuple / list of them when
        ``num_outputs > 1``; an array is one output, as in DALI)."""
        n = self.num_outputs
        if n == 1:
            return (item,)
        if not isinstance(item, Sequence) or isinstance(item, (str, bytes)) or len(item) != n:
            got = (f"{type(item).__name__} of {len(item)}" if isinstance(item, Sequence)
                   else type(item).__name__)
            raise ValueError(f"{self.what()}: Expected {n} outputs from the source (a tuple "
                             f"of {n}), got {got}")
        return tuple(item[k] for k in range(n))

    def convert(self, item, batch_size: int | None, copy: bool = False,
                broadcast: int | None = None) -> tuple:
        """One item as Tensors or Batches (DALI 2.4's rules): a Batch stays a Batch (of size
        ``batch_size`` when given), anything else is a Tensor, broadcast to ``broadcast``
        (default ``batch_size``) samples when given. ``copy``: own copies (the source may
        reuse its buffers).

        Raises
        ------
        ValueError / TypeError
            See :meth:`__call__`.
        """
        if broadcast is None:
            broadcast = batch_size
        outs = []
        for k, data in enumerate(self.outputs_of(item)):
            dtype, layout = self.dtypes[k], self.layouts[k]
            if isinstance(data, Batch):
                make = batch if copy else as_batch
                b = make(data, dtype=dtype, device=self.device, layout=layout)
                if batch_size is not None and b.batch_size != batch_size:
                    raise ValueError(f"{self.what()}: Expected batch size {batch_size}, got "
                                     f"{b.batch_size}")
                outs.append(b)
                continue
            make = tensor if copy else as_tensor
            t = make(data, dtype=dtype, device=self.device, layout=layout)
            outs.append(t if broadcast is None else as_batch([t] * broadcast))
        if len({isinstance(o, Batch) for o in outs}) > 1:
            raise TypeError(f"{self.what()}: Outputs must be uniformly Tensors or uniformly "
                            f"Batches")
        return tuple(outs)

    def shape(self, outs: tuple):
        """The result of a call: the output, or the tuple of them (``num_outputs > 1``)."""
        return outs[0] if self.num_outputs == 1 else tuple(outs)

    def require_role(self, role) -> None:
        """Take ``role`` (DALI's role lock: eager use, a captured loop and ndd's epochs do not
        mix on one instance)."""
        if self.role is not Role.UNUSED and self.role is not role:
            if self.role is Role.EAGER:
                raise RuntimeError("This ExternalSource was already used eagerly")
            if self.role is Role.EPOCHS:
                raise RuntimeError(f"{self.what()} is iterated with next_epoch; it cannot "
                                   f"also be called")
            raise RuntimeError("This ExternalSource is already used in a capture-mode loop")
        self.role = role

    def what(self) -> str:
        """``ExternalSource`` and its name, for messages."""
        return f"ExternalSource {self.name!r}" if self.name else "ExternalSource"


def check_batch_size(batch_size, what: str) -> None:
    """``batch_size`` is None or a positive int.

    Raises
    ------
    TypeError / ValueError
        For another type / a value below 1.
    """
    if batch_size is None:
        return
    if isinstance(batch_size, bool) or not isinstance(batch_size, int):
        raise TypeError(f"{what}: batch_size must be an int, got {type(batch_size).__name__}")
    if batch_size < 1:
        raise ValueError(f"{what}: batch_size must be a positive integer, got {batch_size}")


__all__ = ["ExternalSource", "SampleInfo", "BatchInfo", "check_batch_size"]
