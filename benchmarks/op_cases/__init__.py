"""Benchmark cases of ``ops_vs_dali.py``: one module per op family, each with ``cases()``."""

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass
class Case:
    """One benchmark case.

    name: shown in the table ("gaussian_blur 3x 480x640x3 u8 sigma 2").
    make: () -> (list of numpy arrays, layout or ""): the batch, built reproducibly.
    call: (mod, batch) -> result handle(s); ``mod`` is ``ndd`` or DALI's dynamic module, so one
      function serves both backends.
    """

    name: str
    make: Callable
    call: Callable


def images(n=8, h=480, w=640, c=3, dtype=np.uint8, seed=0, vary=True):
    """A reproducible batch of HWC images (sizes vary a little per sample when ``vary``)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        hh, ww = (h - 7 * i, w - 5 * i) if vary else (h, w)
        a = rng.integers(0, 256, size=(hh, ww, c))
        out.append(a.astype(dtype) if np.dtype(dtype).kind != "f" else (a / 255).astype(dtype))
    return out, "HWC"
