"""runtime/kernels/cpu/catalog.py: every CPU kernel module is imported by the catalogue, and
the registry imports none (kernels register themselves)."""
import ast
import pathlib
import subprocess
import sys

import runtime.kernels.cpu as cpu
from runtime.kernels import registry
from runtime.kernels.cpu import catalog

CPU_DIR = pathlib.Path(cpu.__file__).parent


def _registering_modules() -> set[str]:
    """Modules of runtime/kernels/cpu/ that call ``register`` (by their source)."""
    out = set()
    for path in CPU_DIR.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "register":
                out.add(path.stem)
                break
    return out


def test_every_registering_module_is_in_the_catalog():
    listed = {m.__name__.rpartition(".")[2] for m in catalog.MODULES}
    missing = _registering_modules() - listed
    assert not missing, f"add {sorted(missing)} to runtime/kernels/cpu/catalog.py (MODULES)"


def test_the_catalog_registers_a_cpu_kernel_per_module():
    cpu_modules = {k[0] for k in registry.KERNELS if k[1] == "cpu"}
    assert {"decoders.image", "resize", "crop_mirror_normalize", "fused.image", "transfer",
            "elementwise_fused", "random.coin_flip", "subscript"} <= cpu_modules
    for (op, device), fn in registry.KERNELS.items():
        assert registry.lookup(op, device) is fn


def test_the_registry_imports_no_kernel():
    code = ("import sys, runtime.kernels.registry as r; "
            "print(sorted(m for m in sys.modules if m.startswith('runtime.kernels.cpu')), "
            "len(r.KERNELS))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=CPU_DIR.parents[2])
    assert out.stdout.strip() == "[] 0"
