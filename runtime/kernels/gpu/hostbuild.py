"""The CUDA kernels built as host C++ through ``host_shim.h``: the same sources, run on the CPU.

:func:`host_module` compiles a kernel source with g++ (``-include host_shim.h``, C++17,
``-ffp-contract=off`` and no fast math, mirroring the device build's ``--fmad=false``) into a
shared library, cached under ``$TMPDIR/ndd-gpu-host`` by the hash of the source, the shim and the
flags, and loads it with ctypes. :class:`HostKernel` calls one kernel with cupy's launch
convention, ``kernel(grid, block, args)``: device arrays in ``args`` are numpy arrays (or any
object with ``.host``, a numpy view: the fake GPU's arrays), scalars are numpy scalars.

This is what the offline tests compare with the CPU kernels, and what the fake GPU layer runs
kernels with.
"""
from __future__ import annotations

import ctypes
import os
import pathlib
import shutil
import subprocess
import tempfile
import threading

import numpy as np

from runtime.kernels.registry import KernelContext

from .compile import SOURCE_DIR, source_hash

__all__ = ["HostKernel", "HostModule", "HostContext", "host_module", "host_bundle",
           "host_compiler", "address", "HOST_FLAGS", "HOST_MAX_BLOCKS_X"]

#: g++ flags of the host build (exactness: no contraction, no fast math, IEEE semantics)
HOST_FLAGS = ("-std=c++17", "-O1", "-fPIC", "-shared", "-ffp-contract=off", "-fno-fast-math",
              "-w")

_lock = threading.Lock()
_loaded: dict = {}

_SCALARS = {
    np.dtype(np.int32): ctypes.c_int32, np.dtype(np.int64): ctypes.c_int64,
    np.dtype(np.uint32): ctypes.c_uint32, np.dtype(np.uint64): ctypes.c_uint64,
    np.dtype(np.float32): ctypes.c_float, np.dtype(np.float64): ctypes.c_double,
}


def host_compiler() -> str | None:
    """The C++ compiler of the host build (``$CXX`` or g++), or None when there is none."""
    return shutil.which(os.environ.get("CXX", "g++"))


def address(arr) -> int:
    """The address of a device array's first element: cupy's ``data.ptr``; for the host build,
    a numpy array's (or a fake device array's ``.host``) data pointer."""
    host = getattr(arr, "host", None)
    if host is not None:
        return host.ctypes.data
    if isinstance(arr, np.ndarray):
        return arr.ctypes.data
    return arr.data.ptr


#: the host build runs at most this many blocks along x: every kernel strides over its
#: sample's elements by ``blockDim.x * gridDim.x``, so a smaller grid computes the same
#: results (still with several blocks, so the striding is exercised), far faster on the CPU
HOST_MAX_BLOCKS_X = 4


class HostKernel:
    """One kernel of a :class:`HostModule`, called as ``kernel(grid, block, args)`` (the x grid
    capped at :data:`HOST_MAX_BLOCKS_X`)."""

    __slots__ = ("name", "fn", "_keep")

    def __init__(self, name, fn, keep):
        self.name, self.fn, self._keep = name, fn, keep

    def __call__(self, grid, block, args, shared_mem=0, **_):
        grid = tuple(grid) + (1,) * (3 - len(grid))
        grid = (min(int(grid[0]), HOST_MAX_BLOCKS_X),) + tuple(grid[1:])
        block = tuple(block) + (1,) * (3 - len(block))
        dims = (ctypes.c_uint * 6)(*grid, *block)
        holders = []
        for a in args:
            if isinstance(a, np.generic):
                holders.append(_SCALARS[a.dtype](a.item()))
            elif isinstance(a, (bool, int, float)):
                raise TypeError(f"kernel {self.name}: pass numpy scalars, not {type(a).__name__}")
            else:
                holders.append(ctypes.c_void_p(address(a)))
        ptrs = (ctypes.c_void_p * max(1, len(holders)))(
            *[ctypes.cast(ctypes.pointer(h), ctypes.c_void_p) for h in holders])
        self.fn(dims, ptrs)


class HostModule:
    """A kernel source built as a host library; ``get_function(name)`` like cupy's RawModule."""

    def __init__(self, path: pathlib.Path):
        self.path = path
        self.lib = ctypes.CDLL(str(path))

    def get_function(self, name: str) -> HostKernel:
        """The kernel ``name`` (its ``NDD_EXPORT``-ed entry point ``ndd_host_<name>``)."""
        fn = getattr(self.lib, f"ndd_host_{name}")
        fn.restype = None
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        return HostKernel(name, fn, self)

    def sizeof(self, struct: str) -> int:
        """``sizeof(struct)`` of a descriptor the source declared with ``NDD_EXPORT_SIZE``."""
        fn = getattr(self.lib, f"ndd_sizeof_{struct}")
        fn.restype = ctypes.c_longlong
        return int(fn())


def _cache_dir() -> pathlib.Path:
    d = pathlib.Path(os.environ.get("NDD_GPU_HOST_CACHE",
                                    pathlib.Path(tempfile.gettempdir()) / "ndd-gpu-host"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def host_module(key: str, source: str) -> HostModule:
    """``source`` built as host C++ (cached on disk by content and in memory by ``key``).

    Raises
    ------
    RuntimeError
        No C++ compiler, or the source does not compile as host C++ (the compiler's messages).
    """
    with _lock:
        mod = _loaded.get(key)
        if mod is not None:
            return mod
        cxx = host_compiler()
        if cxx is None:
            raise RuntimeError("the host build of the GPU kernels needs a C++ compiler (g++)")
        shim = (SOURCE_DIR / "host_shim.h").read_text()
        digest = source_hash(source, shim, " ".join(HOST_FLAGS), cxx)
        lib = _cache_dir() / f"{key}-{digest}.so"
        if not lib.exists():
            with tempfile.TemporaryDirectory(dir=lib.parent) as tmp:
                src = pathlib.Path(tmp) / f"{key}.cpp"
                src.write_text(source)
                out = pathlib.Path(tmp) / "out.so"
                cmd = [cxx, *HOST_FLAGS, "-include", str(SOURCE_DIR / "host_shim.h"),
                       f"-I{SOURCE_DIR}", "-x", "c++", str(src), "-o", str(out)]
                res = subprocess.run(cmd, capture_output=True, text=True)
                if res.returncode != 0:
                    raise RuntimeError(f"host build of {key} failed:\n{res.stderr[-4000:]}")
                os.replace(out, lib)
        mod = HostModule(lib)
        _loaded[key] = mod
        return mod


def host_bundle(key: str, sources: dict) -> HostModule:
    """Build several sources (``{kernel key: source}``, e.g. generated kernels) as one library
    and answer :func:`host_module` for each of their keys with it (one compiler run)."""
    mod = host_module(key, "\n".join(sources[k] for k in sorted(sources)))
    with _lock:
        for k in sources:
            _loaded.setdefault(k, mod)
    return mod


class _HostDevice:
    """The device interface of :class:`HostContext` (only its name is read by the kernels)."""

    name = "host"


class HostContext(KernelContext):
    """A GPU kernel context whose "device" is the host: device arrays are numpy arrays, kernels
    are the host builds of the CUDA sources. The GPU kernels run unchanged on it (the offline
    tests); ``launches`` records ``(kernel name, grid, block)`` of every launch; ``defines``
    (macro -> value) are defined before every source it builds."""

    def __init__(self, *args, defines=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.defines = dict(defines or {})
        self.gpu = _HostDevice()
        self.stream = None
        self.launches: list = []

    def empty(self, shape, dtype):
        """A new (uninitialised) "device" array."""
        return np.empty(shape, dtype)

    def upload(self, host_array):
        """A "device" copy of a host array (descriptors, tables)."""
        return np.array(host_array, copy=True)

    def samples(self, arrays):
        """The output storage: a list of per-sample arrays."""
        return list(arrays)

    def launch(self, kernel, grid, block, args, shared_mem=0, *, reads=(), writes=()):
        """Run ``kernel`` over the grid now."""
        self.launches.append((kernel.name, tuple(grid), tuple(block)))
        kernel(grid, block, args, shared_mem)
