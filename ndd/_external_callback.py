"""How ``ndd.ExternalSource`` polls its ``source``: one item per call, with DALI 2.4's ``cycle``
rules, and the checks DALI makes on a callable's parameters and on per-output arguments.

Semantics (DALI 2.4, ``nvidia.dali._utils.external_source_impl`` and
``experimental.dynamic._external_source``):

* an iterable is iterated (``iter(source)``); a generator *function* (or a callable object whose
  ``__call__`` is one, or a ``functools.partial`` of one) is called to make the iterator; any
  other callable is called once per item, with no arguments;
* ``cycle``: ``None`` / ``False`` / ``"no"``: one pass, then ``StopIteration`` on every call;
  ``True`` / ``"quiet"``: rewound silently at the end; ``"raise"``: ``StopIteration`` once at
  the end, the next call starts over. Only an iterable (or generator function) may cycle; a
  generator *object* cannot be rewound.
"""
from __future__ import annotations

import collections
import functools
import inspect
from collections.abc import Sequence

_CYCLE_MODES = {"no": "no", "quiet": "quiet", "raise": "raise"}

#: an item given back to a :class:`Poller` that means "raise StopIteration here" (a
#: ``cycle="raise"`` end that a captured loop's prefetcher reached before the body left it)
STOP = object()


def cycle_mode(cycle) -> str:
    """DALI's ``cycle`` argument as one of ``"no"``, ``"quiet"``, ``"raise"``.

    Raises
    ------
    ValueError
        For any other value (the message lists the valid ones).
    """
    if cycle is None or cycle is False:
        return "no"
    if cycle is True:
        return "quiet"
    if isinstance(cycle, str) and cycle in _CYCLE_MODES:
        return _CYCLE_MODES[cycle]
    raise ValueError(
        f"Invalid value {cycle!r} for the argument `cycle`. Valid values are: \"no\", False or "
        f"None (no cycling); \"quiet\" or True (rewind silently); \"raise\" (raise "
        f"StopIteration at the end of the data, then start over)")


def is_generator_function(x) -> bool:
    """True for a generator function, a ``functools.partial`` of one, or a callable object
    whose ``__call__`` is one (DALI calls these to get a fresh iterator)."""
    while isinstance(x, functools.partial):
        x = x.func
    if inspect.isgeneratorfunction(x):
        return True
    if x is None or inspect.isfunction(x) or inspect.ismethod(x) or isinstance(x, type):
        return False
    call = getattr(type(x), "__call__", None)
    return call is not None and inspect.isgeneratorfunction(call)


def positional_param_count(fn) -> int:
    """How many parameters a ``source`` callable takes (0 or 1).

    Raises
    ------
    TypeError
        For ``*args``, ``**kwargs``, keyword-only parameters or more than one parameter (DALI's
        rule: a source takes nothing, or one sample/batch info argument).
    """
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):     # a builtin without a signature: called with nothing
        return 0
    what = "ExternalSource: the `source` callable must take 0 or 1 positional arguments"
    for p in sig.parameters.values():
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            raise TypeError(f"{what}; found the var-positional argument *{p.name}")
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            raise TypeError(f"{what}; found the var-keyword argument **{p.name}")
        if p.kind is inspect.Parameter.KEYWORD_ONLY:
            raise TypeError(f"{what}; found the keyword-only argument {p.name}")
    n = len(sig.parameters)
    if n > 1:
        raise TypeError(f"{what}; found {n}: {', '.join(sig.parameters)}")
    return n


def source_kind(source) -> str:
    """``"generator"`` (a generator function), ``"iterable"`` or ``"callable"``, in DALI's order
    of preference (an object both iterable and callable is iterated).

    Raises
    ------
    TypeError
        For anything else.
    """
    if is_generator_function(source):
        return "generator"
    try:
        iter(source)
    except TypeError:
        pass
    else:
        return "iterable"
    if callable(source):
        return "callable"
    raise TypeError(f"ExternalSource: the `source` must be callable or iterable (or a "
                    f"parameterless generator function), got {type(source).__name__}")


class Poller:
    """``poller()`` is the source's next item (DALI's polling callback), with ``cycle``.

    Items given back with :meth:`push_back` (read ahead by a captured loop that was left early)
    are returned first, in their order.

    Parameters
    ----------
    source : iterable | generator function | callable
    kind : str
        :func:`source_kind` of ``source``.
    cycle : str
        :func:`cycle_mode` of the ``cycle`` argument.

    Raises
    ------
    StopIteration
        From ``poller()`` at the end of the data (see ``cycle``) or when a callable raises it.
    """

    def __init__(self, source, kind: str, cycle: str):
        self.source = source
        self.kind = kind
        self.cycle = cycle
        self.iterator = None
        self.pending: collections.deque = collections.deque()

    def restart(self):
        """A fresh iterator over the source (iterable or generator function)."""
        return iter(self.source()) if self.kind == "generator" else iter(self.source)

    def __call__(self):
        if self.pending:
            item = self.pending.popleft()
            if item is STOP:
                raise StopIteration
            return item
        if self.kind == "callable":
            return self.source()
        if self.iterator is None:
            self.iterator = self.restart()
        try:
            return next(self.iterator)
        except StopIteration:
            if self.cycle == "no":
                raise
            self.iterator = self.restart()
            if self.cycle == "raise":
                raise
        return next(self.iterator)      # "quiet": the first item again (an empty source stops)

    def push_back(self, items) -> None:
        """Return ``items`` (in order) before anything else is polled."""
        self.pending.extendleft(reversed(list(items)))


def per_output(value, num_outputs: int, what: str) -> tuple:
    """A ``layout`` / ``dtype`` argument as one value per output: a single value (or None) is
    repeated; a sequence (not a string) must have ``num_outputs`` items.

    Raises
    ------
    ValueError
        For a sequence of another length (DALI's words: "Expected a sequence of size N").
    """
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        return (value,) * num_outputs
    if len(value) != num_outputs:
        raise ValueError(f"ExternalSource: {what}: Expected a sequence of size {num_outputs}, "
                         f"got {len(value)} (one value per output, or one for all)")
    return tuple(value)


__all__ = ["STOP", "Poller", "cycle_mode", "is_generator_function", "per_output",
           "positional_param_count", "source_kind"]
