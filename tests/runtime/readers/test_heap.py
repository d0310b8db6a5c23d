"""runtime/readers/heap.py: glibc's M_TOP_PAD set once when a reader is built (opt-out by
NDD_MALLOC_TOP_PAD=0), and what it is for: a batch of freed 30 kB buffers comes back without
new pages from the kernel."""
import platform
import subprocess
import sys

import pytest

from runtime.readers.heap import keep_heap_pages

GLIBC = platform.libc_ver()[0] == "glibc"


def _run(code, **env):
    import os
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, **env), timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.mark.skipif(not GLIBC, reason="glibc's mallopt")
def test_set_once_and_opt_out():
    assert keep_heap_pages() is True and keep_heap_pages() is True
    code = "from runtime.readers.heap import keep_heap_pages as k; print(k(), k())"
    assert _run(code, NDD_MALLOC_TOP_PAD="0") == "False False"
    assert _run(code, NDD_MALLOC_TOP_PAD="1048576") == "True True"


@pytest.mark.skipif(not GLIBC or platform.system() != "Linux", reason="Linux getrusage")
def test_freed_batches_reuse_their_pages():
    # minor page faults of allocating and freeing 200 batches of 32 x 30 kB: with the pad,
    # the batches after the first take their pages from the heap, not from the kernel
    code = """
import resource, sys
from runtime.readers.heap import keep_heap_pages
if sys.argv[1] == "pad":
    keep_heap_pages()
batch = [bytes(30000) for _ in range(32)]
del batch
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(200):
    batch = [bytearray(30000) for _ in range(32)]
    del batch
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
"""
    import os
    env = dict(os.environ)
    env.pop("NDD_MALLOC_TOP_PAD", None)
    faults = {}
    for mode in ("pad", "default"):
        out = subprocess.run([sys.executable, "-c", code, mode], capture_output=True,
                             text=True, env=env, timeout=60)
        assert out.returncode == 0, out.stderr
        faults[mode] = int(out.stdout)
    # without the pad every batch faults in its ~235 pages again (~47000 in all)
    assert faults["default"] > 20000 and faults["pad"] < faults["default"] / 10, faults
