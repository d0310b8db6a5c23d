"""numba's on-disk cache keys of our compiled kernels are the same in every process.

A kernel built inside a ``build`` function is a closure over other kernels' dispatchers; numba
keys its cache entry by a pickle of those cell contents. Without ``jit.pin_identity`` each
dispatcher pickled with a random UUID, so the key changed per process and every worker
recompiled (tens of seconds for the warp loops). Checked here in two fresh interpreters,
without compiling anything (building dispatchers and computing keys is cheap).
"""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[4]

PROBE = r"""
import hashlib
import numba
from numba.core import serialize
from runtime.kernels.cpu import jit, warp_perspective_jit

def build(njit):
    @njit
    def inner(x):
        return x + 1

    @njit
    def outer(x):
        return inner(x) * 2
    return outer

outer = jit.compiled(build)()
keys = []
todo = [outer, *warp_perspective_jit.kernels()]
seen = set()
while todo:
    d = todo.pop()
    if id(d) in seen or d.py_func.__closure__ is None:
        continue
    seen.add(id(d))
    cells = tuple(c.cell_contents for c in d.py_func.__closure__)
    keys.append(d.py_func.__qualname__ + ":" + hashlib.sha256(serialize.dumps(cells)).hexdigest())
    todo += [c for c in cells if isinstance(c, numba.core.registry.CPUDispatcher)]
print(len(keys))
print("\n".join(sorted(keys)))
"""


def _keys():
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    return out.stdout


def test_closure_cache_keys_are_the_same_in_two_processes():
    first, second = _keys(), _keys()
    assert int(first.split("\n", 1)[0]) >= 3          # outer + the warp kernels' closures
    assert first == second


def test_pin_identity_numbers_repeated_builds_apart():
    code = ("from runtime.kernels.cpu import jit\n"
            "class D:\n"
            "    def _set_uuid(self, u): self.u = u\n"
            "def f(): pass\n"
            "a, b = jit.pin_identity(D(), f), jit.pin_identity(D(), f)\n"
            "print(a.u != b.u, a.u[:-2] == b.u[:-2])\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["True", "True"]
