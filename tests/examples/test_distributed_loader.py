"""examples/distributed_loader.py under ``torchrun --nproc_per_node 2`` (gloo, CPU): per epoch
the two ranks together read every sample once (plus DALI's padding), their batch counts are
equal, eager and compile mode and every reader (File, Caffe, Caffe2, TFRecord, Webdataset,
MXNet, Numpy: the same photos in each format) agree, and a restart from a
checkpoint taken mid-epoch resumes each rank where it was."""
import collections
import json
import os
import pathlib
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "distributed_loader.py"
N, WORLD, BATCH, EPOCHS, SAVE_AT = 9, 2, 2, 2, 4
READERS = ("file", "caffe", "caffe2", "tfrecord", "webdataset", "mxnet", "numpy")
RUNS = [f"{r}.{m}" for r in READERS for m in ("eager", "compile")]


def _launch(tmp_path, *extra):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc_per_node={WORLD}", str(EXAMPLE), "--data", str(tmp_path / "photos"),
           "--work", str(tmp_path / "work"), "--readers", ",".join(READERS), "--modes",
           "eager,compile", "--batch-size", str(BATCH), "--epochs", str(EPOCHS),
           "--checkpoint", str(tmp_path / "ckpt"), *extra]
    env = dict(os.environ, OMP_NUM_THREADS="1", NDD_PROCESS_LANES="0")
    proc = subprocess.run(cmd, cwd=EXAMPLE.parents[1], env=env, capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def _reports(prefix):
    return [json.loads(pathlib.Path(f"{prefix}.rank{r}.json").read_text())
            for r in range(WORLD)]


@pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                    reason="torch.distributed with gloo is needed")
def test_two_ranks_cover_every_sample_and_resume(tmp_path, photo_jpegs):
    (tmp_path / "photos").mkdir()
    for k in range(N):
        (tmp_path / "photos" / f"p{k}.jpg").write_bytes(photo_jpegs[k % 3])
    _launch(tmp_path, "--save-at", str(SAVE_AT), "--report", str(tmp_path / "full"))
    _launch(tmp_path, "--resume", "--report", str(tmp_path / "resumed"))
    full, resumed = _reports(tmp_path / "full"), _reports(tmp_path / "resumed")
    shard = -(-N // WORLD)                        # DALI pads every shard to ceil(N / world)
    per_rank_batches = -(-shard // BATCH)
    # DALI's shard boundaries: shard s holds samples [N*s//world, N*(s+1)//world)
    bounds = [range(N * s // WORLD, N * (s + 1) // WORLD) for s in range(WORLD)]
    for run in RUNS:
        for e in range(EPOCHS):
            per_rank = [full[r][run]["epochs"][str(e)] for r in range(WORLD)]
            assert full[0][run]["counts"][str(e)] == [per_rank_batches] * WORLD
            assert [len(b) for b in per_rank] == [per_rank_batches] * WORLD
            ids = [i for batches in per_rank for b in batches for i in b]
            assert len(ids) == WORLD * per_rank_batches * BATCH
            assert set(ids) == set(range(N))      # every sample; extra ones are padding
            for r in range(WORLD):
                mine = {i for b in per_rank[r] for i in b}
                # stick_to_shard=False: rank r reads shard (r + epoch) % world
                assert mine == set(bounds[(r + e) % WORLD])
                counts = collections.Counter(i for b in per_rank[r] for i in b)
                assert sum(counts.values()) - len(counts) == per_rank_batches * BATCH - \
                    len(bounds[(r + e) % WORLD])
        # the same samples in the same order whatever the reader and the mode
        for r in range(WORLD):
            assert full[r][run]["epochs"] == full[r][RUNS[0]]["epochs"]
            assert full[r][run]["weights_sum"] == full[r][RUNS[0]]["weights_sum"]
            assert full[r][run]["saved_at"] == SAVE_AT
            # the restart from the checkpoint of step SAVE_AT goes on with the next batch
            before = [b for e in range(EPOCHS) for b in full[r][run]["epochs"][str(e)]]
            after = [b for e in sorted(resumed[r][run]["epochs"])
                     for b in resumed[r][run]["epochs"][e]]
            assert after == before[SAVE_AT:]
            assert resumed[r][run]["steps"] == full[r][run]["steps"] == \
                EPOCHS * per_rank_batches
            assert resumed[r][run]["weights_sum"] == full[r][run]["weights_sum"]
    # the ranks trained one model (DDP): the same weights on both
    assert full[0][RUNS[0]]["weights_sum"] == full[1][RUNS[0]]["weights_sum"]
