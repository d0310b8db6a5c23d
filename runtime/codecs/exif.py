"""Reading the EXIF orientation tag (0x0112) from JPEG, PNG, WebP and TIFF containers.

A cheap header walk: no pixel data is read or decoded. Semantics of the values follow the
EXIF 2.3 specification (1 = as stored, 2 = mirrored left-right, 3 = rotated 180, 4 = mirrored
top-bottom, 5 = transposed, 6 = rotated 90 clockwise to display, 7 = transversed, 8 = rotated
90 counter-clockwise); values 5..8 swap height and width.
"""

import struct

__all__ = ["read_orientation", "orientation_swaps_axes"]

_ORIENTATION_TAG = 0x0112


def orientation_swaps_axes(orientation):
    """Return True when EXIF ``orientation`` (1..8) exchanges the image's height and width."""
    return orientation in (5, 6, 7, 8)


def _tiff_orientation(data):
    """Orientation from a TIFF/EXIF block (``II*\\0`` or ``MM\\0*`` header); 1 when absent."""
    if len(data) < 8:
        return 1
    if data[:2] == b"II":
        end = "<"
    elif data[:2] == b"MM":
        end = ">"
    else:
        return 1
    (ifd,) = struct.unpack_from(end + "I", data, 4)
    if ifd + 2 > len(data):
        return 1
    (count,) = struct.unpack_from(end + "H", data, ifd)
    for i in range(min(count, 1024)):
        pos = ifd + 2 + 12 * i
        if pos + 12 > len(data):
            break
        tag, typ = struct.unpack_from(end + "HH", data, pos)
        if tag == _ORIENTATION_TAG:
            if typ == 3:  # SHORT
                (value,) = struct.unpack_from(end + "H", data, pos + 8)
            elif typ == 4:  # LONG, written by a few tools
                (value,) = struct.unpack_from(end + "I", data, pos + 8)
            else:
                return 1
            return value if 1 <= value <= 8 else 1
    return 1


def _ifd0_near_start(data):
    """True when a TIFF's first IFD (and its entries) lie within the first 64 KiB."""
    if len(data) < 8:
        return False
    end = "<" if bytes(data[:2]) == b"II" else ">"
    (ifd,) = struct.unpack_from(end + "I", data, 4)
    return ifd + 2 + 12 * 256 < 65536


def _exif_payload_orientation(payload):
    if payload.startswith(b"Exif\x00\x00"):
        payload = payload[6:]
    return _tiff_orientation(payload)


def _jpeg_orientation(data):
    pos, n = 2, len(data)
    while pos + 4 <= n:
        if data[pos] != 0xFF:
            return 1
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in (0xD9, 0xDA):  # EOI, start of scan: no more headers
            return 1
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:
            pos += 2
            continue
        (length,) = struct.unpack_from(">H", data, pos + 2)
        if marker == 0xE1 and bytes(data[pos + 4:pos + 10]) == b"Exif\x00\x00":
            return _tiff_orientation(bytes(data[pos + 10:pos + 2 + length]))
        pos += 2 + length
    return 1


def _png_orientation(data):
    pos, n = 8, len(data)
    while pos + 8 <= n:
        length, ctype = struct.unpack_from(">I4s", data, pos)
        if ctype == b"eXIf":
            return _exif_payload_orientation(bytes(data[pos + 8:pos + 8 + length]))
        if ctype == b"IEND":
            break
        pos += 12 + length
    return 1


def _webp_orientation(data):
    pos, n = 12, len(data)
    while pos + 8 <= n:
        fourcc, size = struct.unpack_from("<4sI", data, pos)
        if fourcc == b"EXIF":
            return _exif_payload_orientation(bytes(data[pos + 8:pos + 8 + size]))
        pos += 8 + size + (size & 1)
    return 1


def read_orientation(data, fmt):
    """Read the EXIF orientation of an encoded image.

    Parameters
    ----------
    data : bytes or memoryview
        The encoded file.
    fmt : str or None
        Format name (``"jpeg"``, ``"png"``, ``"webp"``, ``"tiff"``); other formats have no
        EXIF orientation.

    Returns
    -------
    int
        The orientation, 1..8; 1 when the tag is absent, malformed or out of range.
    """
    data = memoryview(data).cast("B")
    try:
        if fmt == "jpeg":
            return _jpeg_orientation(data)
        if fmt == "png":
            return _png_orientation(data)
        if fmt == "webp":
            return _webp_orientation(data)
        if fmt == "tiff":
            return _tiff_orientation(bytes(data[:65536]) if _ifd0_near_start(data) else bytes(data))
    except struct.error:
        return 1
    return 1
