"""runtime/kernels/cpu/jit.py: kernels built on first use; no cache location -> in memory."""
import sys
import warnings

import numba
import pytest

from runtime.kernels.cpu import jit


def test_kernel_built_once_on_first_use():
    builds = []

    @jit.compiled
    def kernel(njit):
        builds.append(1)

        @njit
        def add(a, b):
            return a + b
        return add
    assert builds == []
    assert kernel()(2, 3) == 5 and kernel()(1.5, 2.0) == 3.5
    assert builds == [1]


def test_no_writable_cache_compiles_in_memory_with_one_warning(monkeypatch):
    # numba raises at decoration when no cache locator can write (read-only install and home)
    real = numba.njit

    def njit(*args, **kwargs):
        if kwargs.get("cache"):
            def deco(fn):
                raise RuntimeError(f"cannot cache function {fn.__name__!r}: no locator "
                                   f"available for file 'k.py'")
            return deco
        return real(*args, **kwargs)
    monkeypatch.setattr(numba, "njit", njit)
    monkeypatch.setattr(jit, "_warned", [])

    def build(nj):
        @nj
        def twice(a):
            return 2 * a
        return twice
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first, second = jit.compiled(build), jit.compiled(build)
        assert first()(21) == 42 and second()(4) == 8
    msgs = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(msgs) == 1 and "NUMBA_CACHE_DIR" in msgs[0]


def test_other_errors_are_not_swallowed(monkeypatch):
    @jit.compiled
    def broken(njit):
        raise RuntimeError("something else")
    with pytest.raises(RuntimeError, match="something else"):
        broken()


def test_import_ndd_does_not_import_numba():
    import subprocess
    code = "import sys, ndd; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
