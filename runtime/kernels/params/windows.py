"""Crop windows: fixed-size windows placed by relative position (``crop``,
``crop_mirror_normalize``, ``decoders.image_crop``), the out-of-bounds policy applied to them,
and random area/aspect-ratio windows (``random_resized_crop``, ``decoders.image_random_crop``).

Windows are ``(y0, x0, h, w)`` tuples of Python ints, in input pixels. Pure Python on
scalars; thread-safe (no shared state; the random generator is the caller's).
"""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np

from runtime.kernels.caching import call_cached
from runtime.kernels.registry import given

from .seeds import sample_doubles, sample_rng

__all__ = ["crop_window", "crop_size", "random_crop_window", "round_half_away_scalar",
           "clip_window", "check_policy", "OUT_OF_BOUNDS_POLICIES", "CROP_ARGS", "crop_args",
           "random_window", "window_roi", "window_drawer"]

#: The arguments that place a fixed-size window (those of :func:`crop_window`).
CROP_ARGS = ("crop", "crop_h", "crop_w", "crop_pos_x", "crop_pos_y")

OUT_OF_BOUNDS_POLICIES = ("error", "pad", "trim_to_shape")


def crop_args(args: dict) -> dict:
    """The window arguments (:data:`CROP_ARGS`) among ``args`` that are given (not None), as
    :func:`crop_window` takes them."""
    return given(args, CROP_ARGS)


def round_half_away_scalar(v):
    """Round a Python/numpy float to int, halves away from zero (C ``roundf``)."""
    v = float(v)
    t = math.trunc(v)
    if abs(v - t) >= 0.5:
        t += 1 if v > 0 else -1
    return int(t)


def _check_hw(in_hw, name="in_hw"):
    if in_hw.__class__ is tuple and len(in_hw) == 2:        # the common case, quickly
        h, w = in_hw
        if h.__class__ is int and w.__class__ is int and h >= 0 and w >= 0:
            return h, w
    try:
        h, w = (int(v) for v in in_hw)
        ok = all(float(v) == int(v) for v in in_hw)
    except (TypeError, ValueError):
        raise TypeError(f"{name}={in_hw!r}: expected a pair of integers (H, W)") from None
    if not ok or h < 0 or w < 0:
        raise ValueError(f"{name}={in_hw!r}: expected a pair of non-negative integers (H, W)")
    return h, w


def _extent(value, name):
    """One crop extent: floats truncate toward zero (as DALI); 0 = whole extent."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}={value!r}: expected a number of pixels")
    if not math.isfinite(float(value)) or value < 0:
        raise ValueError(f"{name}={value!r}: expected a non-negative number of pixels")
    return int(value)


def crop_size(in_hw, *, crop=None, crop_h=None, crop_w=None):
    """Resolve DALI's ``crop`` / ``crop_h`` / ``crop_w`` arguments to ``(h, w)``.

    Parameters
    ----------
    in_hw : tuple of int
        Input ``(H, W)`` in pixels.
    crop : float or sequence of 2 floats, optional
        ``(crop_h, crop_w)``; a single number is used for both. Fractions are
        truncated toward zero (DALI: ``crop=(2.9, 2.1)`` -> 2x2). An extent of 0
        means "the whole input extent" (DALI behaviour).
    crop_h, crop_w : float, optional
        Must be given together, and not together with ``crop``.

    Returns
    -------
    tuple of int
        ``(h, w)``; no crop arguments give the whole input.

    Raises
    ------
    ValueError
        Negative or non-finite extents, ``crop`` of the wrong length, ``crop``
        combined with ``crop_h``/``crop_w``, or only one of ``crop_h``/``crop_w``.
    TypeError
        Non-numeric extents.
    """
    H, W = _check_hw(in_hw)
    if crop is not None and (crop_h is not None or crop_w is not None):
        raise ValueError(
            f"crop={crop!r} cannot be combined with crop_h={crop_h!r} / crop_w={crop_w!r}")
    if (crop_h is None) != (crop_w is None):
        raise ValueError(
            f"crop_h={crop_h!r} and crop_w={crop_w!r} must be given together")
    if crop is not None:
        if isinstance(crop, numbers.Real) and not isinstance(crop, bool):
            h = w = _extent(crop, "crop")
        else:
            vals = list(np.asarray(crop).ravel().tolist()) if not isinstance(crop, (list, tuple)) \
                else list(crop)
            if len(vals) != 2:
                raise ValueError(f"crop={crop!r}: expected (crop_h, crop_w), 2 values for 2D input")
            h, w = _extent(vals[0], "crop[0]"), _extent(vals[1], "crop[1]")
    elif crop_h is not None:
        h, w = _extent(crop_h, "crop_h"), _extent(crop_w, "crop_w")
    else:
        return H, W
    return (h or H), (w or W)


def _check_pos(pos, name):
    if pos.__class__ is float and 0.0 <= pos <= 1.0:       # the common case, quickly
        return pos
    if isinstance(pos, (bool, np.bool_)) or not isinstance(pos, numbers.Real):
        raise TypeError(f"{name}={pos!r}: expected a number in [0, 1]")
    if not 0.0 <= float(pos) <= 1.0:
        raise ValueError(f"{name}={pos!r}: expected a number in [0, 1]")
    return float(pos)


def _anchor(pos, in_extent, out_extent):
    # DALI stores the position as float32 and multiplies in double precision:
    # round(double(float32(pos)) * (in - out)), halves away from zero
    if in_extent == out_extent:
        return 0
    prod = float(np.float32(pos)) * float(in_extent - out_extent)
    return round_half_away_scalar(prod)


def crop_window(in_hw, *, crop=None, crop_h=None, crop_w=None, crop_pos_x=0.5, crop_pos_y=0.5):
    """Place a fixed-size crop window by relative position (DALI ``crop`` semantics).

    ``y0 = round(crop_pos_y * (H - h))``, ``x0 = round(crop_pos_x * (W - w))``,
    rounded half away from zero, with the position first rounded to float32
    and the product taken in double precision (matches DALI 2.4 bit for bit,
    e.g. ``crop_pos=0.7`` over a 5-pixel margin gives 3, not 4).

    Parameters
    ----------
    in_hw : tuple of int
        Input ``(H, W)`` in pixels.
    crop, crop_h, crop_w : see :func:`crop_size`.
    crop_pos_x, crop_pos_y : float in [0, 1]
        Relative position of the window: 0 = left/top, 1 = right/bottom.

    Returns
    -------
    tuple of int
        ``(y0, x0, h, w)``. The anchor is negative (or the window runs past the
        end) when the window is larger than the input.

    Raises
    ------
    ValueError
        Positions outside [0, 1]; see :func:`crop_size` for the crop extents.
    """
    H, W = _check_hw(in_hw)
    h, w = crop_size((H, W), crop=crop, crop_h=crop_h, crop_w=crop_w)
    px = _check_pos(crop_pos_x, "crop_pos_x")
    py = _check_pos(crop_pos_y, "crop_pos_y")
    return _anchor(py, H, h), _anchor(px, W, w), h, w


def _range_arg(value, name, lower_exclusive=0.0, upper=math.inf):
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        lo = hi = float(value)
    else:
        try:
            vals = [float(v) for v in value]
        except TypeError:
            raise TypeError(f"{name}={value!r}: expected a number or a pair (min, max)") from None
        if len(vals) == 1:      # a scalar (made a 1-tuple by the argument schema): fixed
            vals = vals * 2
        if len(vals) != 2:
            raise ValueError(f"{name}={value!r}: expected a number or a pair (min, max)")
        lo, hi = vals
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo <= lower_exclusive or lo > hi \
            or hi > upper:
        bound = "" if upper == math.inf else f" <= {upper}"
        raise ValueError(
            f"{name}={value!r}: expected finite {lower_exclusive} < min <= max{bound}")
    return lo, hi


def random_crop_window(in_hw, rng, *, random_area=(0.08, 1.0),
                       random_aspect_ratio=(3 / 4, 4 / 3), num_attempts=10):
    """Draw a random crop window of random area and aspect ratio (Inception style).

    Semantics of DALI's ``random_resized_crop`` / ``decoders.image_random_crop`` /
    ``random_crop_generator`` window choice:

    1. If even the most extreme allowed aspect ratio cannot reach the minimum
       area (the image is too wide or too tall), the window is the full height
       (resp. width) with the widest (tallest) allowed aspect ratio.
    2. Otherwise up to ``num_attempts`` tries (all drawn at once with one generator call,
       the first acceptable one is taken): area fraction ``s ~ U(random_area)``,
       aspect ratio ``r = w/h`` log-uniform in ``random_aspect_ratio``,
       ``w = round(sqrt(s*H*W*r))``, ``h = round(sqrt(s*H*W/r))`` (at least 1);
       accepted when it fits in the image and ``w/h`` (after rounding) lies in
       the aspect range.
    3. If every try fails: the whole image, narrowed to the aspect range, then
       scaled down (keeping its aspect) to at most ``max(random_area)`` of the
       image area.
    4. The position is uniform over all integer positions that keep the window
       inside the image: two more numbers ``ux, uy`` (drawn with the attempts' in one
       generator call when there are attempts: the same numbers as a call of its own).

    The same generator state always gives the same window (the draws differ from DALI's
    generator; only the distribution matches).

    Parameters
    ----------
    in_hw : tuple of int
        Input ``(H, W)`` in pixels.
    rng : numpy.random.Generator
        Source of randomness; consumed by this call only (thread-safe as long as
        each thread has its own generator).
    random_area : float or (float, float)
        Range of the window's area as a fraction of the input area;
        0 < min <= max <= 1.
    random_aspect_ratio : float or (float, float)
        Range of ``w / h``; 0 < min <= max.
    num_attempts : int
        Number of tries before the fallback (>= 1).

    Returns
    -------
    tuple of int
        ``(y0, x0, h, w)`` with ``0 <= y0``, ``y0 + h <= H``, ``0 <= x0``,
        ``x0 + w <= W``. An empty input (H or W is 0) gives ``(0, 0, 0, 0)``.

    Raises
    ------
    ValueError
        Bad ranges or ``num_attempts < 1``.
    TypeError
        ``rng`` is not a ``numpy.random.Generator``.
    """
    H, W = _check_hw(in_hw)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng={rng!r}: expected a numpy.random.Generator")
    area_lo, area_hi, ar_lo, ar_hi = call_cached(_random_args, random_area,
                                                 random_aspect_ratio, num_attempts)
    if H == 0 or W == 0:
        return 0, 0, 0, 0
    return _window(H, W, lambda n: rng.random(n).tolist(), area_lo, area_hi, ar_lo, ar_hi,
                   num_attempts)


def _window(H, W, numbers, area_lo, area_hi, ar_lo, ar_hi, num_attempts):
    """:func:`random_crop_window` of a non-empty image with validated arguments; its random
    numbers are ``numbers(n)``: a sequence holding (at least) the ``n`` numbers of one
    generator call, read in order except the position's (from ``numbers(2)`` without
    attempts, ``numbers(2 * num_attempts + 2)`` with them: the position's two come after the
    attempts', in the same generator call, the same doubles as a call of their own)."""
    area = H * W
    min_area = area * area_lo
    max_w = max(1, int(H * ar_hi))  # widest window that is H tall
    max_h = max(1, int(W / ar_lo))  # tallest window that is W wide
    if H * max_w < min_area:  # image too wide for the aspect range
        h, w = H, max_w
        u, at = numbers(2), 0
    elif W * max_h < min_area:  # image too tall
        h, w = max_h, W
        u, at = numbers(2), 0
    else:
        # (area, log-ratio) pairs; the first acceptable one is taken (scalar math: faster
        # than numpy on 10 values)
        tries = 2 * int(num_attempts)
        u, at = numbers(tries + 2), tries
        log_lo = math.log(ar_lo)
        log_span = math.log(ar_hi) - log_lo
        span = area_hi - area_lo
        for i in range(0, tries, 2):
            target = (area_lo + span * u[i]) * area
            ratio = math.exp(log_lo + log_span * u[i + 1]) if log_span > 0 else ar_lo
            w = max(1, int(math.sqrt(target * ratio) + 0.5))
            h = max(1, int(math.sqrt(target / ratio) + 0.5))
            if w <= W and h <= H and ar_lo <= w / h <= ar_hi:
                break
        else:
            ratio = W / H
            if ratio > ar_hi:
                h, w = H, max_w
            elif ratio < ar_lo:
                h, w = max_h, W
            else:
                h, w = H, W
            scale = min(1.0, area_hi * area / (w * h))
            w = max(1, int(w * math.sqrt(scale)))
            h = max(1, int(h * math.sqrt(scale)))
    h, w = min(h, H), min(w, W)
    # uniform position: u * (number of positions), truncated (float64 product, as numpy's)
    ux, uy = u[at], u[at + 1]
    return int(uy * (H - h + 1)), int(ux * (W - w + 1)), h, w


@functools.lru_cache(maxsize=256, typed=True)
def _random_args(random_area, random_aspect_ratio, num_attempts):
    """Validated ``(area_lo, area_hi, ar_lo, ar_hi)`` (cached: the arguments are constants)."""
    area_lo, area_hi = _range_arg(random_area, "random_area", upper=1.0)
    ar_lo, ar_hi = _range_arg(random_aspect_ratio, "random_aspect_ratio")
    if isinstance(num_attempts, bool) or not isinstance(num_attempts, numbers.Integral) \
            or num_attempts < 1:
        raise ValueError(f"num_attempts={num_attempts!r}: expected an integer >= 1")
    return area_lo, area_hi, ar_lo, ar_hi


def random_window(in_hw, args: dict, seeds, i: int):
    """The random window of sample ``i`` of a ``random_resized_crop`` or
    ``decoders.image_random_crop``: :func:`random_crop_window` on ``in_hw`` with the op's
    ``random_area`` / ``random_aspect_ratio`` / ``num_attempts`` (in ``args``), drawn from the
    generator of the sample's seed (``seeds`` the node's ``_seeds``,
    :func:`.seeds.sample_rng`).

    Every kernel of these ops (unfused, fused, on any device) draws its windows here, so the
    same seeds give the same windows everywhere.

    Returns
    -------
    tuple of int
        ``(y0, x0, h, w)``, inside the image.
    """
    u = sample_doubles(seeds, i)
    if u is None:
        return random_crop_window(in_hw, sample_rng(seeds, i), random_area=args["random_area"],
                                  random_aspect_ratio=args["random_aspect_ratio"],
                                  num_attempts=args["num_attempts"])
    # the same numbers read from the seed's stream directly (seeds.SampleDoubles: cheaper
    # than setting a generator's state for the 4-6 numbers a window reads)
    H, W = _check_hw(in_hw)
    area_lo, area_hi, ar_lo, ar_hi = call_cached(_random_args, args["random_area"],
                                                 args["random_aspect_ratio"],
                                                 args["num_attempts"])
    if H == 0 or W == 0:
        return 0, 0, 0, 0
    return _window(H, W, lambda n: u, area_lo, area_hi, ar_lo, ar_hi, args["num_attempts"])


def window_drawer(args: dict):
    """``draw(H, W, u)``: the window :func:`random_window` gives an ``H`` x ``W`` image
    (positive ints) from the sample's :class:`.seeds.SampleDoubles` ``u``, with the op's
    arguments ``args`` validated once (a batch's samples share them); None when they are
    not valid (:func:`random_window` then raises its error)."""
    try:
        attempts = args["num_attempts"]
        area_lo, area_hi, ar_lo, ar_hi = call_cached(_random_args, args["random_area"],
                                                     args["random_aspect_ratio"], attempts)
    except Exception:  # noqa: BLE001 - left to random_window, which raises it per sample
        return None

    def draw(H, W, u):
        return _window(H, W, lambda n: u, area_lo, area_hi, ar_lo, ar_hi, attempts)
    return draw


def check_policy(policy):
    """The ``out_of_bounds_policy`` as one of :data:`OUT_OF_BOUNDS_POLICIES` (an enum's
    ``name`` or a string, any case)."""
    key = getattr(policy, "name", policy)
    if isinstance(key, str) and key.lower() in OUT_OF_BOUNDS_POLICIES:
        return key.lower()
    raise ValueError(
        f"out_of_bounds_policy={policy!r}: expected one of {list(OUT_OF_BOUNDS_POLICIES)}")


def clip_window(window, in_hw, policy, shape=None, layout=None):
    """Apply ``out_of_bounds_policy`` to a window.

    Parameters
    ----------
    window : tuple of int
        ``(y0, x0, h, w)``; may extend past the input.
    in_hw : tuple of int
        Input ``(H, W)``.
    policy : str
        ``"error"``, ``"pad"`` or ``"trim_to_shape"``.
    shape, layout : optional
        Full input shape and layout, only used in the error message.

    Returns
    -------
    tuple of int
        The window to produce: unchanged for ``"error"`` (when inside) and
        ``"pad"``; intersected with the image for ``"trim_to_shape"``.

    Raises
    ------
    ValueError
        ``policy == "error"`` and the window is not inside the input, or an
        unknown policy.
    """
    policy = check_policy(policy)
    y0, x0, h, w = window
    H, W = in_hw
    inside = y0 >= 0 and x0 >= 0 and y0 + h <= H and x0 + w <= W
    if inside or policy == "pad":
        return window
    if policy == "error":
        what = f"{tuple(shape)} (layout {layout!r})" if shape is not None else f"(H, W)={in_hw}"
        raise ValueError(
            f"crop window (y0={y0}, x0={x0}, h={h}, w={w}) does not fit in the input of "
            f"shape {what} with out_of_bounds_policy='error'; expected a window inside "
            f"the image, or out_of_bounds_policy='pad' / 'trim_to_shape'")
    ny0, nx0 = max(y0, 0), max(x0, 0)
    ny1, nx1 = min(y0 + h, H), min(x0 + w, W)
    return ny0, nx0, max(ny1 - ny0, 0), max(nx1 - nx0, 0)


def window_roi(window, in_hw, what: str) -> tuple[int, int, int, int]:
    """A window ``(y0, x0, h, w)`` that must lie inside the image, as the end-exclusive box
    ``(y0, x0, y1, x1)`` a region decode takes.

    Raises
    ------
    ValueError
        The window is empty or leaves the ``in_hw`` image (``what`` names it).
    """
    y0, x0, h, w = window
    H, W = in_hw
    if y0 < 0 or x0 < 0 or y0 + h > H or x0 + w > W or h <= 0 or w <= 0:
        raise ValueError(f"{what} (y={y0}, x={x0}, h={h}, w={w}) is outside the image of "
                         f"{H}x{W} pixels")
    return (y0, x0, y0 + h, x0 + w)
