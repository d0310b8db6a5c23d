"""``ndd graph``: runs a small compile-mode script over a tiny temp image folder."""
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from ndd.tools import render
from ndd.tools.cli import main

SCRIPT = """
import sys
import ndd
reader = ndd.readers.File(file_root=sys.argv[1], random_shuffle=False)
print("script-started")
for epoch in range(1000):
    for jpegs, labels in reader.next_epoch(batch_size=2, compile=True):
        img = ndd.decoders.image(jpegs)
        out = ndd.crop_mirror_normalize(img, crop=(16, 16), mean=[1.0], std=[2.0])
        out.evaluate()
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("imgs")
    rng = np.random.default_rng(0)
    for i in range(6):
        d = root / "ab"[i % 2]
        d.mkdir(exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (20 + 2 * i, 24, 3), dtype=np.uint8)).save(
            d / f"{i}.jpg")
    script = root / "script.py"
    script.write_text(SCRIPT)
    return root, script


@pytest.fixture(scope="module")
def outdir(folder, tmp_path_factory):
    root, script = folder
    out = tmp_path_factory.mktemp("out")
    assert main(["graph", str(script), str(root), "--iterations", "4", "--out", str(out)]) == 0
    return out


def test_graph_writes_all_artifacts(outdir):
    for name in ("graph.txt", "graph.svg", "graph.png", "timeline.png", "trace.json",
                 "report.html"):
        assert (outdir / name).stat().st_size > 0, name
    assert (outdir / "graph.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (outdir / "timeline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in (outdir / "graph.svg").read_text()


def test_graph_text_has_explain_sections_fusion_and_times(outdir):
    text = (outdir / "graph.txt").read_text()
    for section in ("== recorded ==", "== compiled", "== passes ==", "== node times =="):
        assert section in text
    assert "decoders.image" in text and "crop_mirror_normalize" in text
    assert "[fuse] applied" in text or "[fuse] refused" in text
    # one timing row per executed (op, call site) with median <= p90
    rows = [ln.split() for ln in text.split("== node times ==")[1].splitlines()[2:] if ln]
    assert rows and all(float(r[-2]) <= float(r[-1]) for r in rows)


def test_iterations_stop_the_script(outdir):
    trace = json.loads((outdir / "trace.json").read_text())
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    # 4 batches delivered: 1 traced eagerly (2 ops) and 3 replayed plans (1 fused op or 2 ops);
    # with an endless loop (1000 epochs) nothing but --iterations could have stopped it
    assert 2 + 3 <= len(spans) <= 2 + 3 * 2 + 2 * 2   # + up to 2 prefetched batches
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in spans)
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M"}
    assert any("lane 0" in n for n in names)


def test_shapes_from_the_run_appear_in_the_labels(outdir):
    svg = (outdir / "graph.svg").read_text()
    assert "3x16x16" in svg         # cmn output: CHW, crop 16x16
    assert "script.py:" in svg     # call sites of the user script


def test_format_dot_prints_only_dot(folder, capsys):
    root, script = folder
    assert main(["graph", str(script), str(root), "--iterations", "2", "--format", "dot"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith('digraph "ndd" {') and out.rstrip().endswith("}")
    assert "script-started" in err and "script-started" not in out


def test_format_json_and_recorded_view(folder, capsys):
    root, script = folder
    assert main(["graph", str(script), str(root), "--iterations", "2", "--format", "json",
                 "--view", "recorded"]) == 0
    doc = json.loads(capsys.readouterr().out)
    ops = [n["op"] for n in doc["plans"][0]["nodes"]]
    assert ops == ["decoders.image", "crop_mirror_normalize"]


@pytest.mark.parametrize("argv, msg", [
    (["graph", "does_not_exist.py"], "not found"),
    (["graph", "x.py", "--view", "sideways"], "invalid choice"),
    (["graph"], "required"),
])
def test_bad_arguments_exit_2_with_one_line(argv, msg, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ndd graph: error:") and msg in err


@pytest.mark.parametrize("out, msg", [
    ("{script}", "is a file"), ("{script}/sub", "cannot create a folder there"),
    ("", "--out is empty"),
])
def test_out_that_cannot_be_a_folder_exits_2(tmp_path, out, msg, capsys):
    script = tmp_path / "s.py"
    script.write_text("print('hi')\n")
    assert main(["graph", str(script), "--out", out.format(script=script)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ndd graph: error:") and msg in err


def test_a_folder_as_script_exits_2(tmp_path, capsys):
    assert main(["graph", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_help_has_an_example(capsys):
    with pytest.raises(SystemExit) as e:
        main(["graph", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "example:" in out and "--iterations" in out


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or \
    shutil.which("google-chrome")


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get install chromium)")
def test_report_renders_in_headless_chromium(outdir, tmp_path):
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
           (outdir / "report.html").as_uri()]
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    assert '<div class="graph" id="graph"><svg' in dom
    assert 'id="timeline"' in dom and "data:image/png;base64," in dom
    assert "== node times ==" in dom


def test_matplotlib_fallback_draws_fused_group_as_cluster(folder, tmp_path, monkeypatch):
    monkeypatch.setattr(render, "have_graphviz", lambda: False)
    root, script = folder
    out = tmp_path / "fallback"
    assert main(["graph", str(script), str(root), "--iterations", "2", "--out", str(out)]) == 0
    svg = (out / "graph.svg").read_text()
    assert "[fuse] applied" in (out / "graph.txt").read_text()
    clusters = re.findall(r'<g id="cluster_(\d+)">', svg)
    assert len(clusters) == 1, "decode + crop_mirror_normalize fused into one cluster"
    node_id = clusters[0]
    # the cluster rectangle and its title are SVG groups named after the fused node
    assert f'<g id="cluster_{node_id}">' in svg
    assert f'<g id="cluster_{node_id}_label">' in svg
    assert f"fused.image #{node_id}: ROI decode + normalize" in svg
    # one box (group) and one <text> per original stage, with its own call site
    for k, stage in enumerate(("decoders.image", "crop_mirror_normalize")):
        assert f'<g id="n{node_id}_{k}">' in svg
        assert f">{stage}</text>" in svg
    lines = SCRIPT.splitlines()     # line numbers as the script file has them
    dec_line = 1 + next(i for i, ln in enumerate(lines) if "decoders.image(" in ln)
    assert f">script.py:{dec_line}</text>" in svg
    png = (out / "graph.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
