"""runtime/kernels/cpu/inflate.py: LZ4 blocks and raw deflate streams, single and chunked
samples, against the data compressed with the lz4 / zlib libraries."""
import zlib

import lz4.block
import numpy as np
import pytest

from runtime.kernels.cpu.inflate import chunk_ranges, inflate_chunk, inflate_sample


def _lz4(b: bytes) -> bytes:
    return lz4.block.compress(b, store_size=False)


def _deflate(b: bytes) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(b) + c.flush()


COMPRESS = {"LZ4": _lz4, "DEFLATE": _deflate}


@pytest.mark.parametrize("algo", ["LZ4", "DEFLATE"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64, np.uint64])
def test_single_chunk_roundtrip(algo, dtype):
    rng = np.random.default_rng(1)
    ref = (rng.integers(0, 50, size=(7, 5, 3)) * 3).astype(dtype)
    data = np.frombuffer(COMPRESS[algo](ref.tobytes()), np.uint8)
    out = inflate_sample(data, (7, 5, 3), dtype, algo)
    assert out.dtype == dtype and out.shape == (7, 5, 3)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("how", ["offsets", "sizes", "both"])
def test_chunks_stack_on_a_new_outer_axis(how):
    frames = [np.full((4, 6), k, np.int32) + np.arange(24, dtype=np.int32).reshape(4, 6)
              for k in range(5)]
    parts = [_lz4(f.tobytes()) for f in frames]
    gap = b"\xff\xff"       # junk between chunks: only offsets+sizes can skip it
    blob = (gap if how == "both" else b"").join(parts)
    sizes = [len(p) for p in parts]
    step = len(gap) if how == "both" else 0
    offsets = np.concatenate([[0], np.cumsum([s + step for s in sizes])[:-1]]).tolist()
    kw = {"offsets": offsets if how != "sizes" else None,
          "sizes": sizes if how != "offsets" else None}
    out = inflate_sample(np.frombuffer(blob, np.uint8), (4, 6), np.int32, "LZ4", **kw)
    assert out.shape == (5, 4, 6)
    np.testing.assert_array_equal(out, np.stack(frames))


def test_chunk_ranges_rules():
    assert chunk_ranges(10, offsets=[0, 4]) == [(0, 4), (4, 10)]
    assert chunk_ranges(10, sizes=[3, 3]) == [(0, 3), (3, 6)]
    assert chunk_ranges(10, offsets=[1, 6], sizes=[2, 4]) == [(1, 3), (6, 10)]
    assert chunk_ranges(10, offsets=[]) == []
    with pytest.raises(ValueError, match="same length"):
        chunk_ranges(10, offsets=[0], sizes=[1, 2])
    with pytest.raises(ValueError, match="outside the sample"):
        chunk_ranges(10, sizes=[6, 6])


def test_errors():
    good = _lz4(bytes(range(100)))
    with pytest.raises(ValueError, match="more than the 50 bytes"):
        inflate_chunk(np.frombuffer(good, np.uint8), 50)        # too small a shape
    with pytest.raises(ValueError, match="inflates to 100 bytes"):
        inflate_chunk(np.frombuffer(good, np.uint8), 120)       # too big a shape
    with pytest.raises(ValueError, match="corrupt LZ4"):
        inflate_chunk(np.frombuffer(b"\xf0" + good[1:40], np.uint8), 100)
    with pytest.raises(ValueError, match="DEFLATE"):
        inflate_chunk(np.frombuffer(b"\xff\xfe garbage", np.uint8), 10, "DEFLATE")
    with pytest.raises(ValueError, match="truncated"):
        inflate_chunk(np.frombuffer(_deflate(bytes(1000))[:-3], np.uint8), 1000, "deflate")
