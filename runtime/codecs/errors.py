"""Errors raised by the image codecs."""

__all__ = ["DecodeError", "sample_prefix"]


class DecodeError(ValueError, RuntimeError):
    """Encoded image data that cannot be decoded.

    Both a ``ValueError`` (bad input data) and a ``RuntimeError`` (what DALI 2.4's decoders raise,
    so DALI code's ``except RuntimeError`` catches it).

    Raised for empty, truncated, corrupt or unsupported data. The message names the sample
    (when the caller gave one) and says what is wrong, e.g.
    ``"sample 3 ('cat/01.jpg'): truncated JPEG: ..."``.
    """


def sample_prefix(sample):
    """Return ``"<sample>: "`` for error messages, or ``""`` when ``sample`` is None."""
    return "" if sample is None else f"{sample}: "
