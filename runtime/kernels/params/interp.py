"""Resampling filter names: what ``interp_type`` / ``min_filter`` / ``mag_filter`` accept.

DALI's names (``"INTERP_LINEAR"``, case-insensitive), its ``DALIInterpType`` enum values
(objects with a ``name``, or their numbers 0..5), common aliases (``"bilinear"``,
``"nearest"``, ...) and ndd's own short names all map to one of :data:`INTERP_TYPES`.
"""
from __future__ import annotations

import numpy as np

__all__ = ["INTERP_TYPES", "interp_name", "filter_name", "FILTER_SUPPORT"]

INTERP_TYPES = ("nn", "linear", "cubic", "lanczos3", "triangular", "gaussian")
# DALI's DALIInterpType numbering, so that DALI/ndd enums given as ints are understood.
_BY_NUMBER = {0: "nn", 1: "linear", 2: "cubic", 3: "lanczos3", 4: "triangular", 5: "gaussian"}
_ALIASES = {"nearest": "nn", "bilinear": "linear", "bicubic": "cubic", "lanczos": "lanczos3",
            "triangle": "triangular"}

#: Support radius of each filter in units of ``max(1, window / out)`` (DALI's filter widths,
#: see ``runtime/kernels/cpu/resize.py``): linear/triangular r, gaussian ~r (2r taken), cubic
#: 2r, lanczos3 3r; NN reads one pixel.
FILTER_SUPPORT = {"nn": 1, "linear": 1, "triangular": 1, "gaussian": 2, "cubic": 2,
                  "lanczos3": 3}


def interp_name(arg_name: str, value) -> str | None:
    """The filter ``value`` names, as one of :data:`INTERP_TYPES` (``None`` stays ``None``).

    Parameters
    ----------
    arg_name : str
        The argument (``"interp_type"``, ``"min_filter"``, ``"mag_filter"``), for messages.
    value : str, INTERP_* enum, int or None

    Raises
    ------
    ValueError
        An unknown name or enum number.
    TypeError
        Neither a string, an enum nor an integer.
    """
    if value is None:
        return None
    if value.__class__ is str and value in INTERP_TYPES:     # the common case, quickly
        return value
    if isinstance(value, str):
        key = value.strip().lower()
        if key.startswith("interp_"):
            key = key[len("interp_"):]
        key = _ALIASES.get(key, key)
        if key in INTERP_TYPES:
            return key
        raise ValueError(f"resize: `{arg_name}` must be one of {INTERP_TYPES} (or a DALI "
                         f"INTERP_* enum), got {value!r}")
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return interp_name(arg_name, name)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        if int(value) in _BY_NUMBER:
            return _BY_NUMBER[int(value)]
        raise ValueError(f"resize: `{arg_name}` enum value must be 0..5, got {value!r}")
    raise TypeError(f"resize: `{arg_name}` must be a string or an INTERP_* enum, got "
                    f"{value!r} ({type(value).__name__})")


def filter_name(value) -> str | None:
    """:func:`interp_name` for planning (``None`` stays ``None``), ``"?"`` where it would
    raise: a planner then takes its general path, and the kernel raises the error itself."""
    try:
        return interp_name("interp_type", value)
    except (TypeError, ValueError):
        return "?"
