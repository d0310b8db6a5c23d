"""``import ndd`` (and CPU work) touches no CUDA: no cupy import, no CUDA library loaded, torch's
CUDA not initialised; checked in a fresh interpreter that refuses to import cupy."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_ndd_never_touches_cuda():
    script = textwrap.dedent("""
        import sys

        class NoCupy:
            def find_spec(self, name, path=None, target=None):
                if name == "cupy" or name.startswith(("cupy.", "cupy_backends")):
                    raise AssertionError(f"{name} imported by import ndd")
                return None
        sys.meta_path.insert(0, NoCupy())

        import ndd
        import numpy as np

        t = ndd.tensor(np.arange(6, dtype=np.uint8).reshape(2, 3))
        assert ndd.Tensor(t, device="cpu") is not None and ndd.as_batch([t]).device.kind == "cpu"

        maps = open("/proc/self/maps").read()
        for lib in ("libcuda.so", "libcudart", "libnvrtc"):
            assert lib not in maps, f"{lib} loaded by import ndd"
        torch = sys.modules.get("torch")
        if torch is not None:
            assert not torch.cuda.is_initialized()
        assert not any(m == "cupy" or m.startswith("cupy.") for m in sys.modules)
        print("clean")
    """)
    res = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.strip().endswith("clean")
