"""runtime/kernels/cpu/fused_workers.py: how a fused batch is laid out for the worker processes
and handed out among them (the runs themselves: tests/runtime/workers/test_pool.py)."""
from __future__ import annotations

import numpy as np
import pytest


def test_cost_order_puts_the_largest_files_first():
    from runtime.kernels.cpu.fused_workers import cost_order
    data = [np.zeros(s, np.uint8) for s in (10, 5000, 300, 5000, 70)]
    assert cost_order(data, 5) == [1, 3, 2, 4, 0]
    assert cost_order(data[:1], 4) == [0, 1, 2, 3]       # one sample broadcast


def test_claims_hand_out_every_sample_once_in_shrinking_groups():
    from runtime.kernels.cpu.fused_workers import claim
    claims = np.zeros(32, np.uint8)
    order = list(range(31, -1, -1))
    sizes, seen = [], []
    while True:
        group = claim(claims, order, 2)
        if not group:
            break
        assert group == sorted(group)
        sizes.append(len(group))
        seen += group
    assert sorted(seen) == list(range(32))
    assert sizes[0] == 8 and sizes[-1] == 1 and sizes == sorted(sizes, reverse=True)
    assert seen[:8] == list(range(24, 32))                 # costliest (first in order) first
    claims[:] = 0
    claims[[31, 30, 5]] = 1                                # taken by another lane
    assert claim(claims, order, 2) == list(range(22, 30))   # skips what is taken
    assert claims[22:32].all() and claims[5] and not claims[:5].any()


def test_per_sample_arguments_travel_stacked_and_come_back_the_same():
    import pickle
    from runtime.kernels.cpu.fused_workers import Stacked, compact_args
    from runtime.kernels.registry import KernelContext, sample_args
    flips = [np.array(i % 2, np.int32) for i in range(5)]
    crops = [np.array([i, 2 * i], np.float32) for i in range(5)]
    ragged = [np.zeros(i + 1, np.float32) for i in range(5)]
    objs = [np.array(None, object)] * 5
    args = {"flip": flips, "crop": crops, "ragged": ragged, "objs": objs, "size": (4.0, 4.0)}
    names = {"flip", "crop", "ragged", "objs"}
    sent = compact_args(args, names)
    assert isinstance(sent["flip"], Stacked) and isinstance(sent["crop"], Stacked)
    assert sent["ragged"] is ragged and sent["objs"] is objs and sent["size"] == (4.0, 4.0)
    assert args["flip"] is flips                           # the caller's dict is not changed
    got = pickle.loads(pickle.dumps(sent, protocol=pickle.HIGHEST_PROTOCOL))
    back = {k: v.samples() if isinstance(v, Stacked) else v for k, v in got.items()}
    for k in ("flip", "crop"):
        assert [(x.shape, x.dtype) for x in back[k]] == [(x.shape, x.dtype) for x in args[k]]
    ctx = KernelContext(None, [], [], names, 5, "fused.image")
    for i in range(5):
        want, have = sample_args(ctx, args, i), sample_args(ctx, back, i)
        assert have["flip"] == want["flip"] == i % 2
        assert have["crop"] == want["crop"] == (float(i), float(2 * i))
    assert compact_args(args, set()) is args


def test_pack_inputs_lays_out_claims_then_the_files():
    from runtime.kernels.cpu.fused_workers import pack_inputs
    data = [np.arange(n, dtype=np.uint8) for n in (5, 0, 300)] + [b"abc"]
    packed = pack_inputs(data, 4)
    if packed is None:
        pytest.skip("no /dev/shm here")
    buf, name, offsets = packed
    assert buf.nbytes >= 1 << 20 and name
    assert not buf[:4].any() and offsets[0] >= 4 and len(offsets) == 5
    for k, x in enumerate(data):
        np.testing.assert_array_equal(buf[offsets[k]:offsets[k + 1]],
                                      np.frombuffer(bytes(x), np.uint8))
    assert pack_inputs([np.zeros((2, 2), np.uint8)], 1) is None     # not a 1-D byte buffer
