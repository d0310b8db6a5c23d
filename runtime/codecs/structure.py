"""Cheap walks over a stream's container structure (no pixel decoding).

nvImageCodec hands a stream that its first plug-in rejects to a more lenient one (OpenCV),
which returns the part of a damaged JPEG it could read and ignores a WebP container that does
not add up; its TIFF plug-in returns zeros for strips it could not decompress; and OpenCV's
libpng allocates whatever a PNG chunk's length field declares (2 GB for a 1 KB file).  These
walks find the streams where that can happen, so that :mod:`runtime.codecs.image` refuses them
or asks Pillow (libjpeg-turbo, libwebp, libtiff) for a second opinion.  Every function reads
only headers and length fields and is bounded by the stream's size.
"""
from __future__ import annotations

import re
import struct
import zlib

from .exif import exif_app1_orientation

__all__ = ["png_chunk_problem", "jpeg_structure_problem", "jpeg_walk",
           "webp_container_problem", "gif_declared_size"]

# A PNG with more chunks than this is not walked to its end (the decoders still check it).
_MAX_PNG_CHUNKS = 100_000
# PNG chunk lengths are at most 2**31 - 1 (PNG specification, section 5.3).
_PNG_MAX_CHUNK = 2 ** 31 - 1


def png_chunk_problem(buf):
    """Describe a PNG chunk that runs past the end of the stream or fails its CRC.

    nvImageCodec's PNG parser and OpenCV's libpng allocate what a chunk's length field says
    (2 GB for a 1 KB file), and libpng drops an ancillary chunk whose CRC fails (an eXIf
    chunk with the orientation, a tRNS chunk with the transparency) where Pillow refuses the
    file; so every chunk's length is checked, and every chunk's CRC except IDAT's (the bulk
    of the file, which libpng checks itself).

    Parameters
    ----------
    buf : numpy.ndarray
        1-D uint8 array holding the PNG file.

    Returns
    -------
    str or None
        e.g. ``"truncated or corrupt PNG: the PLTE chunk at byte 33 declares 2147483647
        bytes, but the stream ends 812 bytes later"``; None when every chunk up to IEND (or
        the end of the stream) fits and has its CRC.
    """
    data = memoryview(buf)
    n = buf.size
    pos = 8
    for _ in range(_MAX_PNG_CHUNKS):
        if pos + 8 > n:
            return None
        length, kind = struct.unpack_from(">I4s", data, pos)
        name = kind.decode("latin-1")
        if not name.isalpha():
            return (f"corrupt PNG: bytes {pos + 4}..{pos + 8} should name a chunk, found "
                    f"{bytes(kind)!r}")
        if kind == b"IEND":
            return None                 # no decoder reads IEND's (empty) data
        if length > _PNG_MAX_CHUNK or pos + 12 + length > n:
            return (f"truncated or corrupt PNG: the {name} chunk at byte {pos} declares "
                    f"{length} bytes, but the stream ends {max(0, n - pos - 12)} bytes later")
        if kind != b"IDAT":
            crc = struct.unpack_from(">I", data, pos + 8 + length)[0]
            if zlib.crc32(data[pos + 4:pos + 8 + length]) != crc:
                return f"corrupt PNG: the {name} chunk at byte {pos} fails its CRC check"
        pos += 12 + length
    return None


# JPEG markers that may follow the first scan (ITU T.81, B.2.4 / B.6): tables, restart
# interval, comments, application data, further scans and the end of the image.
_DHT, _DQT, _SOS, _DRI, _EOI, _SOI, _DAC, _COM = 0xC4, 0xDB, 0xDA, 0xDD, 0xD9, 0xD8, 0xCC, 0xFE
_APP1 = 0xE1
_PROGRESSIVE_SOF = (0xC2, 0xC6, 0xCA, 0xCE)
_SOF = frozenset((0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF))
# the markers besides APPn allowed between and inside the scans
_IN_DATA = frozenset((_DHT, _DQT, _SOS, _DRI, _COM, _DAC))


# A byte 0xFF that starts a marker: not stuffing (0xFF00), fill (0xFFFF) or a restart marker
# (0xFFD0..0xFFD7).  Searched for from a position on (C speed), so the payloads of segments
# before the first scan (EXIF thumbnails, ICC profiles) are skipped instead of scanned.
_MARKER = re.compile(rb"\xff[^\x00\xff\xd0-\xd7]")
_NOT_MARKER = frozenset((0x00, 0xFF, *range(0xD0, 0xD8)))
# the markers of the segments before the first scan that the walk only passes over (0x01 is
# stepped over as 2 bytes by exif.read_orientation's walk, so it is not among them)
_PASSED = frozenset(range(0x02, 0xFF)) - _NOT_MARKER - _SOF - {_EOI, _SOI, _SOS}


def _dht_problem(seg):
    """What is wrong with a DHT segment's tables (``seg``: its bytes after the length)."""
    i = 0
    while i < len(seg):
        if i + 17 > len(seg):
            return "a Huffman table (DHT) shorter than its 16 code counts"
        tc, th = seg[i] >> 4, seg[i] & 15
        if tc > 1 or th > 3:
            return f"a Huffman table (DHT) with class {tc} / id {th}"
        counts = seg[i + 1:i + 17]
        total = sum(counts)
        if total > 256 or i + 17 + total > len(seg):
            return f"a Huffman table (DHT) declaring {total} codes in a too short segment"
        code = 0
        for bits, count in enumerate(counts, 1):     # canonical codes must fit their lengths
            code += count                            # (the all-ones code is reserved)
            if code >= (1 << bits):
                return f"a Huffman table (DHT) with more {bits}-bit codes than fit"
            code <<= 1
        if tc == 0 and any(v > 15 for v in seg[i + 17:i + 17 + total]):
            return "a DC Huffman table (DHT) with a symbol above 15"
        i += 17 + total
    return None


def _dqt_problem(seg):
    i = 0
    while i < len(seg):
        pq, tq = seg[i] >> 4, seg[i] & 15
        size = 64 * (2 if pq else 1)
        if pq > 1 or tq > 3 or i + 1 + size > len(seg):
            return f"a quantisation table (DQT) with precision {pq} / id {tq} that does not fit"
        i += 1 + size
    return None


def _sos_problem(seg, components, progressive, coded):
    """What is wrong with a scan header (``seg``: its bytes after the length); records in
    ``coded`` what the scan completes: ``{component: set of coefficients coded to their last
    bit}``."""
    if not seg:
        return "an empty scan header (SOS)"
    ns = seg[0]
    if not progressive and 1 <= ns <= 4 and len(seg) == 4 + 2 * ns and \
            seg.endswith(b"\x00\x3f\x00"):
        # the usual sequential scan (Ss=0, Se=63, Ah=Al=0): the checks below, in short
        ids = seg[1:1 + 2 * ns:2]
        if not any(t & 0xCC for t in seg[2:2 + 2 * ns:2]) and \
                not any(cid in coded for cid in ids) \
                and (components is None or components.issuperset(ids)):
            for cid in ids:
                coded[cid] = {-1}
            return None
    if not 1 <= ns <= 4 or len(seg) != 4 + 2 * ns:
        return f"a scan header (SOS) for {ns} components of {len(seg) + 2} bytes"
    ids = [seg[1 + 2 * k] for k in range(ns)]
    for k, cid in enumerate(ids):
        tables = seg[2 + 2 * k]
        if components is not None and cid not in components:
            return f"a scan header (SOS) naming component {cid}, which the frame does not have"
        if tables >> 4 > 3 or tables & 15 > 3:
            return f"a scan header (SOS) selecting Huffman tables {tables:#04x}"
        if not progressive and coded.get(cid):
            return f"a second scan of component {cid} in a sequential JPEG"
    ss, se, ah, al = seg[1 + 2 * ns], seg[2 + 2 * ns], seg[3 + 2 * ns] >> 4, seg[3 + 2 * ns] & 15
    if al == 0 or not progressive:
        for cid in ids:
            coded.setdefault(cid, set()).update(range(ss, se + 1) if progressive else (-1,))
    if progressive:
        bad = (ss > se or se > 63 or (ss == 0 and se != 0) or (ss > 0 and ns != 1)
               or al > 13 or (ah != 0 and al != ah - 1))
    else:
        bad = ss != 0 or se != 63 or ah != 0 or al != 0
    if bad:
        kind = "progressive" if progressive else "sequential"
        return f"a {kind} scan header (SOS) with Ss={ss}, Se={se}, Ah={ah}, Al={al}"
    return None


def _missing_scans(components, progressive, coded, where):
    """At the end-of-image marker: the components (or, progressive, coefficients) that no
    scan coded completely (the decoders then fill in, and a region decode fills in
    differently from a full decode), or None."""
    if components is None or (not progressive and coded.keys() >= components):
        return None
    if progressive:
        missing = [cid for cid in sorted(components) if len(coded.get(cid, ())) < 64]
        what = "coefficients of component"
    else:
        missing = [cid for cid in sorted(components) if cid not in coded]
        what = "component"
    if not missing:
        return None
    return (f"an end-of-image marker {where} before the scans of {what} "
            f"{', '.join(map(str, missing))} (an incomplete or truncated file)")


def jpeg_structure_problem(buf):
    """Describe what is wrong with a JPEG's marker structure after its first scan begins.

    Between and inside the scans only tables, restart intervals, comments, application
    segments, further scan headers and the end-of-image marker may appear (ITU T.81 B.2.4).
    libjpeg-turbo stops at anything else; nvImageCodec then decodes the stream with OpenCV,
    which returns the part it could read.  The segments before the first scan are checked by
    every decoder alike and not here.

    Parameters
    ----------
    buf : numpy.ndarray
        1-D uint8 array holding the JPEG file (starting with the SOI marker).

    Returns
    -------
    str or None
        e.g. ``"unexpected marker 0xFF81 at byte 1442, inside the image data"``; None when the
        structure is sound up to the end-of-image marker (bytes after it are ignored, as every
        decoder ignores them).
    """
    return jpeg_walk(buf)[0]


def jpeg_walk(buf):
    """``(jpeg_structure_problem(buf), orientation)`` in one walk over the file.

    ``orientation`` is what ``exif.read_orientation(buf, "jpeg")`` returns, read from the
    Exif APP1 segments the walk passes before the first scan, or None where that function's
    own walk may differ from this one (a segment that does not start where the previous one
    ended, a 0xFF01 marker, or no first scan before a problem): call it then.
    """
    n = int(buf.size)
    if n < 4:
        return "no image data", None
    raw = buf.tobytes()                 # indexing bytes is ~10x faster than numpy scalars
    search = _MARKER.search
    pos, scans, components, progressive = 2, 0, None, False
    coded = {}                          # component -> what its scans coded completely
    # the orientation of the first Exif APP1 having one; ``clean``: every segment so far
    # began where the previous one ended (exif.read_orientation's walk took the same ones)
    found, clean = None, True
    while True:
        if not scans and clean:
            # before the first scan, the segments that follow each other directly and are
            # only passed over (tables, APPn, comments), in a short loop: it stops at any
            # other marker, or a length that does not fit, which the code below then takes
            while pos + 4 <= n and raw[pos] == 0xFF and raw[pos + 1] in _PASSED:
                end = pos + 2 + ((raw[pos + 2] << 8) | raw[pos + 3])
                if end > n or end < pos + 4:
                    break
                if raw[pos + 1] == _APP1 and found is None and \
                        raw[pos + 4:pos + 10] == b"Exif\x00\x00":
                    found = exif_app1_orientation(raw[pos + 10:end])
                pos = end
        # the next marker at or after the current segment's end (those inside a payload are
        # not markers): most segments follow each other directly, without a search
        if pos + 1 < n and raw[pos] == 0xFF and raw[pos + 1] not in _NOT_MARKER:
            p = pos
        else:
            found_at = search(raw, pos)
            if found_at is None:
                break
            p = found_at.start()
            if not scans:
                clean = False
        m = raw[p + 1]
        if m == _EOI:
            if not scans:
                return f"an end-of-image marker at byte {p}, before any image data", found
            return _missing_scans(components, progressive, coded, f"at byte {p}"), found
        if m == _SOI:
            return f"a second start-of-image marker at byte {p}", found
        if scans and not (m in _IN_DATA or 0xE0 <= m <= 0xEF):
            return f"unexpected marker 0xFF{m:02X}, inside the image data at byte {p}", found
        if p + 4 > n:
            return (f"marker 0xFF{m:02X} at byte {p} cut off by the end of the stream "
                    f"(truncated)", found if scans else None)
        length = (raw[p + 2] << 8) | raw[p + 3]
        if length < 2 or p + 2 + length > n:
            return (f"marker 0xFF{m:02X} at byte {p} declares a {length}-byte segment, past "
                    f"the end of the stream (truncated or corrupt)", found if scans else None)
        pos = p + 2 + length
        if scans == 0 and m not in _SOF and m != _SOS:
            # the frame header: read alike by every decoder; only the orientation is taken
            if m == _APP1:
                if found is None and clean and raw[p + 4:p + 10] == b"Exif\x00\x00":
                    found = exif_app1_orientation(raw[p + 10:pos])
            elif m == 0x01:
                clean = False           # (read_orientation steps over it as 2 bytes)
            continue
        problem = None
        if scans == 0 and m in _SOF:
            seg = raw[p + 4:pos]
            progressive = m in _PROGRESSIVE_SOF
            if len(seg) >= 6:
                components = {seg[6 + 3 * k] for k in range(min(seg[5], (len(seg) - 6) // 3))}
        elif m == _SOS:
            if not scans and found is None and clean:
                found = 1               # read_orientation stops at the first scan
            problem = _sos_problem(raw[p + 4:pos], components, progressive, coded)
            scans += 1
        elif m == _DHT:
            problem = _dht_problem(raw[p + 4:pos])
        elif m == _DQT:
            problem = _dqt_problem(raw[p + 4:pos])
        elif m == _DRI:
            problem = None if length == 4 else f"a restart interval (DRI) of {length} bytes"
        if problem is not None:
            return f"{problem} at byte {p}", found
    return "no end-of-image marker (truncated)", found if scans else None


def webp_container_problem(buf):
    """Describe a WebP (RIFF) container whose sizes do not add up.

    Parameters
    ----------
    buf : numpy.ndarray
        1-D uint8 array holding the WebP file.

    Returns
    -------
    str or None
        e.g. ``"the RIFF header declares 1204 bytes, the stream has 1300"``; None when the
        RIFF size matches the stream and its chunks fill it exactly.
    """
    n = int(buf.size)
    if n < 20:
        return f"a {n}-byte stream, too short for a WebP header"
    data = memoryview(buf)
    riff = struct.unpack_from("<I", data, 4)[0]
    if riff + 8 != n and not (riff & 1 and riff + 9 == n):
        return f"the RIFF header declares {riff + 8} bytes, the stream has {n}"
    first = bytes(data[12:16])
    if first not in (b"VP8 ", b"VP8L", b"VP8X"):
        return f"the first chunk is {first!r}, not VP8, VP8L or VP8X"
    pos = 12
    for _ in range(_MAX_PNG_CHUNKS):
        if pos + 8 > n:
            break
        kind, size = struct.unpack_from("<4sI", data, pos)
        name = kind.decode("latin-1").strip()
        if size == 0 and kind in (b"VP8 ", b"VP8L", b"ALPH"):
            return f"an empty {name} chunk at byte {pos}"
        pos += 8 + size + (size & 1)
        if pos > n + (size & 1):
            return f"the {name} chunk at byte {pos - 8 - size} declares {size} bytes, past the end"
    if pos < n:
        return f"{n - pos} bytes after the last chunk"
    return None


def gif_declared_size(buf):
    """The size a GIF decoder allocates for the first frame: the logical screen, grown to hold
    the first image if that extends past it (what Pillow does).

    Parameters
    ----------
    buf : numpy.ndarray
        1-D uint8 array holding the GIF file.

    Returns
    -------
    tuple of int or None
        ``(width, height)`` in pixels, or None when the header cannot be read.
    """
    n = int(buf.size)
    if n < 13:
        return None
    data = memoryview(buf)
    width, height, flags = struct.unpack_from("<HHB", data, 6)
    pos = 13 + (3 << ((flags & 7) + 1) if flags & 0x80 else 0)
    while pos < n:
        block = data[pos]
        if block == 0x21:                       # extension: label, then sub-blocks
            pos += 2
            while pos < n and data[pos]:
                pos += 1 + data[pos]
            pos += 1
        elif block == 0x2C:                     # the first image descriptor
            if pos + 9 > n:
                break
            x0, y0, w, h = struct.unpack_from("<HHHH", data, pos + 1)
            return max(width, x0 + w), max(height, y0 + h)
        else:
            break
    return width, height
