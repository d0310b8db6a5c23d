"""``structure.jpeg_walk``: the structure verdict and the EXIF orientation in one walk.

The orientation it reports must be what ``exif.read_orientation`` (its own, independent walk)
returns, or None (then the caller asks ``read_orientation``); checked on hand-built streams
whose orientation is known by construction, and on thousands of damaged copies of them.
"""
import io
import struct

import numpy as np
import pytest
from PIL import Image

from runtime.codecs.exif import read_orientation
from runtime.codecs.structure import jpeg_structure_problem, jpeg_walk


def _segment(marker: int, payload: bytes) -> bytes:
    return bytes([0xFF, marker]) + struct.pack(">H", len(payload) + 2) + payload


def _tiff(orientation=None, big_endian=False, extra_tags=()) -> bytes:
    """A TIFF/EXIF block with IFD0 holding the given tags (and the orientation)."""
    end = ">" if big_endian else "<"
    tags = sorted(list(extra_tags) + ([(0x0112, 3, 1, orientation)] if orientation else []))
    out = (b"MM\x00*" if big_endian else b"II*\x00") + struct.pack(end + "I", 8)
    out += struct.pack(end + "H", len(tags))
    for tag, typ, count, value in tags:
        val = struct.pack(end + "HH", value, 0) if typ == 3 else struct.pack(end + "I", value)
        out += struct.pack(end + "HHI", tag, typ, count) + val
    return out + struct.pack(end + "I", 0)


def _exif(orientation=None, **kw) -> bytes:
    return _segment(0xE1, b"Exif\x00\x00" + _tiff(orientation, **kw))


def _base(progressive=False) -> bytes:
    rng = np.random.default_rng(5)
    img = Image.fromarray(rng.integers(0, 256, (40, 56, 3), dtype=np.uint8))
    out = io.BytesIO()
    img.save(out, "JPEG", quality=90, progressive=progressive)
    return out.getvalue()


def _with(prefix_segments: bytes, progressive=False) -> bytes:
    data = _base(progressive)
    return data[:2] + prefix_segments + data[2:]


def _walk(data: bytes):
    return jpeg_walk(np.frombuffer(data, np.uint8))


# (segments after SOI, the orientation by construction)
CASES = [
    (b"", 1),
    (_exif(6), 6),
    (_exif(3, big_endian=True), 3),
    (_exif(None), 1),                                    # an Exif block without the tag
    (_exif(None) + _exif(8), 8),                         # the tag from a later Exif APP1
    (_exif(5) + _exif(2), 5),                            # the first one having it
    (_segment(0xE1, b"http://ns.adobe.com/xap/1.0/\x00<x/>") + _exif(7), 7),   # XMP first
    (_exif(9), 1),                                       # out of range
    (_segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00") + _exif(4), 4),
]


@pytest.mark.parametrize("progressive", [False, True])
@pytest.mark.parametrize("segments,orientation", CASES)
def test_orientation_of_sound_streams(segments, orientation, progressive):
    data = _with(segments, progressive)
    assert read_orientation(memoryview(data), "jpeg") == orientation     # the reference
    assert _walk(data) == (None, orientation)


def test_walks_that_may_differ_give_none_or_the_reference():
    # fill bytes, a 0xFF01 marker, garbage between segments: read_orientation's walk and the
    # structure walk may take different segments, so the orientation is left to the former
    cases = [_exif(6)[:0] + b"\xff\xff" + _exif(6), b"\xff\x01" + _exif(6),
             b"\x00\x00" + _exif(6), _exif(None) + b"\x00" + _exif(3)]
    for seg in cases:
        data = _with(seg)
        problem, orientation = _walk(data)
        assert problem == jpeg_structure_problem(np.frombuffer(data, np.uint8))
        assert orientation is None or orientation == read_orientation(data, "jpeg")


def _damaged(rng, data: bytes) -> bytes:
    b = bytearray(data)
    kind = int(rng.integers(0, 5))
    head = min(len(b), 400)
    if kind == 0:                                        # bit flips in the header
        for _ in range(int(rng.integers(1, 4))):
            b[int(rng.integers(0, head))] ^= 1 << int(rng.integers(0, 8))
    elif kind == 1:                                      # a random byte
        b[int(rng.integers(0, len(b)))] = int(rng.integers(0, 256))
    elif kind == 2:                                      # bytes inserted / deleted
        at = int(rng.integers(2, head))
        if rng.integers(0, 2):
            b[at:at] = bytes(rng.integers(0, 256, int(rng.integers(1, 4)), dtype=np.uint8))
        else:
            del b[at:at + int(rng.integers(1, 4))]
    elif kind == 3:                                      # truncated
        del b[int(rng.integers(2, len(b))):]
    else:                                                # a marker byte pair in the header
        at = int(rng.integers(2, head - 1))
        b[at:at + 2] = bytes([0xFF, int(rng.choice([0x01, 0xD9, 0xDA, 0xE1, 0xFF, 0x00]))])
    return bytes(b)


def test_damaged_streams_agree_with_read_orientation():
    rng = np.random.default_rng(20)
    bases = [_with(seg, prog) for seg, _ in CASES for prog in (False, True)]
    decided = 0
    for k in range(6000):
        data = _damaged(rng, bases[k % len(bases)])
        buf = np.frombuffer(data, np.uint8)
        problem, orientation = jpeg_walk(buf)
        assert problem == jpeg_structure_problem(buf)
        if orientation is not None:
            decided += 1
            assert orientation == read_orientation(data, "jpeg"), (k, data[:64])
    assert decided > 3000           # most damaged files are still read in the one walk
