"""``benchmarks/gpu_check.py --dry-run`` runs every CPU-side part of the device check here: the
environment, the offline NVRTC compile, random kernel cases, the race, graph and interop checks
on the fake GPU, the decode step (CPU decode + copy), the throughput loops (the GPU variants
on the fake GPU); the device-only parts are skipped with a reason."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_dry_run_runs_the_cpu_side_parts(tmp_path):
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--dry-run",
                          "--out", str(tmp_path), "--cases", "12"], cwd=ROOT,
                         capture_output=True, text=True, timeout=900)
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert (tmp_path / "gpu_check.log").read_text().strip().endswith(".json"), res.stdout[-2000:]
    steps = {r["step"]: r for r in report["steps"]}
    assert list(steps) == ["environment", "compile", "kernels_exact", "decode", "race",
                           "graphs", "torch_interop", "throughput"]
    assert report["dry_run"] is True
    for name in ("environment", "race", "graphs", "torch_interop", "throughput"):
        assert steps[name]["status"] == "pass", (name, steps[name]["reason"], res.stdout[-3000:])
    assert steps["environment"]["details"]["api"] == "fake"
    assert steps["compile"]["status"] in ("pass", "skip")
    exact = steps["kernels_exact"]
    assert exact["details"]["cases"] == 12, exact        # ran every case (none crashed the run)
    assert exact["status"] == "pass" or exact["reason"].endswith("case(s) differ"), exact
    chains = exact["details"]["fused"]["chains"]        # one fused GPU node each, exact
    assert set(chains) == {"flip->cmn", "brightness_contrast->cmn", "hsv->cmn", "elementwise",
                           "rrc->cmn", "hsv->brightness_contrast->cmn"}
    assert all(c["exact"] and len(c["gpu_nodes"]) == 1 for c in chains.values()), chains
    decode = steps["decode"]            # the fake GPU: CPU decode + one H2D copy, exact
    assert decode["status"] == "pass", decode
    assert decode["details"]["backends"] == dict.fromkeys(
        ("default", "cuda", "image_crop", "image_random_crop", "image_slice"), "cpu+h2d")
    assert decode["details"]["default"]["images"] == 8 == decode["details"]["cuda"]["images"]
    for name in ("default", "cuda", "image_crop", "image_random_crop", "image_slice"):
        assert decode["details"][name]["max_abs"] == 0, name
    fused = decode["details"]["fused"]      # decode fused with what follows: one GPU node, exact
    assert set(fused) == {"decode->rrc->cmn", "decode->resize->cmn"}
    for name, c in fused.items():
        assert c["max_abs"] == 0 and len(c["gpu_nodes"]) == 1, (name, c)
        assert c["gpu_nodes"][0][0] == "fused.image" and c["gpu_nodes"][0][1][0] == "decode"
    assert steps["graphs"]["details"]["stats"]["replay"] >= 3
    assert steps["race"]["details"]["violations"] == []
    speeds = steps["throughput"]["details"]["img_s"]
    for pipe in ("train", "val"):
        for mode in ("eager", "deferred", "compile", "compile+graphs"):
            assert speeds[f"{pipe}/cpu/{mode}"] > 0
        for variant in ("gpu", "gpu-decode"):
            assert speeds[f"{pipe}/{variant}/compile+graphs"] > 0
        assert speeds[f"{pipe}/torchvision"].startswith("skipped")
    assert res.returncode == (1 if report["failed"] else 0)
