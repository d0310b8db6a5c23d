"""Checkpoints of stateful objects (readers and RNGs): ``ndd.checkpoint.Checkpoint``.

Dynamic mode has no pipeline-level checkpoint: a Checkpoint aggregates the ``get_state()`` of
registered objects. Restoring: build fresh objects, ``load`` then ``register`` (the loaded state is
applied at registration). Source: DALI dynamic-mode checkpointing guide.
"""
from __future__ import annotations

import glob
import json
import os
import re

FORMAT_VERSION = 1


class Checkpoint:
    """Collects, saves and restores the states of registered readers and RNGs (not thread-safe:
    one Checkpoint per thread)."""

    def __init__(self):
        self._objects: dict[str, object] = {}
        self._loaded: dict[str, dict] | None = None
        self._collected: dict[str, dict] | None = None
        self._anon = 0

    def register(self, obj, name: str | None = None):
        """Register ``obj`` (a reader or ``ndd.random.RNG``) under ``name`` (default ``__op_<k>``).

        If a checkpoint was loaded, its state for ``name`` is applied now.

        Raises
        ------
        RuntimeError
            Registering an already-iterated reader built without ``enable_checkpointing=True``.
        KeyError
            The loaded checkpoint has no entry for ``name``.
        TypeError
            The loaded entry is for a different kind of object.
        """
        if name is None:
            name = f"__op_{self._anon}"
            self._anon += 1
        if not hasattr(obj, "get_state") or not hasattr(obj, "set_state"):
            raise TypeError(f"Checkpoint.register: {type(obj).__name__} has no state to save")
        if hasattr(obj, "enable_checkpointing") and not obj.enable_checkpointing:
            if getattr(obj, "_iterated", False):
                raise RuntimeError(f"Checkpoint.register: reader {name!r} was iterated without "
                                   f"enable_checkpointing=True")
            obj.enable_checkpointing = True
        self._objects[name] = obj
        if self._loaded is not None:
            if name not in self._loaded:
                raise KeyError(f"Checkpoint.register: the loaded checkpoint has no entry "
                               f"{name!r}; it has {sorted(self._loaded)}")
            entry = self._loaded[name]
            kind = type(obj).__name__
            if entry["kind"] != kind:
                raise TypeError(f"Checkpoint.register: entry {name!r} holds a {entry['kind']} "
                                f"state, not a {kind}")
            obj.set_state(entry["state"])
        return obj

    def collect(self) -> dict:
        """Snapshot every registered object's state."""
        self._collected = {name: {"kind": type(o).__name__, "state": o.get_state()}
                           for name, o in self._objects.items()}
        return self._collected

    def serialize(self) -> str:
        if self._collected is None:
            self.collect()
        return json.dumps({"version": FORMAT_VERSION, "objects": self._collected})

    def deserialize(self, text: str) -> None:
        data = json.loads(text)
        if data.get("version") != FORMAT_VERSION:
            raise ValueError(f"checkpoint format version {data.get('version')!r} is not "
                             f"{FORMAT_VERSION}; no automatic upgrade")
        self._loaded = data["objects"]

    def save(self, pattern: str) -> str:
        """Write to ``pattern`` with the next free ``{seq}`` (e.g. ``"ckpt_{seq:04d}.json"``)."""
        seqs = _existing(pattern)
        path = pattern.format(seq=(max(seqs) + 1) if seqs else 0)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(self.serialize())
        os.replace(tmp, path)
        return path

    def load(self, pattern: str) -> str:
        """Read the file matching ``pattern`` with the highest ``{seq}``.

        Raises
        ------
        FileNotFoundError
            When no file matches.
        """
        seqs = _existing(pattern)
        if not seqs:
            raise FileNotFoundError(f"no checkpoint matches {pattern!r}")
        path = pattern.format(seq=max(seqs))
        with open(path) as f:
            self.deserialize(f.read())
        return path

    def clear(self) -> None:
        self._objects.clear()
        self._loaded = None
        self._collected = None
        self._anon = 0


def _existing(pattern: str) -> list[int]:
    if "{seq" not in pattern:
        raise ValueError(f"checkpoint file pattern needs a {{seq}} placeholder, got {pattern!r}")
    head, rest = pattern.split("{seq", 1)
    tail = rest.split("}", 1)[1]
    rx = re.compile(re.escape(os.path.basename(head)) + r"(\d+)" + re.escape(tail) + "$")
    folder = os.path.dirname(head) or "."
    out = []
    for p in glob.glob(os.path.join(glob.escape(folder), "*")):
        m = rx.match(os.path.basename(p))
        if m:
            out.append(int(m.group(1)))
    return out


def current() -> Checkpoint:
    """The Checkpoint bound to this thread's current ``EvalContext``."""
    from ndd._eval_mode import EvalContext
    ctx = EvalContext.current()
    if ctx._checkpoint is None:
        ctx._checkpoint = Checkpoint()
    return ctx._checkpoint
