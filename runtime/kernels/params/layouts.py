"""Image layouts: the layout a sample without one is given, and the axes of a layout.

A Value's layout may be unknown (``""``): a batch built from plain arrays.  Kernels then use
the default of its number of dimensions, the one DALI's image operators assume: ``HW`` (2-D),
``HWC`` (3-D), ``FHWC`` (4-D: a sequence of frames).
"""
from __future__ import annotations

__all__ = ["DEFAULT_LAYOUTS", "default_layout", "meta_layout", "layout_axes", "hw_axes"]

#: number of dimensions -> the layout assumed when a sample has none
DEFAULT_LAYOUTS = {2: "HW", 3: "HWC", 4: "FHWC"}


def default_layout(ndim: int) -> str:
    """The layout assumed for a sample of ``ndim`` dimensions without one (``""``: none)."""
    return DEFAULT_LAYOUTS.get(ndim, "")


def meta_layout(meta) -> str:
    """A Value's layout, or the default of its number of dimensions.

    Parameters
    ----------
    meta : compiler.ir.ValueMeta
        Its ``layout`` (may be empty) and ``ndim``.
    """
    return meta.layout or DEFAULT_LAYOUTS.get(meta.ndim, "")


def hw_axes(layout: str) -> tuple[int, int]:
    """``(H axis, W axis)`` of an image layout: ``(0, 1)`` for ``HWC``/``HW``, else ``(1, 2)``
    (``CHW``, and ``FHWC`` frames)."""
    return (0, 1) if layout in ("HWC", "HW") else (1, 2)


def layout_axes(layout, ndim, *, name="layout", spatial=("H", "W")):
    """Validate an image layout and map its letters to axes.

    Parameters
    ----------
    layout : str or None
        Layout string such as ``"HWC"``, ``"CHW"``, ``"HW"``, ``"FHWC"``. ``None`` or ``""``
        means the default of ``ndim`` (:data:`DEFAULT_LAYOUTS`).
    ndim : int
        Number of dimensions of the sample.
    name : str
        Argument name for error messages.
    spatial : tuple of str
        Letters that must be present.

    Returns
    -------
    tuple
        ``(layout, axes)`` with ``axes`` a dict letter -> axis index.

    Raises
    ------
    ValueError
        No layout given for a rank without a default, a layout length that differs from
        ``ndim``, repeated letters, or a required letter missing.
    TypeError
        ``layout`` is not a string.
    """
    if layout is None or layout == "":
        layout = DEFAULT_LAYOUTS.get(ndim)
        if layout is None:
            raise ValueError(
                f"{name} is not given and cannot be inferred for a {ndim}-D input; "
                f"expected a layout such as 'HWC', 'CHW' or 'HW'")
    if not isinstance(layout, str):
        raise TypeError(f"{name}={layout!r}: expected a layout string such as 'HWC'")
    if len(layout) != ndim:
        raise ValueError(
            f"{name}={layout!r} has {len(layout)} letters but the input has {ndim} dimensions")
    if len(set(layout)) != len(layout):
        raise ValueError(f"{name}={layout!r}: repeated axis letters")
    for letter in spatial:
        if letter not in layout:
            raise ValueError(f"{name}={layout!r}: expected a layout with a {letter!r} axis "
                             f"(e.g. 'HWC', 'CHW', 'HW')")
    return layout, {c: i for i, c in enumerate(layout)}
