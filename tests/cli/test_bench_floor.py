"""``ndd bench --floor``: the kernel floor timed beside the modes, compile's fraction of it."""
import re

import numpy as np
from PIL import Image

from ndd.tools.cli import main


def test_floor_row_and_compile_fraction(tmp_path, capsys, monkeypatch):
    # compile mode on threads here (no lanes to start); the floor has its own process
    monkeypatch.setenv("NDD_PROCESS_LANES", "0")
    rng = np.random.default_rng(2)
    for i in range(6):
        d = tmp_path / "ab"[i % 2]
        d.mkdir(exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (30 + i, 40, 3), dtype=np.uint8)).save(
            d / f"{i}.jpg")
    assert main(["bench", "--pipeline", "train", "--mode", "compile", "--data", str(tmp_path),
                 "--batch-size", "3", "--epochs", "1", "--warmup", "0", "--threads", "1",
                 "--floor", "--breakdown"]) == 0
    out = capsys.readouterr().out
    cpu = re.search(r"^CPU per image: compile ([\d.]+) ms .* floor ([\d.]+) ms", out, re.M)
    assert cpu and float(cpu.group(1)) > 0 and float(cpu.group(2)) > 0, out
    floor = re.search(r"^floor\s+([\d.]+)\s+([\d.]+)", out, re.M)
    comp = re.search(r"^compile\s+([\d.]+)\s+([\d.]+)", out, re.M)
    assert floor and comp, out
    frac = re.search(r"^compile / floor: (\d+)%", out, re.M)
    assert frac, out
    # the percentage is rounded from the unrounded rates; the printed rates are rounded to 0.1
    c, f = float(comp.group(2)), float(floor.group(2))
    lo, hi = 100 * (c - 0.05) / (f + 0.05), 100 * (c + 0.05) / (f - 0.05)
    assert lo - 0.5 <= int(frac.group(1)) <= hi + 0.5, (frac.group(0), c, f)


def test_floor_of_a_chain_without_fused_decode_is_skipped(tmp_path, capsys):
    d = tmp_path / "a"
    d.mkdir()
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(d / "0.jpg")
    assert main(["bench", "--pipeline", "decode", "--mode", "compile", "--data", str(tmp_path),
                 "--batch-size", "1", "--epochs", "1", "--warmup", "0", "--floor"]) == 0
    captured = capsys.readouterr()
    assert "skipping floor" in captured.err and "fused.image" in captured.err
    assert "compile / floor" not in captured.out
