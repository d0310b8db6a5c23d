"""Results do not depend on the CPU: every op family gives the same bits when numpy, torch, numba
and libjpeg-turbo are forced onto the code paths of other x86-64 CPUs.

One machine cannot be another, but each library picks its SIMD routines at run time and lets
the process choose a lower level: ``NPY_DISABLE_CPU_FEATURES`` (numpy's dispatch),
``ATEN_CPU_CAPABILITY`` (torch's kernels), ``NUMBA_CPU_NAME`` (the target our compiled loops
are built for), ``JSIMD_FORCE*`` (libjpeg-turbo). ``tests/dispatch_probe.py`` digests ~370
outputs (decode, ROI decode, every resize filter, crop_mirror_normalize to float32/float16,
random_resized_crop, flip, every arithmetic and math op in float16/32/64 and ints, casts,
every random op); each variant must reproduce the native run's digests exactly. A difference
names the outputs, e.g. the float32 ``np.exp`` behind the gaussian resize filter, which differs
between numpy's AVX2 and baseline paths (fixed: the table is computed with the C library).
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

_PROBE = pathlib.Path(__file__).with_name("dispatch_probe.py")


def _numpy_dispatch_above(level: str | None) -> list[str]:
    """numpy's dispatch targets this CPU has above ``level`` (None: all of them)."""
    umath = np._core._multiarray_umath
    found = [f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f)]
    if level is None:
        return found
    return found[found.index(level) + 1:] if level in found else []


def _variants() -> dict[str, dict[str, str]]:
    above_avx2 = _numpy_dispatch_above("X86_V3")
    return {
        # an AVX2 machine (Intel Haswell..Alder Lake, AMD Zen 1-3)
        "avx2": {"NPY_DISABLE_CPU_FEATURES": ",".join(above_avx2),
                 "ATEN_CPU_CAPABILITY": "avx2", "NUMBA_CPU_NAME": "haswell",
                 "JSIMD_FORCEAVX2": "1"},
        # no SIMD dispatch at all: numpy's baseline, torch's default kernels, generic x86-64
        "baseline": {"NPY_DISABLE_CPU_FEATURES": ",".join(_numpy_dispatch_above(None)),
                     "ATEN_CPU_CAPABILITY": "default", "NUMBA_CPU_NAME": "x86-64",
                     "JSIMD_FORCENONE": "1"},
    }


def _run_probe(extra_env: dict[str, str], tmp_path: pathlib.Path) -> dict[str, str]:
    env = dict(os.environ, NDD_PROCESS_LANES="0", **extra_env)
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba")   # each target compiles its own loops
    if not env.get("NPY_DISABLE_CPU_FEATURES"):
        env.pop("NPY_DISABLE_CPU_FEATURES", None)
    proc = subprocess.run([sys.executable, str(_PROBE)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def native(tmp_path_factory):
    return _run_probe({}, tmp_path_factory.mktemp("native"))


@pytest.mark.skipif(sys.platform != "linux" or os.uname().machine != "x86_64",
                    reason="the dispatch levels forced here are x86-64's")
@pytest.mark.parametrize("variant", sorted(_variants()))
def test_same_bits_on_other_code_paths(native, variant, tmp_path):
    assert len(native) > 300
    other = _run_probe(_variants()[variant], tmp_path)
    assert other.keys() == native.keys()
    differ = sorted(k for k in native if native[k] != other[k])
    assert not differ, f"{len(differ)} outputs differ on the {variant} path: {differ[:20]}"


def test_numpy_dispatch_is_really_lowered(tmp_path):
    """The variants above mean something only if numpy honours the variable in a child."""
    features = _numpy_dispatch_above(None)
    if not features:
        pytest.skip("this CPU has no numpy dispatch targets above the baseline")
    env = dict(os.environ, NPY_DISABLE_CPU_FEATURES=",".join(features))
    code = ("import numpy as np, json; u = np._core._multiarray_umath; "
            "print(json.dumps([f for f in u.__cpu_dispatch__ if u.__cpu_features__[f]]))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert json.loads(out) == []
