"""Every CUDA kernel compiles offline with NVRTC for sm_80 and sm_90 with the run-time options,
ptxas reports no register spills, and the descriptor structs have the sizes the launchers write.

NVRTC needs no GPU and no driver: it is called through ctypes (the nvidia-cuda-nvrtc wheel).
Results are cached under the temp dir by the hash of the full source text, the options, the
architecture and the NVRTC library, so an unchanged source is compiled once per machine.
"""
from __future__ import annotations

import json
import hashlib
import os
import pathlib
import re
import tempfile

import pytest

from runtime.kernels.gpu import cmn, compile as cc, copies, resize
from runtime.kernels.gpu.hostbuild import host_compiler, host_module

needs_nvrtc = pytest.mark.skipif(cc.find_nvrtc() is None,
                                 reason="no NVRTC library (pip install nvidia-cuda-nvrtc)")

_FUNC = re.compile(r"Function properties for (\w+)\s*\n\s*ptxas\s*\.\s*(\d+) bytes stack frame, "
                   r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_REGS = re.compile(r"Compiling entry function '(\w+)'.*?Used (\d+) registers", re.S)


def sources() -> dict[str, str]:
    """Every kernel source: the hand-written families (and, later, generated ones)."""
    return {fam: cc.source_of(fam) for fam in cc.FAMILIES
            if (cc.SOURCE_DIR / cc.FAMILIES[fam]).exists()}


def compiled(name: str, source: str, arch: str) -> dict:
    """NVRTC's result with ptxas' verbose report, cached on disk."""
    options = cc.OPTIONS + ("--ptxas-options=-v",)
    key = hashlib.sha256("\0".join([source, (cc.SOURCE_DIR / "ndd_common.cuh").read_text(),
                                    arch, *options, str(cc.find_nvrtc())]).encode()).hexdigest()
    cache = pathlib.Path(tempfile.gettempdir()) / "ndd-gpu-nvrtc"
    cache.mkdir(exist_ok=True)
    path = cache / f"{name}-{arch}-{key[:20]}.json"
    if path.exists():
        return json.loads(path.read_text())
    res = cc.nvrtc_compile(source, arch, options, name=f"{name}.cu")
    out = {"log": res["log"], "ptx_bytes": len(res["ptx"]), "cubin_bytes": len(res["cubin"])}
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(out))
    os.replace(tmp, path)
    return out


@needs_nvrtc
@pytest.mark.parametrize("arch", cc.ARCHS)
@pytest.mark.parametrize("name", sorted(sources()))
def test_compiles_with_nvrtc_without_spills(name, arch):
    res = compiled(name, sources()[name], arch)
    assert res["cubin_bytes"] > 0
    funcs = _FUNC.findall(res["log"])
    assert funcs, res["log"][:2000]
    spilling = [f for f in funcs if int(f[2]) or int(f[3])]
    assert not spilling, f"register spills in {name} for {arch}: {spilling}"
    regs = dict(_REGS.findall(res["log"]))
    assert set(regs) == {f[0] for f in funcs}
    assert max(int(r) for r in regs.values()) <= 128, regs


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
