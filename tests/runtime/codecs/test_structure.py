"""The JPEG structure walk (runtime/codecs/structure.py): hand-built streams with known answers.

Each stream is assembled here byte by byte, so the expected verdict (and the byte position the
message names) follows from how the stream was built, not from the walk's own output.
"""
import io
import struct

import numpy as np
import pytest
from PIL import Image

from runtime.codecs.structure import jpeg_structure_problem


def _jpeg(progressive=False, **kw) -> bytes:
    rng = np.random.default_rng(3)
    img = Image.fromarray(rng.integers(0, 256, (24, 32, 3), dtype=np.uint8))
    out = io.BytesIO()
    img.save(out, "JPEG", quality=90, progressive=progressive, **kw)
    return out.getvalue()


def _segment(marker: int, payload: bytes) -> bytes:
    return bytes([0xFF, marker]) + struct.pack(">H", len(payload) + 2) + payload


def _scan_data_start(data: bytes) -> int:
    """Byte just after the (first) SOS segment, found by walking the segment lengths."""
    pos = 2
    while True:
        assert data[pos] == 0xFF
        marker = data[pos + 1]
        length = (data[pos + 2] << 8) | data[pos + 3]
        pos += 2 + length
        if marker == 0xDA:
            return pos


def _check(data: bytes):
    return jpeg_structure_problem(np.frombuffer(data, np.uint8))


@pytest.mark.parametrize("progressive", [False, True])
def test_sound_streams(progressive):
    assert _check(_jpeg(progressive)) is None


def test_markers_inside_a_header_payload_are_skipped():
    # an APP1 segment whose payload holds an end-of-image and a start-of-frame marker (as an
    # EXIF thumbnail does) is not read as markers
    data = _jpeg()
    app = _segment(0xE1, b"Exif\x00\x00" + b"\xff\xd8\xff\xc0\x00\x11\xff\xd9" * 8)
    assert _check(data[:2] + app + data[2:]) is None


def test_fill_bytes_before_a_marker():
    data = _jpeg()
    start = _scan_data_start(data)
    sos = data.rfind(b"\xff\xda", 0, start)
    assert _check(data[:sos] + b"\xff\xff\xff" + data[sos:]) is None


def test_unexpected_marker_in_the_image_data_names_its_byte():
    data = _jpeg()
    at = _scan_data_start(data) + 5
    bad = data[:at] + b"\xff\x81" + data[at:]
    assert _check(bad) == f"unexpected marker 0xFF81, inside the image data at byte {at}"


def test_restart_and_stuffing_are_not_markers():
    data = _jpeg()
    at = _scan_data_start(data) + 3
    for pair in (b"\xff\x00", b"\xff\xd3"):
        assert _check(data[:at] + pair + data[at:]) is None


def test_truncated_and_damaged_streams():
    data = _jpeg()
    start = _scan_data_start(data)
    assert _check(data[:start + 10]) == "no end-of-image marker (truncated)"
    # a sequential stream cut after its one scan began: every component has its scan
    assert _check(data[:start + 4] + b"\xff\xd9") is None
    # a progressive one: its first scan codes no coefficient to its last bit
    prog = _jpeg(progressive=True)
    first = _scan_data_start(prog)
    assert _check(prog[:first + 4] + b"\xff\xd9") == (
        f"an end-of-image marker at byte {first + 4} before the scans of coefficients of "
        f"component 1, 2, 3 (an incomplete or truncated file)")
    # a segment whose length runs past the end
    cut = data[:2] + b"\xff\xe0\x40\x00" + data[6:40]
    assert _check(cut) == ("marker 0xFFE0 at byte 2 declares a 16384-byte segment, past the "
                           "end of the stream (truncated or corrupt)")
    # a marker in the last three bytes: its length cannot be read
    assert _check(data[:start] + b"\xff\xc4\x00") == (
        f"marker 0xFFC4 at byte {start} cut off by the end of the stream (truncated)")
    assert _check(data[:2] + b"\xff\xd8" + data[2:]) == "a second start-of-image marker at byte 2"
    assert _check(b"\xff\xd8\xff\xd9") == ("an end-of-image marker at byte 2, before any image "
                                          "data")
    assert _check(b"\xff\xd8") == "no image data"


def test_bad_restart_interval_after_the_first_scan():
    data = _jpeg()
    at = _scan_data_start(data) + 7
    dri = _segment(0xDD, b"\x00\x01\x00")          # DRI must be 4 bytes long, this one is 5
    assert _check(data[:at] + dri + data[at:]) == (
        f"a restart interval (DRI) of 5 bytes at byte {at}")
