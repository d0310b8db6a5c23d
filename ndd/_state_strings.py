"""The state strings of stateful objects (``readers.File`` and ``random.RNG``).

``Reader.get_state()`` and ``RNG.get_state()`` return one ASCII ``str`` (DALI too hands out a
serialized string: ``str(state)``), so a state survives ``str()``, JSON, pickle and
``torch.save``/``torch.load`` (also with ``weights_only=True``) as it is. Layout::

    <kind>/<version>;<key>=<value>;...;crc=<crc32 of everything before ';crc=', 8 hex>

``kind`` is ``ndd.readers.File`` or ``ndd.random.RNG``, ``version`` is :data:`STATE_VERSION`;
values are decimal integers, ``0``/``1`` for flags, ``-`` for None, or words of
``[A-Za-z0-9_.]``. Every key of the version must be present, in order, and nothing else; the
checksum catches a truncated or altered string. ``docs/semantics.md`` ("State and
checkpoints") lists the keys of each kind.

The keys of both kinds are declared here, next to the format, together with the readers of
version 1 (the dicts earlier ndd versions returned): the reader, the RNG and the checkpoint
files all use this one module.
"""
from __future__ import annotations

import re
import zlib
from typing import NamedTuple

from runtime.readers.file_reader import STATE_FORMAT as CORE_STATE_FORMAT

#: Version of the state strings (version 1 was the dicts of earlier ndd versions, which
#: ``set_state`` still accepts).
STATE_VERSION = 2

_WORD = re.compile(r"[A-Za-z0-9_.]+\Z")
_INT = re.compile(r"-?[0-9]+\Z")


class StateField(NamedTuple):
    """One key of a state string: its name and its kind of value.

    ``kind`` is ``"int"``, ``"bool"``, ``"word"``; ``optional`` allows ``-`` (None).
    """

    name: str
    kind: str
    optional: bool = False


def encode_state(kind: str, fields: tuple, values: dict) -> str:
    """The state string of ``values`` (a dict holding every key of ``fields``).

    Parameters
    ----------
    kind : str
        ``ndd.readers.File`` or ``ndd.random.RNG``.
    fields : tuple of StateField
        The keys of this kind, in order.
    values : dict
        ``name -> int | bool | str | None``.

    Returns
    -------
    str
        ``kind/STATE_VERSION;key=value;...;crc=xxxxxxxx``.
    """
    parts = [f"{kind}/{STATE_VERSION}"]
    for f in fields:
        v = values[f.name]
        if v is None:
            if not f.optional:
                raise ValueError(f"internal error: state field {f.name!r} of {kind} is None")
            text = "-"
        elif f.kind == "bool":
            text = "1" if v else "0"
        elif f.kind == "int":
            text = str(int(v))
        else:
            text = str(v)
            if not _WORD.match(text):
                raise ValueError(f"internal error: state field {f.name!r} of {kind} holds "
                                 f"{text!r}")
        parts.append(f"{f.name}={text}")
    body = ";".join(parts)
    return f"{body};crc={zlib.crc32(body.encode('ascii')):08x}"


def state_text(value, who: str, state_type: str | None = None) -> str | None:
    """``value`` as a state string, or None for a dict (an earlier version's state).

    ``state_type`` names DALI's state object the string stands for (``"ReaderState"``) in the
    TypeError, as DALI's message does.

    Raises
    ------
    TypeError
        For anything else than a str, bytes or a dict.
    ValueError
        For bytes that are not ASCII.
    """
    if isinstance(value, dict):
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        try:
            return bytes(value).decode("ascii")
        except UnicodeDecodeError:
            raise ValueError(f"{who}: the state bytes are not ASCII; expected the string "
                             f"returned by get_state()") from None
    if isinstance(value, str):
        return value
    if state_type is not None:
        raise TypeError(f"{who}: state must be a str (as returned by get_state(): ndd's "
                        f"{state_type} is that str), bytes, or the dict of an earlier ndd "
                        f"version, got {type(value).__name__}")
    raise TypeError(f"{who}: state must be a str (as returned by get_state()), bytes, or the "
                    f"dict of an earlier ndd version, got {type(value).__name__}")


def decode_state(text: str, kind: str, fields: tuple, who: str) -> dict:
    """The values of a state string made by :func:`encode_state` for ``kind``.

    Raises
    ------
    ValueError
        Naming what was expected: the string is of another kind (another ndd object, or a
        DALI state), another version, truncated or altered (checksum), or holds a bad value.
    """
    text = text.strip()
    head = text.split(";", 1)[0]
    want = f"{kind}/{STATE_VERSION}"
    if head != want:
        raise ValueError(f"{who}: expected an {kind} state (a string starting with "
                         f"{want + ';'!r}, as returned by get_state()), got "
                         f"{_describe(text, head, kind)}")
    body, sep, crc = text.rpartition(";crc=")
    if not sep or not re.fullmatch(r"[0-9a-f]{8}", crc) or \
            int(crc, 16) != zlib.crc32(body.encode("ascii", "replace")):
        raise ValueError(f"{who}: corrupt {kind} state (checksum mismatch: the string was "
                         f"truncated or altered): {text[:80]!r}")
    items = body.split(";")[1:]
    names = [item.partition("=")[0] for item in items]
    if names != [f.name for f in fields]:
        raise ValueError(f"{who}: corrupt {kind} state: keys {names} are not the expected "
                         f"{[f.name for f in fields]}")
    out = {}
    for f, item in zip(fields, items):
        raw = item.partition("=")[2]
        out[f.name] = _parse_value(raw, f, kind, who)
    return out


def _parse_value(raw, f, kind, who):
    if raw == "-" and f.optional:
        return None
    if f.kind == "bool" and raw in ("0", "1"):
        return raw == "1"
    if f.kind == "int" and _INT.match(raw):
        return int(raw)
    if f.kind == "word" and _WORD.match(raw):
        return raw
    raise ValueError(f"{who}: corrupt {kind} state: {f.name}={raw!r} is not "
                     f"{'a flag (0 or 1)' if f.kind == 'bool' else 'an ' + f.kind}"
                     f"{' or -' if f.optional else ''}")


def _describe(text, head, kind):
    """What a state string that is not ``kind``'s looks like (for the error message)."""
    if not text:
        return "an empty string"
    if text.startswith("Philox_"):
        return (f"a DALI RNG state {text[:60]!r} (the states of DALI and ndd are not "
                f"interchangeable)")
    other = head.rpartition("/")
    if other[1] and other[0] == kind:
        return (f"a version {other[2]!r} state (this ndd reads version {STATE_VERSION} "
                f"strings and the dicts of version 1)")
    if other[1] and other[0].startswith("ndd."):
        return f"an {other[0]} state"
    if len(text) >= 8 and len(text) % 4 == 0 and re.fullmatch(r"[A-Za-z0-9+/]+=*", text):
        return (f"{text[:60]!r}, which looks like a DALI reader state (the states of DALI and "
                f"ndd are not interchangeable)")
    return repr(text[:60])


# ------------------------------------------------------------------ readers.File
READER_KIND = "ndd.readers.File"
_READER_FIELDS = tuple(StateField(*f) for f in (
    ("epoch", "int"), ("position", "int"), ("mode", "word", True), ("batch_size", "int", True),
    ("num_samples", "int"), ("num_shards", "int"), ("shard_id", "int"),
    ("stick_to_shard", "bool"), ("pad_last_batch", "bool"), ("random_shuffle", "bool"),
    ("seed", "int"), ("shuffle_after_epoch", "bool"), ("shuffle_after_epoch_seed", "int"),
    ("dataset", "word", True)))


def encode_reader_state(core_state: dict, kind: str = READER_KIND) -> str:
    """The state string of a reader core's state dict (``FileReaderCore.get_state()``);
    ``kind`` names the reader (``ndd.readers.Numpy``...: the same keys)."""
    return encode_state(kind, _READER_FIELDS, core_state)


def decode_reader_state(text: str, kind: str = READER_KIND,
                        core_format: str = CORE_STATE_FORMAT) -> dict:
    """The core's state dict of a state string (the core checks it against the reader);
    ``core_format`` is the tag of the core's dicts."""
    who = kind.removeprefix("ndd.") + ".set_state"
    values = decode_state(text, kind, _READER_FIELDS, who)
    return {"format": core_format, **values}


def reader_state_from_legacy(state: dict) -> dict:
    """The core's state dict of an earlier version's ``get_state()`` dict (state format 1:
    ``{"type": "ndd.readers.File", "core": {...}}``)."""
    core = state.get("core") if state.get("type") == READER_KIND else None
    if not isinstance(core, dict) or core.get("format") != CORE_STATE_FORMAT:
        raise ValueError(f"readers.File.set_state: expected an {READER_KIND} state (the string "
                         f"returned by get_state(), or an earlier version's dict with "
                         f"type={READER_KIND!r}), got {state!r:.120}")
    return core


# ------------------------------------------------------------------ random.RNG
RNG_KIND = "ndd.random.RNG"
_RNG_FIELDS = (StateField("bit_generator", "word"), StateField("state", "int"),
               StateField("inc", "int"), StateField("has_uint32", "int"),
               StateField("uinteger", "int"), StateField("seed", "int", optional=True))


def check_rng_values(v: dict) -> dict:
    """``v`` (a decoded RNG state) when it is a state PCG64 can be in, else ValueError."""
    inner = v["state"]
    bad = None
    if v["bit_generator"] != "PCG64":
        bad = f"bit_generator {v['bit_generator']!r} is not PCG64"
    elif not (0 <= inner["state"] < 2 ** 128 and 0 <= inner["inc"] < 2 ** 128):
        bad = "state or inc is not a 128-bit unsigned integer"
    elif inner["inc"] % 2 == 0:
        bad = "inc is even (PCG64's increment is odd)"
    elif v["has_uint32"] not in (0, 1) or not 0 <= v["uinteger"] < 2 ** 32:
        bad = "has_uint32 is not 0 or 1, or uinteger is not a 32-bit unsigned integer"
    elif v["seed"] is not None and v["seed"] < 0:
        bad = "seed is negative"
    if bad:
        raise ValueError(f"RNG.set_state: corrupt {RNG_KIND} state: {bad}")
    return v


def encode_rng_state(d: dict) -> str:
    """The state string of an RNG's state dict (``{"bit_generator", "state": {"state",
    "inc"}, "has_uint32", "uinteger", "seed"}``)."""
    flat = {"bit_generator": d["bit_generator"], "state": d["state"]["state"],
            "inc": d["state"]["inc"], "has_uint32": d["has_uint32"],
            "uinteger": d["uinteger"], "seed": d["seed"]}
    return encode_state(RNG_KIND, _RNG_FIELDS, flat)


def decode_rng_state(text: str) -> dict:
    """The RNG state dict of a state string (not yet checked: :func:`check_rng_values`)."""
    v = decode_state(text, RNG_KIND, _RNG_FIELDS, "RNG.set_state")
    return {"type": RNG_KIND, "bit_generator": v["bit_generator"],
            "state": {"state": v["state"], "inc": v["inc"]},
            "has_uint32": v["has_uint32"], "uinteger": v["uinteger"], "seed": v["seed"]}


def rng_state_from_legacy(state: dict) -> dict:
    """The dict ``RNG.get_state`` returned in earlier ndd versions (state format 1), checked."""
    if state.get("type") != RNG_KIND:
        raise ValueError(f"RNG.set_state: expected an {RNG_KIND} state (the string returned by "
                         f"get_state(), or an earlier version's dict with type={RNG_KIND!r}), "
                         f"got {state!r:.120}")
    try:
        inner = state["state"]
        out = {"type": RNG_KIND, "bit_generator": state["bit_generator"],
               "state": {"state": int(inner["state"]), "inc": int(inner["inc"])},
               "has_uint32": int(state["has_uint32"]), "uinteger": int(state["uinteger"]),
               "seed": state.get("seed")}
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"RNG.set_state: corrupt {RNG_KIND} state dict (missing or bad {e})") \
            from None
    if out["seed"] is not None and (isinstance(out["seed"], bool) or
                                    not isinstance(out["seed"], int)):
        raise ValueError(f"RNG.set_state: corrupt {RNG_KIND} state dict (seed "
                         f"{out['seed']!r} is not an integer)")
    return check_rng_values(out)


# ------------------------------------------------------------------ version 1
def legacy_state_string(state):
    """A version-1 state dict (ndd's earlier ``get_state()`` and checkpoint files) as the
    current string; anything else unchanged."""
    if isinstance(state, dict) and state.get("type") == RNG_KIND:
        return encode_rng_state(rng_state_from_legacy(state))
    if isinstance(state, dict) and state.get("type") == READER_KIND:
        core = reader_state_from_legacy(state)
        try:
            return encode_reader_state({**core, "dataset": core.get("dataset")})
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"corrupt {READER_KIND} state dict (format 1): missing or bad "
                             f"{e}") from None
    return state
