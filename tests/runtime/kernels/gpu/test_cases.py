"""The exactness cases the device check runs (runtime/kernels/gpu/cases.py) pass on the host
build: every GPU kernel against its CPU kernel on 100 random batches, and the checker catches a
wrong result."""
from __future__ import annotations

import numpy as np
import pytest

from runtime.kernels.cpu import catalog as cpu_catalog  # noqa: F401 (registers the CPU kernels)
from runtime.kernels.gpu import catalog as gpu_catalog  # noqa: F401 (registers the GPU kernels)
from runtime.kernels.gpu.cases import cases, check_case, run_case
from runtime.kernels.gpu.hostbuild import HostContext, host_compiler

pytestmark = pytest.mark.skipif(host_compiler() is None, reason="no C++ compiler (g++)")


def test_the_cases_cover_every_family():
    ops = {c.op for c in cases(100)}
    assert {"crop", "flip", "transpose", "cast", "crop_mirror_normalize", "elementwise_fused",
            "resize"} <= ops
    assert any(c.op in ("hsv", "brightness_contrast", "color_twist") for c in cases(100))


def test_every_case_passes_on_the_host_build():
    failures = []
    for case in cases(100, seed=3):
        want, got = run_case(case, HostContext)
        msg = check_case(case, want, got)
        if msg:
            failures.append(msg)
    assert not failures, failures[:5]


def test_the_checker_sees_a_wrong_result():
    case = next(c for c in cases(20) if c.op == "crop_mirror_normalize")
    want, got = run_case(case, HostContext)
    i = next(k for k, g in enumerate(got) if g.size)
    bad = [g.copy() for g in got]
    bad[i].reshape(-1)[0] += np.asarray(1, bad[i].dtype)
    assert check_case(case, want, bad) and "not bit-exact" in check_case(case, want, bad)
