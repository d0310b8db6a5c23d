"""Recognising image formats from their first bytes, and explaining why a stream failed.

Only magic numbers and container framing are inspected here (no decoding), so these helpers
are cheap and safe to call on any bytes.
"""

import numpy as np

__all__ = ["sniff_format", "diagnose_failure", "first_bytes_hex"]

# (magic, offset, name); checked in order.
_MAGIC = (
    (b"\xff\xd8\xff", 0, "jpeg"),
    (b"\x89PNG\r\n\x1a\n", 0, "png"),
    (b"GIF87a", 0, "gif"),
    (b"GIF89a", 0, "gif"),
    (b"BM", 0, "bmp"),
    (b"II*\x00", 0, "tiff"),
    (b"MM\x00*", 0, "tiff"),
    (b"\x00\x00\x00\x0cjP  \r\n\x87\n", 0, "jpeg2k"),
    (b"\xffO\xffQ", 0, "jpeg2k"),
)
_PNM = (b"P1", b"P2", b"P3", b"P4", b"P5", b"P6")


def sniff_format(buf):
    """Name the image format of an encoded buffer from its magic number.

    Parameters
    ----------
    buf : numpy.ndarray
        1-D uint8 array holding the encoded file.

    Returns
    -------
    str or None
        ``"jpeg"``, ``"png"``, ``"gif"``, ``"bmp"``, ``"tiff"``, ``"webp"``, ``"jpeg2k"``,
        ``"pnm"``, or None when no known magic number matches.
    """
    head = bytes(buf[:16])
    for magic, offset, name in _MAGIC:
        if head[offset:offset + len(magic)] == magic:
            return name
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if head[:2] in _PNM and len(head) > 2 and head[2:3] in (b" ", b"\n", b"\r", b"\t", b"#"):
        return "pnm"
    return None


def first_bytes_hex(buf, count=4):
    """Return the first ``count`` bytes of ``buf`` as space-separated hex (``"3c 68 74 6d"``)."""
    return " ".join(f"{b:02x}" for b in bytes(buf[:count]))


def _jpeg_has_eoi(buf):
    # The end-of-image marker may be followed by padding zeros written by some cameras.
    tail = bytes(buf[-64:]).rstrip(b"\x00")
    return tail.endswith(b"\xff\xd9")


def _png_has_iend(buf):
    return bytes(buf[-12:]).startswith(b"\x00\x00\x00\x00IEND")


def diagnose_failure(buf, fmt, stage):
    """Explain, in a few words, why a recognised stream could not be parsed or decoded.

    Parameters
    ----------
    buf : numpy.ndarray
        1-D uint8 array holding the encoded file.
    fmt : str or None
        Format name from :func:`sniff_format` (or the codec's name).
    stage : str
        ``"header"`` when even the header could not be read, ``"data"`` when decoding the
        pixel data failed.

    Returns
    -------
    str
        A message such as ``"truncated JPEG: no end-of-image marker (stream is 1234 bytes)"``.
    """
    n = buf.size
    if fmt == "jpeg":
        if stage == "header":
            return f"truncated or corrupt JPEG header (stream is {n} bytes)"
        if not _jpeg_has_eoi(buf):
            return f"truncated JPEG: no end-of-image marker (stream is {n} bytes)"
        return f"corrupt JPEG data (stream is {n} bytes)"
    if fmt == "png":
        if stage == "header":
            return f"truncated or corrupt PNG header (stream is {n} bytes)"
        if not _png_has_iend(buf):
            return f"truncated PNG: no IEND chunk (stream is {n} bytes)"
        return f"corrupt PNG data (stream is {n} bytes)"
    name = (fmt or "image").upper() if fmt else "image"
    if stage == "header":
        return f"truncated or corrupt {name} header (stream is {n} bytes)"
    return f"corrupt or unsupported {name} data (stream is {n} bytes)"
