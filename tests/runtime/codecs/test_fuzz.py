"""Seeded fuzz test of the CPU image codecs (``runtime.codecs``): damaged files of every format.

Real photos (scikit-image) are encoded with Pillow as baseline / progressive JPEG, PNG (RGB,
palette, 16-bit gray, gray+alpha), BMP (24-bit, palette), TIFF (raw, LZW, deflate, gray+alpha),
WebP (lossy, lossless, extended with EXIF) and GIF, then damaged: truncations, bit flips, zeroed / randomised / deleted /
repeated ranges, and header-field mutations that know the format (JPEG SOF sizes, component
counts, sampling factors, Huffman (DHT) and quantisation (DQT) tables, scan headers, segment
lengths, missing SOI/EOI/SOS/DHT/DQT markers, markers inside the scan data; PNG IHDR sizes and
fields, chunk CRCs and lengths, removed IDAT/IEND/PLTE chunks, flipped IDAT bits with the CRC
fixed; BMP header fields; TIFF tags (sizes, compression, photometric, strips), IFD offsets and
loops; WebP RIFF and chunk sizes, frame headers).  Plus empty files, random bytes (with and
without a format's magic number) and text.

Every case must either decode, with exactly the pixels Pillow decodes from the same bytes, or
raise a :class:`DecodeError` whose message names the sample and the problem.  Never a crash, a
hang, a blow-up of memory, another exception type, or pixels for a stream Pillow rejects.  The
rule for TIFF and BMP files whose header contradicts their data (both decoders succeed with
different readings) is in ``docs/robustness.md``: ndd returns nvImageCodec's reading; the
test accepts it only when Pillow decodes the stream too, with the same shape.

The cases run in worker subprocesses (a chunk each, two at a time), so a native crash in a
codec fails its case instead of killing pytest, and a per-case time limit catches hangs
(``faulthandler``); the peak RSS of a worker is watched per case.  The default run has 442
cases (5-10 s on two cores); ``pytest -m slow`` runs 3 x 6042 (about a minute).
"""
from __future__ import annotations

import io
import json
import os
import pickle
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest

# ------------------------------------------------------------------ settings
#: Seconds one case may take before the worker is stopped and the case fails as a hang.
CASE_TIMEOUT_S = 20
#: The image size limit in the workers: mutated headers may declare sizes up to the limit,
#: which is then what one case may allocate; a low limit keeps every case small.
WORKER_MAX_PIXELS = 1 << 22
#: Growth of a worker's peak RSS allowed in one case: what decoding an image at the limit
#: may take (RGB output, the decoder's own buffers -- OpenCV's TIFF route reads RGBA strips
#: --, Pillow's second opinion and the reference decode; up to ~32 bytes a pixel were seen),
#: plus slack.  A stream that allocates what a length field says costs gigabytes instead.
CASE_RSS_MB = 48 * WORKER_MAX_PIXELS // (1 << 20) + 64

# ------------------------------------------------------------------ the files


def base_files() -> dict:
    """name -> encoded bytes: small crops of real photos in every format (Pillow)."""
    from PIL import Image
    from skimage import data
    chel = np.ascontiguousarray(data.chelsea()[60:108, 100:164])     # 48x64
    coffee = np.ascontiguousarray(data.coffee()[100:141, 200:259])   # 41x59
    astro = np.ascontiguousarray(data.astronaut()[30:110, 150:250])  # 80x100
    im, im2, im3 = Image.fromarray(chel), Image.fromarray(coffee), Image.fromarray(astro)
    exif = Image.Exif()
    exif[0x0112] = 6                    # rotated 90 degrees: decoded stored, then permuted

    def enc(img, fmt, **kw):
        buf = io.BytesIO()
        img.save(buf, fmt, **kw)
        return buf.getvalue()
    g16 = Image.fromarray(chel[..., 1].astype(np.uint16) * 257 + 7)          # mode I;16
    la = Image.fromarray(np.dstack([coffee[..., 0], coffee[..., 2]]), "LA")
    return {
        "jpeg_base": enc(im, "JPEG", quality=85),
        "jpeg_prog": enc(im2, "JPEG", quality=85, progressive=True),
        "jpeg_444": enc(im2, "JPEG", quality=90, subsampling=0),
        "jpeg_exif": enc(im3, "JPEG", quality=80, exif=exif.tobytes(), restart_marker_blocks=3),
        "jpeg_gray": enc(im3.convert("L"), "JPEG", quality=80, restart_marker_rows=1),
        "png_rgb": enc(im, "PNG"),
        "png_pal": enc(im2.convert("P", palette=Image.ADAPTIVE, colors=32), "PNG"),
        "png_g16": enc(g16, "PNG"),
        "png_la": enc(la, "PNG"),
        "png_rgba": enc(im3.convert("RGBA"), "PNG", exif=exif.tobytes()),
        "bmp_rgb": enc(im, "BMP"),
        "bmp_pal": enc(im2.convert("P", palette=Image.ADAPTIVE, colors=16), "BMP"),
        "tiff_raw": enc(im, "TIFF"),
        "tiff_lzw": enc(im2, "TIFF", compression="tiff_lzw"),
        "tiff_deflate": enc(im, "TIFF", compression="tiff_adobe_deflate"),
        "tiff_la": enc(la, "TIFF", compression="tiff_adobe_deflate"),
        "webp_lossy": enc(im, "WEBP", quality=80),
        "webp_lossless": enc(im2, "WEBP", lossless=True),
        "webp_exif": enc(im3, "WEBP", quality=70, exif=exif.tobytes()),
        "gif": enc(im2.convert("P", palette=Image.ADAPTIVE, colors=64), "GIF"),
    }


def special_cases(rng) -> list:
    """(family, description, bytes) of inputs that are no image at all."""
    magics = {"jpeg": b"\xff\xd8\xff", "png": b"\x89PNG\r\n\x1a\n", "gif": b"GIF89a",
              "bmp": b"BM", "tiff": b"II*\x00", "webp": b"RIFF\x00\x10\x00\x00WEBPVP8 "}
    out = [("other", "empty file", b""), ("other", "one zero byte", b"\x00"),
           ("other", "text: HTML", b"<!DOCTYPE html><html><body>404 Not Found</body></html>\n"),
           ("other", "text: JSON", b'{"error": "not found", "code": 404}'),
           ("other", "text: CSV", b"path,label\ncat/01.jpg,0\n" * 20),
           ("other", "text: a line", b"this is not an image\n")]
    for size in (1, 7, 100, 5000):
        out.append(("other", f"{size} random bytes",
                    rng.integers(0, 256, size, dtype=np.uint8).tobytes()))
    for fam, magic in magics.items():
        out.append((fam, f"{fam} magic number alone", magic))
        out.append((fam, f"{fam} magic number + 600 random bytes",
                    magic + rng.integers(0, 256, 600, dtype=np.uint8).tobytes()))
    return out


# ------------------------------------------------------------------ structure walkers
def jpeg_segments(b) -> list:
    """``[(marker, start, length)]``: the marker segments of a JPEG and ``("data", start,
    length)`` for each run of entropy-coded data."""
    segs = [(0xD8, 0, 2)]
    i, n = 2, len(b)
    while i + 1 < n and b[i] == 0xFF:
        m = b[i + 1]
        if m == 0xFF:
            i += 1
            continue
        if m == 0xD9:
            segs.append((m, i, 2))
            break
        if i + 4 > n:
            break
        length = (b[i + 2] << 8) | b[i + 3]
        segs.append((m, i, 2 + length))
        i += 2 + length
        if m == 0xDA:
            j = i
            while j + 1 < n and not (b[j] == 0xFF and b[j + 1] != 0
                                     and not 0xD0 <= b[j + 1] <= 0xD7):
                j += 1
            segs.append(("data", i, j - i))
            i = j
    return segs


def png_chunks(b) -> list:
    """``[(type, start, data length)]`` of a PNG; ``start`` is that of the length field."""
    out, i = [], 8
    while i + 12 <= len(b):
        length = struct.unpack_from(">I", b, i)[0]
        out.append((bytes(b[i + 4:i + 8]), i, length))
        i += 12 + length
    return out


def png_fix_crc(b, start, length):
    crc = zlib.crc32(bytes(b[start + 4:start + 8 + length])) & 0xFFFFFFFF
    struct.pack_into(">I", b, start + 8 + length, crc)


def tiff_entries(b):
    """``(byte order, [(tag, type, count, entry offset)])`` of the first IFD."""
    e = "<" if b[:2] == b"II" else ">"
    ifd = struct.unpack_from(e + "I", b, 4)[0]
    n = struct.unpack_from(e + "H", b, ifd)[0]
    return e, [(*struct.unpack_from(e + "HHI", b, ifd + 2 + 12 * k), ifd + 2 + 12 * k)
               for k in range(n)]


def riff_chunks(b) -> list:
    out, i = [], 12
    while i + 8 <= len(b):
        size = struct.unpack_from("<I", b, i + 4)[0]
        out.append((bytes(b[i:i + 4]), i, size))
        i += 8 + size + (size & 1)
    return out


# ------------------------------------------------------------------ mutators
# Each takes (rng, bytearray) and returns (description, bytearray), or None when it does not
# apply to this file.

def _pick(rng, values):
    return values[int(rng.integers(0, len(values)))]


def m_truncate(rng, b):
    cut = int(rng.integers(1, len(b)))
    return f"truncated to {cut} of {len(b)} bytes", b[:cut]


def m_bitflip(rng, b):
    k = int(rng.integers(1, 9))
    pos = sorted(int(p) for p in rng.integers(0, len(b), k))
    for p in pos:
        b[p] ^= 1 << int(rng.integers(0, 8))
    return f"{k} bit flips at {pos}", b


def m_zero(rng, b):
    s, n = int(rng.integers(0, len(b))), int(rng.integers(1, 128))
    b[s:s + n] = bytes(len(b[s:s + n]))
    return f"bytes {s}..{s + n} zeroed", b


def m_randomise(rng, b):
    s, n = int(rng.integers(0, len(b))), int(rng.integers(1, 64))
    b[s:s + n] = rng.integers(0, 256, len(b[s:s + n]), dtype=np.uint8).tobytes()
    return f"bytes {s}..{s + n} randomised", b


def m_delete(rng, b):
    s, n = int(rng.integers(0, len(b))), int(rng.integers(1, 64))
    del b[s:s + n]
    return f"bytes {s}..{s + n} deleted", b


def m_repeat(rng, b):
    s, n = int(rng.integers(0, len(b))), int(rng.integers(1, 256))
    b[s:s] = b[s:s + n]
    return f"bytes {s}..{s + n} repeated", b


GENERIC = (m_truncate, m_bitflip, m_zero, m_randomise, m_delete, m_repeat)
_U16 = (0, 1, 2, 7, 255, 256, 4095, 32767, 32768, 65535)


def _jpeg_sof(b):
    sof = [s for s in jpeg_segments(b) if s[0] in (0xC0, 0xC1, 0xC2)]
    return sof[0][1] if sof else None


def j_sof_size(rng, b):
    at = _jpeg_sof(b)
    if at is None:
        return None
    h, w = struct.unpack_from(">HH", b, at + 5)
    nh = _pick(rng, _U16 + (h + 1, h - 1, 2 * h))
    nw = _pick(rng, _U16 + (w + 1, w - 1, 3 * w))
    keep = int(rng.integers(0, 3))
    nh, nw = (h if keep == 1 else nh), (w if keep == 0 else nw)
    struct.pack_into(">HH", b, at + 5, nh, nw)
    return f"SOF size {w}x{h} -> {nw}x{nh}", b


def j_sof_fields(rng, b):
    at = _jpeg_sof(b)
    if at is None:
        return None
    ncomp = b[at + 9]
    kind = int(rng.integers(0, 4))
    if kind == 0:
        b[at + 9] = _pick(rng, (0, 1, 2, 4, 5, 255))
        return f"SOF component count {ncomp} -> {b[at + 9]}", b
    if kind == 1:
        b[at + 4] = _pick(rng, (0, 1, 2, 12, 16, 255))
        return f"SOF sample precision 8 -> {b[at + 4]}", b
    c = int(rng.integers(0, ncomp))
    if kind == 2:
        b[at + 11 + 3 * c] = _pick(rng, (0x00, 0x01, 0x10, 0x33, 0x44, 0x55, 0xFF, 0x0F))
        return f"SOF component {c} sampling factors -> {b[at + 11 + 3 * c]:#04x}", b
    b[at + 12 + 3 * c] = _pick(rng, (1, 2, 3, 4, 9, 255))
    return f"SOF component {c} quantisation table -> {b[at + 12 + 3 * c]}", b


def j_dht(rng, b):
    dht = [s for s in jpeg_segments(b) if s[0] == 0xC4]
    if not dht:
        return None
    _, at, length = dht[int(rng.integers(0, len(dht)))]
    kind = int(rng.integers(0, 4))
    if kind == 0:
        b[at + 4] = _pick(rng, (0x02, 0x04, 0x13, 0x20, 0xFF))
        return f"DHT at {at}: table class/id -> {b[at + 4]:#04x}", b
    if kind == 1:
        k = int(rng.integers(0, 16))
        b[at + 5 + k] = int(rng.integers(0, 256))
        return f"DHT at {at}: number of {k + 1}-bit codes -> {b[at + 5 + k]}", b
    if kind == 2 and length > 21:
        k = int(rng.integers(at + 21, at + length))
        b[k] = int(rng.integers(0, 256))
        return f"DHT at {at}: symbol byte {k} randomised", b
    b[at + 5:at + 21] = rng.integers(0, 256, 16, dtype=np.uint8).tobytes()
    return f"DHT at {at}: all 16 code counts randomised", b


def j_dqt(rng, b):
    dqt = [s for s in jpeg_segments(b) if s[0] == 0xDB]
    if not dqt:
        return None
    _, at, length = dqt[int(rng.integers(0, len(dqt)))]
    kind = int(rng.integers(0, 3))
    if kind == 0:
        b[at + 4] = _pick(rng, (0x10, 0x04, 0x1F, 0xF0, 0x07))
        return f"DQT at {at}: precision/id -> {b[at + 4]:#04x}", b
    if kind == 1:
        b[at + 5:at + 69] = bytes(64)
        return f"DQT at {at}: every quantisation value 0", b
    k = int(rng.integers(at + 5, at + length))
    b[k] = int(rng.integers(0, 256))
    return f"DQT at {at}: value byte {k} randomised", b


def j_sos(rng, b):
    sos = [s for s in jpeg_segments(b) if s[0] == 0xDA]
    if not sos:
        return None
    _, at, length = sos[int(rng.integers(0, len(sos)))]
    k = int(rng.integers(at + 4, at + length))
    old, b[k] = b[k], int(rng.integers(0, 256))
    return f"SOS at {at}: header byte {k - at} {old} -> {b[k]}", b


def j_length(rng, b):
    segs = [s for s in jpeg_segments(b) if s[0] != "data" and s[2] > 2]
    m, at, length = segs[int(rng.integers(0, len(segs)))]
    v = _pick(rng, (0, 1, 2, length - 3, length - 1, length + 1, length + 100, 65535))
    struct.pack_into(">H", b, at + 2, max(0, min(65535, v)))
    return f"segment 0xFF{m:02X} at {at}: length field {length - 2} -> {v}", b


_JPEG_NAMES = {0xD8: "SOI", 0xD9: "EOI", 0xDA: "SOS", 0xC4: "DHT", 0xDB: "DQT", 0xC0: "SOF0",
               0xC2: "SOF2", 0xE0: "APP0", 0xDD: "DRI"}


def j_remove(rng, b):
    segs = [s for s in jpeg_segments(b) if s[0] != "data"]
    m, at, length = segs[int(rng.integers(0, len(segs)))]
    if m == 0xDA and rng.integers(0, 2):
        data = [s for s in jpeg_segments(b) if s[0] == "data" and s[1] == at + length]
        length += data[0][2] if data else 0
        del b[at:at + length]
        return f"scan at {at} removed with its data", b
    del b[at:at + length]
    return f"{_JPEG_NAMES.get(m, f'0xFF{m:02X}')} marker segment at {at} removed", b


def j_marker_in_data(rng, b):
    data = [s for s in jpeg_segments(b) if s[0] == "data" and s[2] > 4]
    if not data:
        return None
    _, at, length = data[int(rng.integers(0, len(data)))]
    k = int(rng.integers(at, at + length - 1))
    v = _pick(rng, (0xD9, 0xD8, 0xC4, 0xDA, 0xDB, 0x81, 0xD3, 0x01, 0xC0))
    b[k:k + 2] = bytes((0xFF, v))
    return f"marker 0xFF{v:02X} written into the scan data at {k}", b


def p_ihdr(rng, b):
    (_, at, length), = [c for c in png_chunks(b) if c[0] == b"IHDR"][:1]
    d = at + 8
    kind = int(rng.integers(0, 4))
    if kind == 0:
        w, h = struct.unpack_from(">II", b, d)
        vals = (0, 1, w - 1, w + 1, 2 * w, 65535, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1)
        nw, nh = _pick(rng, vals), (h if rng.integers(0, 2) else _pick(rng, vals))
        struct.pack_into(">II", b, d, nw, nh)
        desc = f"IHDR size {w}x{h} -> {nw}x{nh}"
    elif kind == 1:
        b[d + 8] = _pick(rng, (0, 1, 2, 3, 4, 5, 7, 16, 32))
        desc = f"IHDR bit depth -> {b[d + 8]}"
    elif kind == 2:
        b[d + 9] = _pick(rng, (0, 1, 2, 3, 4, 5, 6, 7, 255))
        desc = f"IHDR colour type -> {b[d + 9]}"
    else:
        k = _pick(rng, (10, 11, 12))
        b[d + k] = _pick(rng, (1, 2, 255))
        desc = f"IHDR byte {k} (compression / filter / interlace) -> {b[d + k]}"
    if rng.integers(0, 4):
        png_fix_crc(b, at, length)
    else:
        desc += " (CRC left stale)"
    return desc, b


def p_crc(rng, b):
    chunks = png_chunks(b)
    t, at, length = chunks[int(rng.integers(0, len(chunks)))]
    b[at + 8 + length] ^= 0x5A
    return f"{t.decode('latin-1')} chunk CRC wrong", b


def p_remove(rng, b):
    chunks = png_chunks(b)
    t, at, length = chunks[int(rng.integers(0, len(chunks)))]
    del b[at:at + 12 + length]
    return f"{t.decode('latin-1')} chunk removed", b


def p_idat_bits(rng, b):
    idat = [c for c in png_chunks(b) if c[0] == b"IDAT"]
    if not idat:
        return None
    _, at, length = idat[int(rng.integers(0, len(idat)))]
    k = int(rng.integers(at + 8, at + 8 + length))
    b[k] ^= 1 << int(rng.integers(0, 8))
    png_fix_crc(b, at, length)
    return f"IDAT bit flip at {k} (CRC fixed)", b


def p_length(rng, b):
    chunks = png_chunks(b)
    t, at, length = chunks[int(rng.integers(0, len(chunks)))]
    v = _pick(rng, (0, 1, max(0, length - 1), length + 1, 2 ** 31 - 1, 2 ** 32 - 1))
    struct.pack_into(">I", b, at, v)
    return f"{t.decode('latin-1')} chunk length {length} -> {v}", b


def p_plte(rng, b):
    plte = [c for c in png_chunks(b) if c[0] == b"PLTE"]
    if not plte:
        return None
    _, at, length = plte[0]
    n = _pick(rng, (1, 3, 6, 9))
    del b[at + 8 + n:at + 8 + length]
    struct.pack_into(">I", b, at, n)
    png_fix_crc(b, at, n)
    return f"PLTE shortened to {n} bytes (CRC fixed)", b


_BMP_FIELDS = {"file size": (2, "<I"), "pixel offset": (10, "<I"), "header size": (14, "<I"),
               "width": (18, "<i"), "height": (22, "<i"), "planes": (26, "<H"),
               "bit count": (28, "<H"), "compression": (30, "<I"), "image size": (34, "<I"),
               "colours used": (46, "<I")}


def b_header(rng, b):
    name = _pick(rng, tuple(_BMP_FIELDS))
    off, fmt = _BMP_FIELDS[name]
    old = struct.unpack_from(fmt, b, off)[0]
    vals = {"<I": (0, 1, 3, 12, 40, 64, 108, 124, old + 1, 2 ** 31, 2 ** 32 - 1),
            "<i": (0, 1, -1, old + 1, old - 1, -old, 2 ** 31 - 1, -2 ** 31, 30000),
            "<H": (0, 1, 2, 4, 8, 15, 16, 24, 32, 64, 65535)}[fmt]
    v = _pick(rng, vals)
    struct.pack_into(fmt, b, off, v)
    return f"BMP {name} {old} -> {v}", b


def t_entry(rng, b):
    e, entries = tiff_entries(b)
    tag, typ, count, at = entries[int(rng.integers(0, len(entries)))]
    kind = int(rng.integers(0, 4))
    if kind == 0:
        v = _pick(rng, (0, 1, 2, 3, 5, 7, 8, 16, 255, 65535, 2 ** 31, 2 ** 32 - 1))
        if typ == 3 and count == 1:
            struct.pack_into(e + "H", b, at + 8, v & 0xFFFF)
        else:
            struct.pack_into(e + "I", b, at + 8, v)
        return f"TIFF tag {tag} value/offset -> {v}", b
    if kind == 1:
        v = _pick(rng, (0, 2, 1000, 2 ** 30, 2 ** 32 - 1))
        struct.pack_into(e + "I", b, at + 4, v)
        return f"TIFF tag {tag} count {count} -> {v}", b
    if kind == 2:
        v = _pick(rng, (0, 1, 2, 5, 7, 12, 13, 16, 65535))
        struct.pack_into(e + "H", b, at + 2, v)
        return f"TIFF tag {tag} type {typ} -> {v}", b
    ifd = struct.unpack_from(e + "I", b, 4)[0]
    del b[at:at + 12]
    struct.pack_into(e + "H", b, ifd, len(entries) - 1)
    return f"TIFF tag {tag} removed", b


_TIFF_TAGS = {256: "width", 257: "length", 258: "bits per sample", 259: "compression",
              262: "photometric", 277: "samples per pixel", 278: "rows per strip",
              284: "planar configuration", 273: "strip offsets", 279: "strip byte counts"}


def t_key_tag(rng, b):
    e, entries = tiff_entries(b)
    cands = [x for x in entries if x[0] in _TIFF_TAGS and x[2] == 1]
    if not cands:
        return None
    tag, typ, _, at = cands[int(rng.integers(0, len(cands)))]
    vals = {259: (2, 3, 4, 5, 6, 7, 8, 32773, 32946, 34712, 34887, 50000, 65535),
            262: (0, 1, 3, 4, 5, 6, 8, 32844, 65535),
            258: (0, 1, 2, 4, 12, 16, 32, 64),
            277: (0, 2, 4, 5, 64, 65535)}.get(tag, (0, 1, 2, 3, 64, 4095, 65535, 2 ** 31))
    v = _pick(rng, vals)
    if typ == 3:
        struct.pack_into(e + "H", b, at + 8, v & 0xFFFF)
    else:
        struct.pack_into(e + "I", b, at + 8, v)
    return f"TIFF {_TIFF_TAGS[tag]} -> {v}", b


def t_ifd(rng, b):
    e = "<" if b[:2] == b"II" else ">"
    kind = int(rng.integers(0, 3))
    if kind == 0:
        v = _pick(rng, (0, 1, 7, len(b), len(b) - 2, 2 ** 32 - 1))
        struct.pack_into(e + "I", b, 4, v)
        return f"TIFF first IFD offset -> {v}", b
    ifd = struct.unpack_from(e + "I", b, 4)[0]
    if kind == 1:
        v = _pick(rng, (0, 1, 255, 65535))
        struct.pack_into(e + "H", b, ifd, v)
        return f"TIFF IFD entry count -> {v}", b
    n = struct.unpack_from(e + "H", b, ifd)[0]
    struct.pack_into(e + "I", b, ifd + 2 + 12 * n, ifd)
    return "TIFF next-IFD offset points back at the first IFD (a loop)", b


def w_riff(rng, b):
    kind = int(rng.integers(0, 3))
    if kind == 0:
        v = _pick(rng, (0, 4, len(b), len(b) + 100, 2 ** 32 - 1))
        struct.pack_into("<I", b, 4, v)
        return f"RIFF size -> {v}", b
    chunks = riff_chunks(b)
    t, at, size = chunks[int(rng.integers(0, len(chunks)))]
    if kind == 1:
        v = _pick(rng, (0, 1, max(0, size - 1), size + 1, 2 ** 31, 2 ** 32 - 1))
        struct.pack_into("<I", b, at + 4, v)
        return f"{t.decode('latin-1')} chunk size {size} -> {v}", b
    v = _pick(rng, (b"VP8 ", b"VP8L", b"VP8X", b"ALPH", b"XXXX"))
    b[at:at + 4] = v
    return f"{t.decode('latin-1')} chunk renamed {v.decode()}", b


def w_frame(rng, b):
    t, at, _ = riff_chunks(b)[0]
    d = at + 8
    if t == b"VP8 ":
        w, h = struct.unpack_from("<HH", b, d + 6)
        vals = (0, 1, 16383, 0xFFFF, w + 1, h + 1)
        nw, nh = _pick(rng, vals), _pick(rng, vals)
        struct.pack_into("<HH", b, d + 6, nw, nh)
        return f"VP8 frame size fields {w:#x}x{h:#x} -> {nw:#x}x{nh:#x}", b
    if t == b"VP8L":
        bits = struct.unpack_from("<I", b, d + 1)[0]
        nb = bits ^ int(rng.integers(1, 2 ** 28))
        struct.pack_into("<I", b, d + 1, nb)
        return f"VP8L header bits {bits:#x} -> {nb:#x}", b
    return None


FORMAT_MUTATORS = {
    "jpeg": (j_sof_size, j_sof_fields, j_dht, j_dqt, j_sos, j_length, j_remove,
             j_marker_in_data),
    "png": (p_ihdr, p_crc, p_remove, p_idat_bits, p_length, p_plte),
    "bmp": (b_header,),
    "tiff": (t_entry, t_key_tag, t_ifd),
    "webp": (w_riff, w_frame),
    "gif": (),
}


def mutate(rng, family: str, data: bytes):
    """One damaged copy of ``data``: ``(mutator name, description, bytes)``; a format's own
    mutators are drawn twice as often as the generic ones."""
    muts = GENERIC + FORMAT_MUTATORS[family] * 2
    for _ in range(20):
        m = muts[int(rng.integers(0, len(muts)))]
        try:
            got = m(rng, bytearray(data))
        except (struct.error, IndexError, ValueError):
            got = None                  # does not apply to this file
        if got is not None and got[1]:
            return m.__name__, got[0], bytes(got[1])
    return "m_truncate", "truncated to 1 byte", data[:1]


def make_cases(seed: int, per_file: int) -> list:
    """The fuzz cases: ``[(id, family, base, mutator, description, bytes)]``, reproducible
    from ``seed``."""
    rng = np.random.default_rng(seed)
    cases = []
    for fam, desc, data in special_cases(rng):
        cases.append((len(cases), fam, "-", "special", desc, data))
    for base, data in base_files().items():
        fam = base.split("_")[0]
        cases.append((len(cases), fam, base, "none", "unchanged", data))
        for _ in range(per_file):
            name, desc, mutated = mutate(rng, fam, data)
            cases.append((len(cases), fam, base, name, desc, mutated))
    return cases


# ------------------------------------------------------------------ the worker side
_PROBLEM_WORDS = ("truncated", "corrupt", "unsupported", "not a recognised", "empty input",
                  "limit", "damaged")


def _message_problems(exc, sample) -> list:
    """What is wrong with a raised exception (not a clear DecodeError)."""
    from runtime.codecs import DecodeError
    msg = str(exc)
    if type(exc) is not DecodeError:
        return [f"raised {type(exc).__name__} (not DecodeError): {msg[:300]}"]
    out = []
    if not msg.startswith(f"{sample}: "):
        out.append(f"message does not start with the sample's name: {msg[:200]!r}")
    body = msg[len(sample) + 2:]
    if not any(w in body for w in _PROBLEM_WORDS):
        out.append(f"message does not name the problem: {msg[:200]!r}")
    if "object at 0x" in body or len(body) < 20:
        out.append(f"message is not one a user can act on: {msg[:200]!r}")
    return out


def _pillow_rgb(data: bytes):
    """Pillow's decode of ``data`` as ndd's RGB output: an array, or Pillow's exception.

    16-bit gray is scaled as ndd documents (``round(v / 257)``, computed here from Pillow's
    16-bit samples); everything else is Pillow's own RGB conversion.  An EXIF block Pillow
    cannot read is ignored (orientation 1), as ndd documents (Pillow would raise)."""
    from PIL import Image, ImageOps
    try:
        img = Image.open(io.BytesIO(data))
        img.load()
        try:
            img = ImageOps.exif_transpose(img)
        except Exception:  # noqa: BLE001 - a damaged EXIF block: as stored
            pass
        if img.mode.startswith("I;16"):
            v = np.asarray(img).astype(np.float64)
            return np.repeat(np.floor(v / 257 + 0.5).astype(np.uint8)[..., None], 3, axis=2)
        return np.asarray(img.convert("RGB"))
    except Exception as exc:  # noqa: BLE001 - the verdict
        return exc


def judge(case) -> dict:
    """Decode one case every way ndd can and compare with Pillow; the problems found."""
    from runtime.codecs import DecodeError, decode, peek_shape
    cid, fam, base, mut, desc, data = case
    sample = f"case {cid}"
    problems, note = [], None
    buf = np.frombuffer(data, np.uint8)
    try:
        out = decode(buf, sample=sample)
    except Exception as exc:  # noqa: BLE001
        out = None
        problems += _message_problems(exc, sample)
    if out is not None:
        if out.dtype != np.uint8 or out.ndim != 3 or out.shape[2] != 3 or \
                not out.flags.c_contiguous:
            problems.append(f"RGB decode gave {out.dtype} {out.shape}")
        ref = _pillow_rgb(data)
        if isinstance(ref, BaseException):
            problems.append(f"decoded pixels where Pillow raises "
                            f"{type(ref).__name__}: {str(ref)[:200]}")
        elif ref.shape != out.shape:
            problems.append(f"decoded shape {out.shape}, Pillow {ref.shape}")
        elif not np.array_equal(ref, out):
            if fam in ("tiff", "bmp"):
                note = "differs from Pillow (a header that contradicts the data)"
            else:
                diff = np.abs(ref.astype(int) - out).max()
                problems.append(f"pixels differ from Pillow's (max difference {diff})")
    try:
        shape = peek_shape(buf, sample=sample)
        if out is not None and tuple(shape) != out.shape:
            problems.append(f"peek_shape {shape} but decode {out.shape}")
    except Exception as exc:  # noqa: BLE001
        problems += _message_problems(exc, sample)
        if out is not None:
            problems.append("peek_shape raised for a stream decode decodes")
    if out is not None and min(out.shape[:2]) >= 4:
        h, w = out.shape[:2]
        roi = (h // 4, w // 3, h // 4 + h // 2, w // 3 + w // 2)
        try:
            part = decode(buf, roi=roi, sample=sample)
            if not np.array_equal(part, out[roi[0]:roi[2], roi[1]:roi[3]]):
                problems.append(f"region {roi} differs from the crop of the full decode")
        except Exception as exc:  # noqa: BLE001
            problems.append(f"region decode raised {type(exc).__name__}: {str(exc)[:200]}")
    for output_type in ("ANY_DATA", "GRAY"):
        try:
            other = decode(buf, output_type=output_type, sample=sample)
            if other.ndim != 3 or not 1 <= other.shape[2] <= 4 or \
                    (out is not None and other.shape[:2] != out.shape[:2]):
                problems.append(f"{output_type} decode gave shape {other.shape}")
        except DecodeError as exc:
            problems += _message_problems(exc, sample)
        except Exception as exc:  # noqa: BLE001
            problems += _message_problems(exc, sample)
    return {"id": cid, "problems": problems, "note": note,
            "outcome": "pixels" if out is not None else "DecodeError"}


def _warm_up():
    """Load the codecs (nvImageCodec, Pillow's plug-ins) before the first case is measured."""
    from PIL import Image
    from runtime.codecs import decode
    exif = Image.Exif()
    exif[0x0112] = 6                    # the rotated JPEG route loads torch
    for fmt in ("JPEG", "PNG", "BMP", "TIFF", "WEBP", "GIF"):
        buf = io.BytesIO()
        Image.new("RGB", (8, 8), (10, 20, 30)).save(buf, fmt, exif=exif.tobytes())
        decode(buf.getvalue())
        Image.open(io.BytesIO(buf.getvalue())).load()


def _peak_rss_mb() -> float:
    """This process's peak RSS in MB (``VmHWM``; ``getrusage``'s ``ru_maxrss`` would start at
    the size of the parent that forked it), or ``ru_maxrss`` where /proc is missing."""
    try:
        with open("/proc/self/status") as f:
            return next(int(x.split()[1]) for x in f if x.startswith("VmHWM")) / 1024
    except (OSError, StopIteration):
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _reset_peak_rss() -> float:
    """Reset the peak RSS to the current RSS where Linux allows it; the peak now, in MB."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    return _peak_rss_mb()


def _worker(cases_path: str, timeout_s: str) -> None:
    """Worker entry point: judge the cases in ``cases_path``, one JSON line each on stdout
    (a "start" line before each case, so the parent knows which case a crash or hang hit);
    a case running longer than ``timeout_s`` seconds ends the process (``faulthandler``
    prints where it was)."""
    import faulthandler
    import signal
    import warnings
    faulthandler.enable()                       # a native crash prints the Python stack
    warnings.simplefilter("ignore")             # Pillow's warnings about damaged files
    from runtime.codecs import set_max_image_pixels
    set_max_image_pixels(WORKER_MAX_PIXELS)
    _warm_up()
    with open(cases_path, "rb") as f:
        cases = pickle.load(f)
    hook = os.environ.get("NDD_FUZZ_SELFTEST")
    for case in cases:
        print(json.dumps({"start": case[0]}), flush=True)
        faulthandler.dump_traceback_later(float(timeout_s), exit=True)
        before = _reset_peak_rss()
        if hook and case[4] == "self-test: crash":
            os.kill(os.getpid(), signal.SIGSEGV)    # what a segfault inside a codec does
        if hook and case[4] == "self-test: hang":
            import time
            time.sleep(3600)
        res = judge(case)
        faulthandler.cancel_dump_traceback_later()
        grown = _peak_rss_mb() - before
        if grown > CASE_RSS_MB:
            res["problems"].append(f"peak memory grew by {grown:.0f} MB in this case "
                                   f"(limit {CASE_RSS_MB} MB)")
        print(json.dumps(res), flush=True)


# ------------------------------------------------------------------ the parent side
def _run_chunk(cases, tmp_path, tag, env=None, case_timeout_s=CASE_TIMEOUT_S):
    """Judge ``cases`` in worker subprocesses, restarting after a crash or a hang; returns
    ``(results by id, [failures of cases that crashed or hung])``."""
    path = tmp_path / f"cases-{tag}.pkl"
    results, failures = {}, []
    todo = list(cases)
    by_id = {c[0]: c for c in cases}
    while todo:
        with open(path, "wb") as f:
            pickle.dump(todo, f)
        code = ("import runpy, sys; "
                "runpy.run_path(sys.argv[1])['_worker'](sys.argv[2], sys.argv[3])")
        proc = subprocess.Popen([sys.executable, "-c", code, __file__, str(path),
                                 str(case_timeout_s)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
        started = None
        try:        # a backstop only: the worker stops itself after case_timeout_s
            out, err = proc.communicate(timeout=case_timeout_s * (len(todo) + 2) + 120)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        for line in out.splitlines():
            rec = json.loads(line)
            if "start" in rec:
                started = rec["start"]
            else:
                results[rec["id"]] = rec
                started = None
        if started is None and proc.returncode == 0:
            break
        if started is None:
            raise AssertionError(f"fuzz worker failed outside a case (exit code "
                                 f"{proc.returncode}):\n{err[-3000:]}")
        c = by_id[started]
        how = ("hung (stopped after the per-case time limit)" if "Timeout (" in err
               else f"crashed the process (exit code {proc.returncode})")
        failures.append(f"case {c[0]} [{c[2]}: {c[4]}]: {how}\n{err[-1500:]}")
        todo = todo[[x[0] for x in todo].index(started) + 1:]
    return results, failures


def run_fuzz(cases, tmp_path, workers=2, env=None):
    """Run all cases, ``workers`` subprocesses at a time; returns ``(results, failures)``."""
    from concurrent.futures import ThreadPoolExecutor
    chunks = [cases[k::workers] for k in range(workers)]
    with ThreadPoolExecutor(workers) as pool:
        parts = list(pool.map(lambda kc: _run_chunk(kc[1], tmp_path, kc[0], env),
                              enumerate(chunks)))
    results, failures = {}, []
    for r, f in parts:
        results.update(r)
        failures += f
    by_id = {c[0]: c for c in cases}
    for rid, rec in sorted(results.items()):
        c = by_id[rid]
        for p in rec["problems"]:
            failures.append(f"case {rid} [{c[2]}: {c[3]}: {c[4]}]: {p}")
    return results, failures


def _report(cases, results, failures):
    outcomes = {}
    for rec in results.values():
        outcomes[rec["outcome"]] = outcomes.get(rec["outcome"], 0) + 1
    assert not failures, (f"{len(failures)} problem(s) in {len(cases)} fuzz cases:\n"
                          + "\n".join(failures[:40]))
    assert len(results) == len(cases)
    return outcomes


def _workers():
    return max(1, min(2, os.cpu_count() or 1))


def test_fuzz_corrupt_files(tmp_path):
    """A few hundred damaged files: each decodes exactly as Pillow does or raises a clear
    DecodeError (seeded, reproducible: ``make_cases(2024, 20)``)."""
    pytest.importorskip("skimage")
    cases = make_cases(seed=2024, per_file=20)
    assert len(cases) > 400
    results, failures = run_fuzz(cases, tmp_path, _workers())
    outcomes = _report(cases, results, failures)
    # the damage is varied: some cases still decode, most raise
    assert outcomes.get("pixels", 0) >= 30 and outcomes.get("DecodeError", 0) >= 150


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fuzz_corrupt_files_many(tmp_path, seed):
    """Thousands of damaged files (``pytest -m slow``)."""
    pytest.importorskip("skimage")
    cases = make_cases(seed=seed, per_file=300)
    results, failures = run_fuzz(cases, tmp_path, _workers())
    _report(cases, results, failures)


def test_the_harness_reports_crashes_and_hangs(tmp_path):
    """A case that kills its worker with SIGSEGV, or hangs, fails that case (named, with the
    worker's stderr) and the cases after it still run in a new worker."""
    good = base_files()["png_rgb"]
    cases = [(0, "png", "png_rgb", "none", "unchanged", good),
             (1, "other", "-", "special", "self-test: crash", b""),
             (2, "png", "png_rgb", "none", "unchanged", good),
             (3, "other", "-", "special", "self-test: hang", b""),
             (4, "png", "png_rgb", "none", "unchanged", good)]
    env = dict(os.environ, NDD_FUZZ_SELFTEST="1")
    results, failures = _run_chunk(cases, tmp_path, "self", env=env, case_timeout_s=2)
    assert sorted(results) == [0, 2, 4]
    assert all(not r["problems"] for r in results.values())
    assert len(failures) == 2
    assert failures[0].startswith("case 1 ") and "crashed the process (exit code -11)" in failures[0]
    assert failures[1].startswith("case 3 ") and "hung" in failures[1]
