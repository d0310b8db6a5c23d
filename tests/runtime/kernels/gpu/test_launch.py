"""Launch geometry of the batch kernels: one grid per batch size (graph replays match), the
sample index on y, and the host build still runs several blocks (the striding is exercised)."""
from __future__ import annotations

import pytest

from runtime.kernels.gpu import hostbuild
from runtime.kernels.gpu.launch import BLOCK, MAX_SAMPLES, batch_grid


def test_the_grid_depends_on_the_batch_size_only():
    assert batch_grid(256, 10) == batch_grid(256, 10 ** 7)
    (gx, gy, gz), block = batch_grid(256, 5)
    assert gy == 256 and gz == 1 and block == (BLOCK, 1, 1) and gx >= 1
    assert batch_grid(1)[0][0] >= batch_grid(256)[0][0]


def test_too_many_samples_for_one_launch():
    with pytest.raises(ValueError, match="at most"):
        batch_grid(MAX_SAMPLES + 1)


def test_the_host_build_runs_several_blocks():
    assert hostbuild.HOST_MAX_BLOCKS_X >= 2
