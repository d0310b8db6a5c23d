"""The CUDA sources of ndd's GPU kernels and how they are compiled (NVRTC), at run time and offline.

Every kernel family is one ``.cu`` file in this folder (``copy.cu``, ``cmn.cu``, ``resize.cu``)
including ``ndd_common.cuh``, or a generated source (``elementwise.py``). At run time cupy's
``RawModule`` compiles a source with :data:`OPTIONS` (NVRTC, for the device's architecture). The
offline tier compiles the same sources with the same options for :data:`ARCHS` through
:func:`nvrtc_compile`, which calls NVRTC's C API through ctypes: NVRTC needs no driver and no GPU.

:data:`OPTIONS` are chosen for exactness with the CPU kernels: ``--fmad=false`` (``a * b + c`` is
two rounded operations, as numpy/torch compute it), ``--ftz=false`` (subnormals kept),
``--prec-div=true`` / ``--prec-sqrt=true`` (correctly rounded ``/`` and ``sqrt``). Nothing here
imports cupy; :func:`raw_module` does so at its first call.
"""
from __future__ import annotations

import ctypes
import functools
import glob
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import threading

__all__ = ["SOURCE_DIR", "OPTIONS", "ARCHS", "FAMILIES", "source_of", "include_options",
           "find_nvrtc", "nvrtc_compile", "NvrtcError", "raw_module", "source_hash", "headers_text",
           "offline_compile", "compile_all", "spills", "find_nvcc", "nvcc_resource_usage",
           "HOT_FAMILIES"]

#: the folder of the ``.cu`` sources and ``ndd_common.cuh``
SOURCE_DIR = pathlib.Path(__file__).resolve().parent

#: NVRTC options of every ndd kernel (besides the architecture and the include path)
OPTIONS = ("--std=c++17", "--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true")

#: the architectures the offline tier compiles for (A100, H100/H200)
ARCHS = ("sm_80", "sm_90")

#: the hand-written kernel families: name -> source file
FAMILIES = {"copy": "copy.cu", "cast": "cast.cu", "cmn": "cmn.cu", "resize": "resize.cu",
            "resize_cmn": "resize_cmn.cu", "color": "color.cu", "color_cmn": "color_cmn.cu",
            "color_chain": "color_chain.cu"}

#: the families of the standard pipelines' per-batch kernels (resize pass 1, the fused resize ->
#: cmn and colour -> cmn passes, cmn): checked with ``nvcc --resource-usage`` too
HOT_FAMILIES = ("resize", "resize_cmn", "cmn", "color_chain")

_lock = threading.Lock()
_modules: dict = {}


class NvrtcError(RuntimeError):
    """NVRTC rejected a source (the message holds its log)."""


def source_of(family: str) -> str:
    """The text of kernel family ``family`` (a key of :data:`FAMILIES`)."""
    return (SOURCE_DIR / FAMILIES[family]).read_text()


def headers_text() -> str:
    """Every header a source may include (``*.cuh`` here), concatenated: part of cache keys."""
    return "".join(p.read_text() for p in sorted(SOURCE_DIR.glob("*.cuh")))


def source_hash(text: str, *extra: str) -> str:
    """A short hash of a source with every header (and ``extra`` strings): cache keys."""
    h = hashlib.sha256(text.encode())
    h.update(headers_text().encode())
    for e in extra:
        h.update(e.encode())
    return h.hexdigest()[:20]


def include_options() -> tuple[str, ...]:
    """The ``-I`` option that lets a source include ``ndd_common.cuh``."""
    return (f"-I{SOURCE_DIR}",)


@functools.lru_cache(maxsize=1)
def find_nvrtc() -> str | None:
    """The path of an NVRTC shared library, or None.

    Looked for in the ``nvidia-cuda-nvrtc`` wheel (``nvidia/cu13/lib``, ``nvidia/cuda_nvrtc/lib``)
    of this interpreter's site-packages, then under ``$CUDA_HOME`` / ``/usr/local/cuda*``.
    """
    roots = [pathlib.Path(p) for p in sys.path if p.endswith("site-packages")]
    patterns = []
    for root in roots:
        patterns += [str(root / "nvidia" / "cu13" / "lib" / "libnvrtc.so*"),
                     str(root / "nvidia" / "cuda_nvrtc" / "lib" / "libnvrtc.so*")]
    for home in filter(None, [os.environ.get("CUDA_HOME"), "/usr/local/cuda"]):
        patterns.append(str(pathlib.Path(home) / "lib64" / "libnvrtc.so*"))
    patterns.append("/usr/local/cuda-*/lib64/libnvrtc.so*")
    for pat in patterns:
        for path in sorted(glob.glob(pat)):
            if "builtins" not in path and "alt" not in os.path.basename(path):
                return path
    return None


@functools.lru_cache(maxsize=1)
def _nvrtc():
    path = find_nvrtc()
    if path is None:
        raise NvrtcError("no NVRTC library found (install the nvidia-cuda-nvrtc wheel or set "
                         "CUDA_HOME)")
    lib = ctypes.CDLL(path)
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    return lib


def _check(lib, code, what):
    if code != 0:
        raise NvrtcError(f"{what}: {lib.nvrtcGetErrorString(code).decode()}")


def nvrtc_compile(source: str, arch: str, options=OPTIONS, name: str = "kernel.cu") -> dict:
    """Compile ``source`` with NVRTC for ``arch`` (``"sm_80"``: a cubin; ``"compute_80"``: PTX).

    Parameters
    ----------
    source : str
        CUDA C++; may include ``ndd_common.cuh`` (the include path is added).
    arch : str
        ``sm_XX`` or ``compute_XX``.
    options : sequence of str
        NVRTC options besides ``--gpu-architecture`` and ``-I`` (default :data:`OPTIONS`).

    Returns
    -------
    dict
        ``{"ptx": bytes, "cubin": bytes or None, "log": str}``.

    Raises
    ------
    NvrtcError
        No NVRTC, or the source does not compile (the log in the message).
    """
    lib = _nvrtc()
    prog = ctypes.c_void_p()
    _check(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0,
                                       None, None), "nvrtcCreateProgram")
    try:
        opts = [f"--gpu-architecture={arch}", *include_options(), *options]
        arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        res = lib.nvrtcCompileProgram(prog, len(opts), arr)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, buf)
        log = buf.value.decode(errors="replace")
        if res != 0:
            raise NvrtcError(f"{name} ({arch}) does not compile:\n{log}")
        lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
        ptx = ctypes.create_string_buffer(size.value)
        _check(lib, lib.nvrtcGetPTX(prog, ptx), "nvrtcGetPTX")
        cubin = None
        if arch.startswith("sm_"):
            lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
            cub = ctypes.create_string_buffer(size.value)
            _check(lib, lib.nvrtcGetCUBIN(prog, cub), "nvrtcGetCUBIN")
            cubin = cub.raw
        return {"ptx": ptx.raw.rstrip(b"\0"), "cubin": cubin, "log": log}
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def raw_module(key: str, source: str):
    """cupy's ``RawModule`` of ``source`` compiled with :data:`OPTIONS`, once per ``key``.

    Imports cupy (at the first call only: nothing in ndd imports it at import time).
    """
    with _lock:
        mod = _modules.get(key)
        if mod is None:
            import cupy  # lazy: the GPU runtime is optional
            mod = cupy.RawModule(code=source, options=OPTIONS + include_options())
            _modules[key] = mod
        return mod


_FUNC = re.compile(r"Function properties for (\w+)\s*\n\s*ptxas\s*\.\s*(\d+) bytes stack frame, "
                   r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_REGS = re.compile(r"Compiling entry function '(\w+)'.*?Used (\d+) registers", re.S)


def offline_compile(name: str, source: str, arch: str) -> dict:
    """:func:`nvrtc_compile` with :data:`OPTIONS` and ptxas' verbose report, cached on disk.

    The cache (``$TMPDIR/ndd-gpu-nvrtc``) is keyed by the full source, every header, the
    architecture, the options and the NVRTC library, so a changed source is always compiled
    again.

    Returns
    -------
    dict
        ``{"log": str, "ptx_bytes": int, "cubin_bytes": int, "registers": {kernel: int},
        "spills": {kernel: (stack, spill stores, spill loads)}}``.

    Raises
    ------
    NvrtcError
        As :func:`nvrtc_compile`.
    """
    options = OPTIONS + ("--ptxas-options=-v",)

    def compute():
        res = nvrtc_compile(source, arch, options, name=f"{name}.cu")
        log = res["log"]
        return {"log": log, "ptx_bytes": len(res["ptx"]),
                "cubin_bytes": len(res["cubin"] or b""),
                "registers": {k: int(v) for k, v in _REGS.findall(log)},
                "spills": {f[0]: (int(f[1]), int(f[2]), int(f[3])) for f in _FUNC.findall(log)}}
    return _disk_cached("ndd-gpu-nvrtc", f"{name}-{arch}",
                        [source, headers_text(), arch, *options, str(find_nvrtc())], compute)


def _disk_cached(folder: str, stem: str, parts: list, compute) -> dict:
    """``compute()``'s JSON result, kept in ``<tmp>/<folder>/<stem>-<hash of parts>.json``
    (written atomically; a file already there is returned without computing)."""
    key = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]
    cache = pathlib.Path(tempfile.gettempdir()) / folder
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"{stem}-{key}.json"
    if path.exists():
        return json.loads(path.read_text())
    out = compute()
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(out))
    os.replace(tmp, path)
    return out


def find_nvcc() -> str | None:
    """The ``nvcc`` on the PATH (or under ``$CUDA_HOME/bin``), or None."""
    cand = shutil.which("nvcc")
    if cand is None and os.environ.get("CUDA_HOME"):
        path = pathlib.Path(os.environ["CUDA_HOME"]) / "bin" / "nvcc"
        cand = str(path) if path.exists() else None
    return cand


_NVCC_FUNC = re.compile(r"Function properties for (\w+)\s*\n\s*(\d+) bytes stack frame, "
                        r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_NVCC_ARCH = re.compile(r"Compiling entry function '(\w+)' for '(sm_\d+)'")


def nvcc_resource_usage(name: str, source: str, archs=ARCHS) -> dict:
    """``nvcc --resource-usage`` of ``source`` for every architecture of ``archs`` (one fatbin,
    :data:`OPTIONS`), cached on disk by the source, headers, options and the nvcc version.

    Returns
    -------
    dict
        ``{"log": str, "spills": {"<arch>:<kernel>": (stack, spill stores, spill loads)}}``.

    Raises
    ------
    RuntimeError
        No nvcc, or the compile failed (its log).
    """
    nvcc = find_nvcc()
    if nvcc is None:
        raise RuntimeError("nvcc not found (PATH, CUDA_HOME)")
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout

    def compute():
        with tempfile.TemporaryDirectory() as tmp:
            src = pathlib.Path(tmp) / f"{name}.cu"
            src.write_text(source)
            gencode = [f"-gencode=arch=compute_{a[3:]},code={a}" for a in archs]
            res = subprocess.run([nvcc, *OPTIONS, *include_options(), "-fatbin", *gencode,
                                  "--resource-usage", "-o",
                                  str(pathlib.Path(tmp) / "k.fatbin"), str(src)],
                                 capture_output=True, text=True)
        log = res.stdout + res.stderr
        if res.returncode != 0:
            raise RuntimeError(f"nvcc failed on {name}.cu:\n{log[-4000:]}")
        out = {"log": log, "spills": {}}
        arch, lines = None, log.splitlines()
        for k, line in enumerate(lines):      # each entry's compile line, then its properties
            m = _NVCC_ARCH.search(line)
            if m:
                arch = m.group(2)
            m = _NVCC_FUNC.search("\n".join(lines[k:k + 2]))
            if m and "Function properties" in line:
                out["spills"][f"{arch}:{m.group(1)}"] = tuple(int(v) for v in m.groups()[1:])
        return out
    return _disk_cached("ndd-gpu-nvcc", name, [source, headers_text(), *archs, *OPTIONS, version],
                        compute)


def spills(result: dict) -> dict:
    """The kernels of an :func:`offline_compile` result that spill registers."""
    return {k: v for k, v in result["spills"].items() if v[1] or v[2]}


def compile_all(archs=ARCHS, extra: dict | None = None) -> dict:
    """Compile every hand-written family (and ``extra`` ``{name: source}``, e.g. generated
    kernels) for every architecture of ``archs``: ``{(name, arch): offline_compile result}``."""
    sources = {fam: source_of(fam) for fam in FAMILIES}
    sources.update(extra or {})
    return {(name, arch): offline_compile(name, src, arch)
            for name, src in sources.items() for arch in archs}


def main() -> int:
    """``python -m runtime.kernels.gpu.compile``: compile every family for :data:`ARCHS` and
    print each kernel family's registers and spills; exit status 1 on a spill or an error."""
    status = 0
    for (name, arch), res in compile_all().items():
        regs = res["registers"]
        bad = spills(res)
        status |= bool(bad)
        print(f"{name:12s} {arch}: {len(regs):4d} kernels, registers <= "
              f"{max(regs.values(), default=0):3d}, spills: {bad or 'none'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
