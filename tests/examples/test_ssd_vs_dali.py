"""benchmarks/ssd_vs_dali.py runs the SSD loader in every configuration, and DALI's
capture=True really captures it (no fallback to eager dynamic mode)."""
import importlib.util
import pathlib
import warnings

import pytest

pytest.importorskip("skimage")

_PATH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "ssd_vs_dali.py"


@pytest.mark.oracle
def test_every_configuration_runs_and_dali_captures(capsys):
    pytest.importorskip("nvidia.dali")
    spec = importlib.util.spec_from_file_location("ssd_vs_dali_bench", _PATH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    ns = bench.parse_args(["--copies", "1", "--batch-size", "2", "--epochs", "1", "--warmup",
                           "1", "--configs", "ndd-compile,dali-capture,dali-pipeline"])
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*no operators were captured.*")
        result = bench.run(ns)
    assert set(result) == {"ndd-compile", "dali-capture", "dali-pipeline"}
    assert all(r["median"] > 0 for r in result.values())
    assert "vs dali-capture" in capsys.readouterr().out
