import pathlib
import subprocess
import sys

from compiler import pipeline


def test_pass_order():
    assert [n for n, _ in pipeline.PASSES] == ["dce", "cse", "fuse", "place"]


def test_compiler_imports_no_numpy_torch_cupy():
    root = pathlib.Path(__file__).resolve().parents[2]
    code = ("import sys, pkgutil, importlib, compiler, compiler.ops, compiler.pipeline, "
            "compiler.fusion_rules, compiler.explain, compiler.checker\n"
            "bad = [m for m in ('numpy', 'torch', 'cupy') if m in sys.modules]\n"
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == ""
    for f in (root / "compiler").rglob("*.py"):
        text = f.read_text()
        for mod in ("numpy", "torch", "cupy"):
            assert f"import {mod}" not in text, f"{f} imports {mod}"
