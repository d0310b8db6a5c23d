"""The kernel floor (runtime/kernels/cpu/fused_stages.py kernel_tape / run_tape,
runtime/kernels/cpu/fused_floor.py, ndd/tools/bench_floor.py): the tape replays exactly the
kernel calls of the fused chain, so it computes the same pixels as the pipeline."""
from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

import ndd
from ndd.tools.bench_pipelines import train, val
from runtime.kernels.cpu import fused as fused_kernel
from runtime.kernels.cpu import fused_floor
from runtime.kernels.cpu.fused_stages import kernel_tape, run_chunk, run_tape
from runtime.kernels.registry import KernelContext
from runtime.storage import SampleList


def _photos(n=5):
    rng = np.random.default_rng(7)
    out = []
    for i in range(n):
        h, w = 40 + 9 * i, 56 - 5 * i
        base = rng.integers(0, 255, (h // 4 + 1, w // 4 + 1, 3), dtype=np.uint8)
        img = np.kron(base, np.ones((4, 4, 1), np.uint8))[:h, :w]     # some structure
        buf = io.BytesIO()
        if i == 3:              # not a JPEG: the tape keeps the generic decode call
            Image.fromarray(img).save(buf, format="PNG")
        else:
            Image.fromarray(img).save(buf, format="JPEG", quality=80 + i)
        out.append(np.frombuffer(buf.getvalue(), np.uint8))
    return out


def _recorded(fn, files, **kw):
    """The fused.image calls of a compile-mode run of ``fn`` over ``files`` (as kernels see
    them), and the pipeline's outputs."""
    calls, outs = [], []
    fused_kernel.set_recorder(lambda ctx, inputs, args: calls.append((ctx, inputs, args)))
    try:
        for _ in range(2):          # the first batch of a loop may trace
            calls.clear()
            batch = ndd.as_batch(files)
            outs = [np.asarray(t) for t in fn(ndd, batch, **kw).evaluate()]
    finally:
        fused_kernel.set_recorder(None)
    return calls, outs


@pytest.mark.parametrize("pipeline", ["train", "val"])
def test_the_tape_computes_what_the_chain_computes(pipeline):
    files = _photos()
    fn, kw = (train, {"rng": ndd.random.RNG(seed=3)}) if pipeline == "train" else (val, {})
    with ndd.EvalMode.deferred:
        calls, _ = _recorded(fn, files, **kw)
    assert calls, "the pipeline compiled to no fused.image node"
    for ctx, inputs, args in calls:
        n = ctx.batch_size
        ctx = KernelContext(None, ctx.in_metas, ctx.out_metas, ctx.tensor_arg_names, n, ctx.op)
        want = run_chunk(ctx, inputs, args, range(n))
        tape = kernel_tape(ctx, inputs, args, range(n))
        assert len(tape) == n
        out = np.full((n,) + want[0].shape, np.nan, np.float32)
        run_tape(tape, out)
        for i in range(n):
            np.testing.assert_array_equal(out[i], want[i])
        # a plain JPEG is decoded by the codec call itself, the PNG by the generic decode
        kinds = [entry[0][0].__name__ for entry in tape]
        assert kinds.count("decode") == 1 and kinds[3] == "decode"


def test_a_chain_without_a_planned_decode_is_refused():
    files = _photos(2)
    calls = []
    fused_kernel.set_recorder(lambda ctx, inputs, args: calls.append((ctx, inputs, args)))
    try:
        with ndd.EvalMode.deferred:
            for _ in range(2):
                img = ndd.decoders.image(ndd.as_batch(files))
                ndd.resize(img, size=(8, 8)).evaluate()
    finally:
        fused_kernel.set_recorder(None)
    assert calls
    for ctx, inputs, args in calls:
        with pytest.raises(ValueError, match="no planned decode"):
            kernel_tape(ctx, inputs, args, range(ctx.batch_size))


def test_worker_side_epochs_share_the_samples_out(tmp_path):
    """load + epoch as the floor's workers run them (here in this process): every epoch
    runs each sample of the tape exactly once, in chunks claimed from the counter."""
    files = _photos()
    with ndd.EvalMode.deferred:
        calls, _ = _recorded(train, files, rng=ndd.random.RNG(seed=5))
    sent = [((c.in_metas, c.out_metas, set(c.tensor_arg_names), c.batch_size, c.op),
             [bytes(memoryview(x)) for x in inp[0]], None, a) for c, inp, a in calls]
    assert fused_floor.load(sent, "float32") == sum(c[0][3] for c in sent)
    counter = str(tmp_path / "counter")
    for _ in range(2):
        fused_floor.reset_counter(counter)
        done, cpu = fused_floor.epoch(counter)
        assert done == len(files) and cpu >= 0
        assert int.from_bytes(open(counter, "rb").read(), "little") >= len(files)
