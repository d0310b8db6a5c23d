"""Every CUDA kernel compiles offline with NVRTC for sm_80 and sm_90 with the run-time options,
ptxas reports no register spills, and the descriptor structs have the sizes the launchers write.

NVRTC needs no GPU and no driver: it is called through ctypes (the nvidia-cuda-nvrtc wheel).
``offline_compile`` caches results under the temp dir by the hash of the full source text, the
options, the architecture and the NVRTC library, so an unchanged source is compiled once per
machine.
"""
from __future__ import annotations

import pytest

from runtime.kernels.gpu import cmn, compile as cc, copies, resize
from runtime.kernels.gpu.hostbuild import host_compiler, host_module

needs_nvrtc = pytest.mark.skipif(cc.find_nvrtc() is None,
                                 reason="no NVRTC library (pip install nvidia-cuda-nvrtc)")

def sources() -> dict[str, str]:
    """Every hand-written kernel source (the generated ones: test_elementwise_host.py)."""
    return {fam: cc.source_of(fam) for fam in cc.FAMILIES}


@needs_nvrtc
@pytest.mark.parametrize("arch", cc.ARCHS)
@pytest.mark.parametrize("name", sorted(sources()))
def test_compiles_with_nvrtc_without_spills(name, arch):
    res = cc.offline_compile(name, sources()[name], arch)
    assert res["cubin_bytes"] > 0
    assert res["spills"], res["log"][:2000]
    assert not cc.spills(res), f"register spills in {name} for {arch}: {cc.spills(res)}"
    assert set(res["registers"]) == set(res["spills"])
    assert max(res["registers"].values()) <= 128, res["registers"]


def test_the_options_keep_exactness():
    assert {"--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true"} <= \
        set(cc.OPTIONS)


@needs_nvrtc
def test_a_broken_source_reports_the_log():
    with pytest.raises(cc.NvrtcError, match="undefined"):
        cc.nvrtc_compile('extern "C" __global__ void k() { undefined_thing(); }', "sm_80")


@pytest.mark.skipif(host_compiler() is None, reason="no C++ compiler (g++)")
@pytest.mark.parametrize("family,struct,words", [("copy", "CopyDesc", copies.DESC_WORDS),
                                                 ("cast", "CastDesc", 3),
                                                 ("cmn", "CmnDesc", cmn.DESC_WORDS),
                                                 ("resize", "RsDesc", resize.DESC_WORDS)])
def test_descriptor_layouts_match(family, struct, words):
    assert host_module(family, cc.source_of(family)).sizeof(struct) == 8 * words


@pytest.mark.skipif(cc.find_nvcc() is None, reason="no nvcc")
@pytest.mark.parametrize("name", cc.HOT_FAMILIES)
def test_hot_kernels_have_no_spills_under_nvcc_resource_usage(name):
    res = cc.nvcc_resource_usage(name, cc.source_of(name))
    assert res["spills"], res["log"][-2000:]
    assert {k.partition(":")[0] for k in res["spills"]} == set(cc.ARCHS)
    bad = {k: v for k, v in res["spills"].items() if v[1] or v[2]}
    assert not bad, f"register spills in {name}: {bad}"
