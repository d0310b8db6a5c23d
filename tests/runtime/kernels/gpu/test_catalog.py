"""runtime/kernels/gpu/catalog.py registers every listed GPU kernel and imports no CUDA."""
from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

from runtime.kernels.gpu import catalog

ROOT = pathlib.Path(__file__).resolve().parents[4]


def test_the_catalog_registers_its_ops_without_cupy():
    code = ("import sys, runtime.kernels.gpu.catalog as c, runtime.kernels.registry as r; "
            "missing = [op for op in c.GPU_OPS if (op, 'gpu') not in r.KERNELS]; "
            "print(missing, 'cupy' in sys.modules, sorted({m.__name__ for m in c.MODULES}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout.strip()
    assert out.startswith("[] False"), out


def test_every_registering_module_is_listed():
    gpu_dir = ROOT / "runtime" / "kernels" / "gpu"
    registering = set()
    for path in gpu_dir.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "register":
                registering.add(path.stem)
    assert registering == {m.__name__.rpartition(".")[2] for m in catalog.MODULES}
