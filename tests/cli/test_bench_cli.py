"""``ndd bench`` on a tiny temp image folder (1 epoch, no warm-up)."""
import json
import re

import numpy as np
import pytest
from PIL import Image

import ndd
from ndd.tools.bench import Runner
from ndd.tools.bench_pipelines import train
from ndd.tools.cli import main

PIPE = """
def pipeline(api, jpegs):
    img = api.decoders.image(jpegs)
    return api.crop_mirror_normalize(img, crop=(8, 8), dtype=api.float32)
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench")
    rng = np.random.default_rng(1)
    for i in range(6):
        d = root / "xy"[i % 2]
        d.mkdir(exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (16, 12 + i, 3), dtype=np.uint8)).save(
            d / f"{i}.jpg")
    return root


def _rows(out):
    return {m.group(1): [float(x) for x in m.group(2, 3, 4, 5)] for m in re.finditer(
        r"^(\S+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)x$", out, re.M)}


def test_bench_prints_the_table_and_writes_json_and_plot(data, tmp_path, capsys):
    script = tmp_path / "pipe.py"
    script.write_text(PIPE)
    js, png = tmp_path / "r.json", tmp_path / "r.png"
    rc = main(["bench", "--script", str(script), "--data", str(data), "--batch-size", "4",
               "--epochs", "2", "--warmup", "0", "--json", str(js), "--plot", str(png)])
    out = capsys.readouterr().out
    assert rc == 0
    rows = _rows(out)
    assert list(rows) == ["eager", "deferred", "compile"]
    for lo, med, hi, ratio in rows.values():
        assert 0 < lo <= med <= hi
    assert rows["eager"][3] == 1.00
    doc = json.loads(js.read_text())
    assert doc["batch_size"] == 4 and doc["epochs"] == 2
    # exact: the printed ratio is the JSON medians' quotient to 2 decimals (the printed
    # medians are rounded to 0.1 img/s: their quotient can differ in the last digit)
    med = {mode: res["median"] for mode, res in doc["results"].items()}
    assert rows["compile"][3] == float(f"{med['compile'] / med['eager']:.2f}")
    for mode, res in doc["results"].items():
        assert len(res["images_per_s"]) == 2
        # exact: the median of 2 rates is (a + b) / 2 in float64 here and in numpy, and JSON
        # keeps floats exactly
        assert res["median"] == float(np.median(res["images_per_s"]))
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_bench_builtin_decode_single_mode(data, capsys):
    assert main(["bench", "--pipeline", "decode", "--mode", "deferred", "--data", str(data),
                 "--batch-size", "3", "--epochs", "1", "--warmup", "0"]) == 0
    out = capsys.readouterr().out
    assert "images=6 batch=3" in out and list(_rows(out)) == ["deferred"]


@pytest.mark.oracle
def test_bench_compare_dali(data, capsys):
    pytest.importorskip("nvidia.dali")
    assert main(["bench", "--pipeline", "decode", "--mode", "eager", "--compare", "dali",
                 "--data", str(data), "--batch-size", "3", "--epochs", "1", "--warmup", "0"]) == 0
    assert list(_rows(capsys.readouterr().out)) == ["eager", "dali-eager", "dali-capture",
                                                    "dali-pipeline"]


@pytest.mark.parametrize("extra, msg", [
    (["--mode", "eager,turbo"], "unknown --mode turbo"),
    (["--compare", "tensorflow"], "unknown --compare tensorflow"),
    (["--batch-size", "0"], "--batch-size must be >= 1"),
    (["--pipeline", "test"], "invalid choice"),
    (["--script", "missing.py"], "not found"),
    (["--json", "/nonexistent/dir/r.json"], "--json '/nonexistent/dir/r.json': cannot write"),
    (["--plot", "/nonexistent/dir/r.png"], "--plot '/nonexistent/dir/r.png': cannot write"),
    (["--plot", "r.txt"], "must end in one of"),
    (["--json", "r.json/"], "cannot write there"),
])
def test_bad_arguments_exit_2_with_one_line(data, extra, msg, capsys):
    assert main(["bench", "--data", str(data), *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ndd bench: error:") and msg in err


def test_empty_folder_exits_2(tmp_path, capsys):
    (tmp_path / "sub").mkdir()
    assert main(["bench", "--data", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has no image files" in err


@pytest.mark.parametrize("where, msg", [
    (".", "has no class sub-folders"),             # images beside, not in, class folders
    ("a/sub", "no file in its 1 class sub-folder"),  # one level too deep
])
def test_images_where_the_reader_does_not_look_exit_2(tmp_path, where, msg, capsys):
    (tmp_path / where).mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(tmp_path / where / "0.jpg")
    assert main(["bench", "--data", str(tmp_path), "--epochs", "1", "--warmup", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ndd bench: error: --data:") and msg in err


def test_top_level_help_and_unknown_command(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0 and "graph" in capsys.readouterr().out
    assert main(["frobnicate"]) == 2
    assert capsys.readouterr().err.startswith("ndd: error:")
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    assert "example:" in capsys.readouterr().out


@pytest.mark.oracle
def test_bench_dali_capture_interleaved_with_random_ops(data, capsys):
    # the train pipeline draws random windows and flips; DALI's captured loop rejects a
    # generator that other modes' epochs drew from in between, so every runner has its own
    pytest.importorskip("nvidia.dali")
    assert main(["bench", "--pipeline", "train", "--mode", "eager", "--compare", "dali",
                 "--data", str(data), "--batch-size", "3", "--epochs", "2",
                 "--warmup", "0"]) == 0
    captured = capsys.readouterr()
    assert "failed" not in captured.out + captured.err
    assert list(_rows(captured.out)) == ["eager", "dali-eager", "dali-capture",
                                         "dali-pipeline"]


def test_bench_runners_draw_the_same_windows(data):
    # each runner's own generator, same seed: eager and deferred see the same random windows
    # and flips (their outputs are equal batch by batch); a --script pipeline without ``rng``
    # still runs
    outs = {}
    for mode in ("eager", "deferred"):
        r = Runner(mode, ndd, train, str(data), 3, mode)
        assert r.rng is not None
        ctx = ndd.EvalMode.deferred if mode == "deferred" else ndd.EvalMode.eager
        with ctx:
            outs[mode] = [np.asarray(train(ndd, j, rng=r.rng).torch())
                          for j, _ in r.reader.next_epoch(batch_size=3)]
    for a, b in zip(outs["eager"], outs["deferred"]):
        np.testing.assert_array_equal(a, b)
    assert Runner("eager", ndd, lambda api, jpegs: api.decoders.image(jpegs), str(data), 3,
                  "eager").rng is None


@pytest.mark.parametrize("source, msg", [
    ("def pipeline(api, jpegs)\n    return jpegs\n", "could not be run (line 1): SyntaxError"),
    ("import no_such_module_here\n", "could not be run: ModuleNotFoundError"),
])
def test_script_that_cannot_run_is_one_line(data, tmp_path, source, msg, capsys):
    script = tmp_path / "bad.py"
    script.write_text(source)
    assert main(["bench", "--script", str(script), "--data", str(data)]) == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_script_returning_not_a_batch_names_the_type(data, tmp_path, capsys):
    script = tmp_path / "arr.py"
    script.write_text("import numpy as np\ndef pipeline(api, jpegs):\n    return np.zeros(3)\n")
    assert main(["bench", "--script", str(script), "--mode", "eager", "--data", str(data),
                 "--batch-size", "3", "--epochs", "1", "--warmup", "0"]) == 1
    assert "the pipeline returned ndarray; expected a Batch" in capsys.readouterr().err


def test_bench_breakdown_counts_the_kernels_of_each_mode(data, tmp_path, capsys):
    """--breakdown: per mode and process, the kernels' CPU (decode / resample / normalize) is
    counted where they ran, never more than the process's CPU; the table and JSON agree."""
    out_json = tmp_path / "b.json"
    assert main(["bench", "--pipeline", "train", "--mode", "eager,compile", "--data", str(data),
                 "--batch-size", "3", "--epochs", "1", "--warmup", "0", "--threads", "2",
                 "--breakdown", "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "breakdown, ms per image" in out
    doc = json.loads(out_json.read_text())["breakdown"]
    assert set(doc) == {"eager", "compile"}
    for mode, procs in doc.items():
        for name, cols in procs.items():
            kernels = cols["decode"] + cols["resample"] + cols["normalize"]
            assert kernels <= cols["cpu"] * 1.01 + 1e-3, (mode, name, cols)
            assert all(v >= 0 for v in cols.values())
        for kernel in ("decode", "resample", "normalize"):
            assert sum(p[kernel] for p in procs.values()) > 0, (mode, kernel)
    # eager runs every kernel in this process: nothing ran in a worker
    assert all(p["cpu"] == 0 for n, p in doc["eager"].items() if n != "main")
    assert re.search(r"^eager\s+main(\s+[\d.]+){4}", out, re.M)
