"""The ``Checkpoint`` class behind ``ndd.checkpoint`` (states of readers and RNGs).

Kept apart from ``ndd/checkpoint.py`` so that ``ndd/_eval_mode.py`` can give every
``EvalContext`` its own Checkpoint (``EvalContext.checkpoint``) without an import cycle; the
public module re-exports it and adds :func:`ndd.checkpoint.current`. The API, its rules and its
messages are those of DALI 2.4's ``nvidia.dali.experimental.dynamic.checkpoint``.
"""
from __future__ import annotations

import glob
import json
import os
import re
import string
from typing import Any, NamedTuple, Optional

from ndd._state_strings import STATE_VERSION, legacy_state_string

__all__ = ["Checkpoint", "FORMAT_VERSION", "STATE_VERSION"]

#: Version of the files written by :meth:`Checkpoint.serialize` (DALI 2.4's layout is
#: version 2 as well: ``{"version": 2, "states": {name: {"state": str, "type": str}}}``).
#: ndd's earlier version 1 files (``{"version": 1, "objects": {name: {"kind", "state": dict}}}``)
#: are still read.
FORMAT_VERSION = 2


class _StateEntry(NamedTuple):
    """A name's state (``get_state()``'s string, or an earlier version's dict) and the type
    name (``type(op).__qualname__``) it belongs to; None: not known, not checked."""

    state: Any
    type_name: Optional[str] = None


class Checkpoint:
    """Collects, saves and restores the states of registered readers and RNGs.

    Register objects (``register(op, name)``), snapshot them (:meth:`collect`), write the
    snapshot (:meth:`save`); to resume, :meth:`load` into a new Checkpoint and register freshly
    built objects under the same names: each one's state is applied at registration. The
    files are JSON (:data:`FORMAT_VERSION`); files of ndd's earlier format 1 are read too.
    Not thread-safe: one Checkpoint per thread.

    Examples
    --------
    >>> ckpt = ndd.checkpoint.Checkpoint()
    >>> ckpt.register(reader, "reader")
    'reader'
    >>> ckpt.register(rng, "rng")
    'rng'
    >>> ckpt.collect()
    >>> ckpt.save("ckpt_{seq:04d}.json")
    'ckpt_0000.json'
    """

    def __init__(self):
        self._ops: dict[str, Any] = {}          # name -> registered object
        self._names: dict[int, str] = {}        # id(object) -> name
        self._states: dict[str, _StateEntry] = {}
        self._dirty: set[str] = set()           # states not yet applied to their object
        self._complete = False                  # the last fill was collect()
        self._loaded = False                    # the last fill was load()/deserialize()
        self._save_seq: Optional[int] = None

    # ------------------------------------------------------------------ bookkeeping
    def clear(self) -> None:
        """Forget every registered object and state (a fresh Checkpoint)."""
        self._ops.clear()
        self._names.clear()
        self._states.clear()
        self._dirty.clear()
        self._complete = self._loaded = False
        self._save_seq = None

    @property
    def is_complete(self) -> bool:
        """True when :meth:`collect` filled the states last."""
        return self._complete

    @property
    def is_loaded(self) -> bool:
        """True when :meth:`load` or :meth:`deserialize` filled the states last."""
        return self._loaded

    @property
    def names(self) -> tuple:
        """The names of the registered objects, in registration order."""
        return tuple(self._ops)

    def __len__(self) -> int:
        return len(self._ops)

    def __contains__(self, name) -> bool:
        return str(name) in self._ops

    # ------------------------------------------------------------------ registration
    def register(self, op, name: str | None = None) -> str:
        """Add a reader or ``ndd.random.RNG`` under ``name`` and return the name.

        Without ``name`` the object gets the next sequential name ``__op_<k>`` (or its
        existing name, when it is registered already). A loaded state for the name is applied
        now (``op.set_state``).

        Parameters
        ----------
        op : readers.File or random.RNG
            An object with ``get_state`` and ``set_state``.
        name : str, optional
            Not empty and not starting with ``__op_`` (reserved). An object registered
            under ``name`` before is replaced (by one of the same type).

        Returns
        -------
        str
            The name ``op`` is registered under.

        Raises
        ------
        TypeError
            ``op`` has no state; the name holds an object of another type; the loaded state
            is of another type ("Type mismatch ...").
        RuntimeError
            A reader iterated without ``enable_checkpointing=True``; a new name after
            :meth:`collect`; an object already registered under another name.
        KeyError
            The loaded checkpoint has no state for the name.
        ValueError
            A bad ``name``, or a state its object rejects.
        """
        if not callable(getattr(op, "get_state", None)) or \
                not callable(getattr(op, "set_state", None)):
            raise TypeError(f"Checkpoint.register: {type(op).__qualname__} has no state to "
                            f"save (expected a reader or an ndd.random.RNG)")
        old = self._names.get(id(op))
        if old is not None and self._ops.get(old) is not op:
            old = None
        if name is None:
            if old is not None:
                self._apply(old)
                return old
            key = f"__op_{len(self._ops)}"
            if self._complete:
                raise RuntimeError("Cannot register a new operator into a checkpoint that has "
                                   "been completed via `collect`. Call `clear` first.")
            if self._loaded and key not in self._states:
                raise KeyError(f"Loaded checkpoint has no state for the operator's key "
                               f"{key!r}. If the registration order changed since the "
                               f"checkpoint was saved, register with names: "
                               f"`register(op, name)`.")
        else:
            if not isinstance(name, str):
                raise TypeError(f"Checkpoint.register: name must be a str, got "
                                f"{type(name).__name__}")
            if not name:
                raise ValueError("The name must not be empty.")
            if name.startswith("__op_"):
                raise ValueError("Manually assigned names must not start with '__op_' "
                                 "(reserved for anonymous registration).")
            key = name
            if old is not None and old != key:
                raise RuntimeError(f"Cannot register the operator with a new key {key!r} "
                                   f"when it's already been added with the key {old!r}.")
            prev = self._ops.get(key)
            if prev is not None:
                if prev is not op and type(prev) is not type(op):
                    raise TypeError(f"Cannot replace operator {key!r} of type "
                                    f"{type(prev).__qualname__!r} with an operator of type "
                                    f"{type(op).__qualname__!r}.")
            elif self._complete:
                raise RuntimeError(f"Cannot register a new op {key!r} into a completed "
                                   f"checkpoint. Call `clear` first.")
            elif self._loaded and key not in self._states:
                raise KeyError(f"Checkpoint was loaded but does not contain a state for "
                               f"{key!r}; it has {sorted(self._states)}.")
            if prev is not None and prev is not op:
                self._names.pop(id(prev), None)
        self._enable(op, key)
        self._ops[key] = op
        self._names[id(op)] = key
        self._apply(key)
        return key

    @staticmethod
    def _enable(op, key):
        """Readers opt in to checkpointing: retroactively while not yet iterated."""
        if getattr(op, "enable_checkpointing", True):
            return
        if getattr(op, "_iterated", False):
            raise RuntimeError(f"Checkpoint.register: reader {key!r} was iterated with "
                               f"checkpointing disabled; pass `enable_checkpointing=True` to "
                               f"the reader's constructor")
        op.enable_checkpointing = True

    def _apply(self, key):
        if key not in self._dirty:
            return
        entry, op = self._states[key], self._ops[key]
        actual = type(op).__qualname__
        if entry.type_name is not None and entry.type_name != actual:
            raise TypeError(f"Type mismatch for operator {key!r}: checkpoint stores state for "
                            f"type {entry.type_name!r}, but the registered operator is of type "
                            f"{actual!r}.")
        op.set_state(entry.state)
        self._dirty.discard(key)

    def get_state(self, name):
        """The state held for the object registered under ``name`` (None before any
        :meth:`collect`, :meth:`load` or :meth:`set_state` of it).

        Raises
        ------
        KeyError
            Nothing is registered under ``name``.
        """
        key = str(name)
        if key not in self._ops:
            raise KeyError(f"No op registered under {key!r}.")
        entry = self._states.get(key)
        return None if entry is None else entry.state

    def set_state(self, name: str, value, op_type=None) -> None:
        """Hold ``value`` as the state of ``name`` (registered now or later); it is applied at
        the name's next :meth:`register` or at :meth:`restore`.

        Parameters
        ----------
        name : str
        value : str
            A state string (``get_state()``), as the object's ``set_state`` accepts it.
        op_type : type or str, optional
            The class (or its ``__qualname__``) the state belongs to; checked when applied.

        Raises
        ------
        KeyError
            The checkpoint is complete and nothing is registered under ``name``.
        TypeError
            ``op_type`` is neither a class nor a string.
        """
        key = str(name)
        if self._complete and key not in self._ops:
            raise KeyError(f"No operator registered under {key!r}.")
        if op_type is None or isinstance(op_type, str):
            type_name = op_type
        elif isinstance(op_type, type):
            type_name = op_type.__qualname__
        else:
            raise TypeError(f"`op_type` must be a class or a string, got {op_type!r}.")
        self._states[key] = _StateEntry(value, type_name)
        self._dirty.add(key)

    # ------------------------------------------------------------------ collect / restore
    def _extra(self):
        extra = sorted(set(self._states) - set(self._ops))
        if extra:
            raise RuntimeError(f"Checkpoint state has entries with no corresponding "
                               f"registered ops: {extra}.")

    def collect(self) -> None:
        """Snapshot every registered object's state (``get_state()``); the checkpoint is then
        complete.

        Raises
        ------
        RuntimeError
            States are held for names nothing is registered under.
        """
        self._extra()
        self._states = {key: _StateEntry(op.get_state(), type(op).__qualname__)
                        for key, op in self._ops.items()}
        self._dirty.clear()
        self._complete, self._loaded = True, False

    def restore(self) -> None:
        """Apply every state not yet applied (a no-op without states).

        Raises
        ------
        RuntimeError
            States for unregistered names, or registered objects without a state.
        """
        if not self._states:
            return
        self._extra()
        missing = sorted(set(self._ops) - set(self._states))
        if missing:
            raise RuntimeError(f"Checkpoint state is incomplete - missing entries for "
                               f"{missing}.")
        for key in list(self._dirty):
            self._apply(key)

    # ------------------------------------------------------------------ serialization
    def serialize(self) -> str:
        """The checkpoint as JSON text: ``{"version": 2, "states": {name: {"state": str,
        "type": str}}}``. Objects registered but never collected are collected now.

        Raises
        ------
        RuntimeError
            Nothing is registered and no state is held.
        """
        if not self._states:
            if not self._ops:
                raise RuntimeError("Cannot serialize an empty checkpoint. Call `collect` (or "
                                   "`set_state`) first.")
            self.collect()
        states = {}
        for key, entry in self._states.items():
            state = legacy_state_string(entry.state)
            states[key] = {"state": str(state), "type": entry.type_name}
        return json.dumps({"version": FORMAT_VERSION, "states": states})

    def deserialize(self, data) -> None:
        """Take the states of :meth:`serialize`'s text (``str`` or ``bytes``); they are
        applied at registration. Files of ndd's format 1 are read too.

        Raises
        ------
        ValueError
            Not a checkpoint, another format version, or a malformed entry.
        """
        try:
            payload = json.loads(data)
        except (TypeError, ValueError) as e:
            raise ValueError(f"Invalid checkpoint payload: not JSON text ({e}).") from None
        if not isinstance(payload, dict):
            raise ValueError("Invalid checkpoint payload: expected a JSON object with "
                             "`version` and `states`.")
        version = payload.get("version", 0)
        if version == 1 and "objects" in payload and "states" not in payload:
            states = self._from_format_1(payload["objects"])
        elif "states" not in payload:
            raise ValueError("Invalid checkpoint payload: expected a JSON object with "
                             "`version` and `states`.")
        elif version != FORMAT_VERSION:
            raise ValueError(f"Unsupported checkpoint format version {version}; expected "
                             f"{FORMAT_VERSION}.")
        else:
            states = self._from_format_2(payload["states"])
        self._states = states
        self._dirty = set(states)
        self._complete, self._loaded = False, True

    @staticmethod
    def _from_format_2(states):
        if not isinstance(states, dict):
            raise ValueError("Invalid checkpoint payload: `states` must be a dict.")
        out = {}
        for k, v in states.items():
            if not isinstance(v, dict) or "state" not in v:
                raise ValueError(f"Invalid checkpoint entry for {k!r}: expected "
                                 f"{{'state': ..., 'type': ...}}.")
            type_name = v.get("type")
            if type_name is not None and not isinstance(type_name, str):
                raise ValueError(f"Invalid `type` for entry {k!r}: expected a string.")
            out[str(k)] = _StateEntry(str(v["state"]), type_name)
        return out

    @staticmethod
    def _from_format_1(objects):
        """ndd's earlier files: ``{name: {"kind": "File" | "RNG", "state": dict}}``."""
        if not isinstance(objects, dict):
            raise ValueError("Invalid checkpoint payload: `objects` must be a dict.")
        out = {}
        for k, v in objects.items():
            if not isinstance(v, dict) or not isinstance(v.get("state"), dict) or \
                    not isinstance(v.get("kind"), str):
                raise ValueError(f"Invalid checkpoint entry for {k!r}: expected "
                                 f"{{'kind': str, 'state': dict}} (format 1).")
            out[str(k)] = _StateEntry(legacy_state_string(v["state"]), v["kind"])
        return out

    # ------------------------------------------------------------------ files
    def save(self, filename: str) -> str:
        """Write :meth:`serialize` to ``filename`` with the next free ``{seq}``
        (e.g. ``"ckpt_{seq:04d}.json"``; the folder is created) and return the path.

        Raises
        ------
        ValueError
            ``filename`` has no ``{seq}`` field (or other fields).
        RuntimeError
            An empty checkpoint.
        """
        seq = self._save_seq
        if seq is None:
            seq = max((s for s, _ in _matching_files(filename)), default=-1) + 1
        path = filename.format(seq=seq)
        while os.path.exists(path):
            seq += 1
            path = filename.format(seq=seq)
        data = self.serialize()
        folder = os.path.dirname(path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(data)
        os.replace(path + ".tmp", path)
        self._save_seq = seq + 1
        return path

    def load(self, filename: str) -> str:
        """Read the file matching ``filename`` with the highest ``{seq}`` (see
        :meth:`deserialize`) and return its path.

        Raises
        ------
        FileNotFoundError
            No file matches.
        ValueError
            ``filename`` has no ``{seq}`` field, or the file is not a checkpoint.
        """
        found = sorted(_matching_files(filename))
        if not found:
            raise FileNotFoundError(f"No checkpoint file matches filename {filename!r}.")
        seq, path = found[-1]
        with open(path, encoding="utf-8") as f:
            self.deserialize(f.read())
        self._save_seq = seq + 1
        return path


def _pattern_parts(pattern: str) -> list:
    """``pattern`` as ``[literal, None, literal]`` around its one ``{seq}`` field."""
    if not isinstance(pattern, str):
        raise TypeError(f"checkpoint file pattern must be a str, got {type(pattern).__name__}")
    parts, seen = [], False
    for literal, field, _spec, _conv in string.Formatter().parse(pattern):
        parts.append(literal)
        if field is None:
            continue
        if field != "seq":
            raise ValueError(f"Unsupported field {{{field}}} in checkpoint pattern "
                             f"{pattern!r}; only `{{seq}}` (with an optional format spec) is "
                             f"allowed.")
        if seen:
            raise ValueError(f"`{{seq}}` may appear at most once in a checkpoint pattern, got "
                             f"{pattern!r}.")
        seen = True
        parts.append(None)
    if not seen:
        raise ValueError(f"Checkpoint pattern must include `{{seq}}`, got {pattern!r}.")
    return parts


def _matching_files(pattern: str):
    """``(seq, path)`` of the existing files ``pattern`` describes."""
    parts = _pattern_parts(pattern)
    wildcard = "".join("*" if p is None else glob.escape(p) for p in parts)
    rx = re.compile("".join(r"(\d+)" if p is None else re.escape(p) for p in parts) + r"\Z")
    for path in glob.glob(wildcard):
        m = rx.match(path)
        if m:
            yield int(m.group(1)), path

