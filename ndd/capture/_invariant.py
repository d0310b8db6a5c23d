"""``ndd.capture.invariant``: a promise that a Python value does not change between the
iterations of a compiled (capture-mode) loop.

The semantics are DALI 2.4's (``nvidia.dali.experimental.dynamic.capture``): ``invariant(x)``
returns a *proxy* standing for ``x`` -- it compares, hashes, converts, indexes, iterates and
calls as ``x`` does, reports ``x``'s class to ``isinstance``, and its attributes are marked
in turn -- so code that receives it need not know it is marked.  The call path unwraps it
(:func:`strip_invariants`); compile mode remembers which arguments were marked when the loop
was traced, and a marked argument must stay marked in the later iterations.

An ``ndd.Tensor`` or ``ndd.Batch`` is not wrapped: ``invariant`` records its value in
:data:`marked_values` (a call that takes it may then be replayed, as a constant) and returns
the handle itself, as ``ndd.compile.invariant`` always did.

What a proxy does not preserve: identity (``is``), ``type(x)``, C-level type checks and buffer
layouts, copying and pickling (they see the proxy, or fail).
"""
from __future__ import annotations

import functools
import types
import weakref

from ndd._handle import Handle

__all__ = ["invariant", "is_invariant", "unwrap_invariant", "unwrap_invariants",
           "strip_invariants", "marked_values", "Invariant"]

#: the Values of the Tensors and Batches marked with :func:`invariant`
marked_values: "weakref.WeakSet" = weakref.WeakSet()

# special names a proxy type does not take from the wrapped type: the proxy's own attribute
# machinery, construction and class hooks, the identity and metadata of the proxy type, and
# copying/pickling (a copy could not stay marked reliably)
_OWN = frozenset("""
    __getattribute__ __getattr__ __setattr__ __delattr__ __dir__
    __new__ __init__ __del__ __init_subclass__ __subclasshook__ __class_getitem__
    __prepare__ __mro_entries__ __set_name__
    __class__ __dict__ __doc__ __module__ __slots__ __weakref__ __name__ __qualname__
    __annotations__ __bases__ __base__ __mro__ __abstractmethods__
    __copy__ __deepcopy__ __reduce__ __reduce_ex__ __getstate__ __setstate__
    __getnewargs__ __getnewargs_ex__ __getinitargs__ __replace__
""".split())


def _special(name: str) -> bool:
    return len(name) > 4 and name[:2] == "__" and name[-2:] == "__"


def _target(proxy):
    return object.__getattribute__(proxy, "_Invariant__target")


class Invariant:
    """Base of the proxy types :func:`invariant` makes (one per wrapped type)."""

    __slots__ = ("__target",)

    def __init__(self, target):
        object.__setattr__(self, "_Invariant__target", target)

    def __getattribute__(self, name):
        target = _target(self)
        attr = getattr(target, name)
        if _special(name):
            return attr
        if isinstance(attr, types.MethodType) and attr.__self__ is target:
            # a method of the value runs with ``self`` the proxy: what it reads is marked too
            return types.MethodType(attr.__func__, self)
        return invariant(attr)

    def __setattr__(self, name, value):
        setattr(_target(self), name, value)

    def __delattr__(self, name):
        delattr(_target(self), name)

    def __dir__(self):
        return dir(_target(self))


_proxy_types: dict[type, type] = {}


def invariant(value):
    """Mark ``value`` as invariant for compile (capture) mode.

    An unchecked promise that the value will not change between the iterations of a compiled
    loop, for values compile mode cannot see are constant.  During replay, an argument that
    was marked when the loop was traced must still be marked (else ``RuntimeError``).

    Parameters
    ----------
    value : object
        Any Python value; an ``ndd.Tensor``/``ndd.Batch`` is registered, not wrapped.

    Returns
    -------
    object
        A proxy of ``value`` (``value`` itself if it is already one, or a Tensor/Batch).
    """
    if isinstance(value, Invariant):
        return value
    if isinstance(value, Handle):
        marked_values.add(value._value)
        return value
    cls = type(value)
    proxy_type = _proxy_types.get(cls)
    if proxy_type is None:
        proxy_type = _proxy_types.setdefault(cls, _proxy_type(cls))
    return proxy_type(value)


def is_invariant(value) -> bool:
    """True for a proxy made by :func:`invariant`."""
    return isinstance(value, Invariant)


def unwrap_invariant(value):
    """The value a proxy stands for (anything else is returned as it is)."""
    return _target(value) if isinstance(value, Invariant) else value


_PLAIN = {int, float, bool, str}     # element types no proxy can hide in


def unwrap_invariants(value):
    """:func:`unwrap_invariant`, also inside plain lists, tuples and dicts (recursively; other
    containers, including subclasses, are left alone and never iterated).  A container with
    nothing to unwrap is returned itself."""
    value = unwrap_invariant(value)
    if isinstance(value, type) and issubclass(value, Invariant) and value is not Invariant:
        return value.wrapped_type
    kind = type(value)
    if kind is dict:
        pairs = [(unwrap_invariants(k), unwrap_invariants(v)) for k, v in value.items()]
        same = all(a is k and b is v for (a, b), (k, v) in zip(pairs, value.items()))
        return value if same else dict(pairs)
    if kind is list or kind is tuple:
        if set(map(type, value)) <= _PLAIN:     # numbers only (anchors...): nothing inside
            return value
        items = [unwrap_invariants(x) for x in value]
        return value if all(a is b for a, b in zip(items, value)) else kind(items)
    return value


def strip_invariants(inputs: tuple, kwargs: dict):
    """The call path's unwrapping: ``(inputs, kwargs, marked)`` with every proxy (also inside
    lists/tuples/dicts) replaced by its value; ``marked`` is the frozenset of the argument
    names (and ``"input i"``) that were marked.  Without proxies, the arguments themselves."""
    if not any(isinstance(x, Invariant) for x in inputs) and \
            not any(isinstance(v, Invariant) for v in kwargs.values()) and \
            not any(type(x) in (list, tuple, dict) for x in inputs) and \
            not any(type(v) in (list, tuple, dict) for v in kwargs.values()):
        return inputs, kwargs, frozenset()
    marked = {f"input {i}" for i, x in enumerate(inputs) if isinstance(x, Invariant)}
    marked |= {k for k, v in kwargs.items() if isinstance(v, Invariant)}
    inputs = tuple(unwrap_invariants(x) for x in inputs)
    kwargs = {k: unwrap_invariants(v) for k, v in kwargs.items()}
    return inputs, kwargs, frozenset(marked)


def _bind(definition, target):
    """The special method ``definition`` (from the wrapped type) bound to ``target``."""
    if isinstance(definition, (classmethod, staticmethod)):
        return definition.__get__(target, type(target))
    return functools.partial(definition, target)


def _forwarder(name: str, definition):
    if name == "__call__":          # the callee gets the arguments as given (marked or not)
        def special(self, *args, **kwargs):
            return _bind(definition, _target(self))(*args, **kwargs)
    elif name == "__setitem__":     # the stored value keeps its mark
        def special(self, key, value):
            return _bind(definition, _target(self))(unwrap_invariants(key), value)
    else:
        def special(self, *args, **kwargs):
            return _bind(definition, _target(self))(
                *[unwrap_invariants(a) for a in args],
                **{k: unwrap_invariants(v) for k, v in kwargs.items()})
    special.__name__ = special.__qualname__ = name
    return special


def _proxy_type(cls: type) -> type:
    """The proxy type for values of ``cls``: its special methods forward to the value's."""
    namespace = {"__slots__": (), "__module__": __name__, "wrapped_type": cls}
    seen = set()
    for base in type.__getattribute__(cls, "__mro__"):
        for name, definition in type.__getattribute__(base, "__dict__").items():
            if name in seen or not _special(name) or name in _OWN:
                continue
            seen.add(name)
            if definition is None:          # e.g. ``__hash__ = None``: unhashable as well
                namespace[name] = None
            elif callable(definition) or isinstance(definition, (classmethod, staticmethod)):
                namespace[name] = _forwarder(name, definition)
    return type(f"_Invariant_{cls.__name__}", (Invariant,), namespace)
