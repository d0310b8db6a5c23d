"""Copies between flat arrays in compiled code as one ``memcpy`` (of a constant size, or of a
run), and cache prefetch hints.

A loop of one-element copies (``dst[j + k] = src[i + k]`` for ``k < 6``: the two taps of a
3-channel uint8 pixel) is six loads and six stores; LLVM turns a ``memcpy`` of 6 bytes into one
4-byte and one 2-byte move, unaligned. Copies move bytes and prefetches change no value: the
results do not depend on the CPU.
"""
from __future__ import annotations

from .jit import pin_identity

__all__ = ["copier", "span_copier", "prefetcher"]

_COPIERS: dict = {}


def copier(n: int):
    """An ``@intrinsic`` ``copy(src, i, dst, j)`` for compiled code: ``dst[j:j + n] =
    src[i:i + n]`` for 1-D C-contiguous arrays of one dtype (no bounds checks: the caller keeps
    both ranges inside)."""
    n = int(n)
    if n not in _COPIERS:
        _COPIERS[n] = _make(n)
    return _COPIERS[n]


def _make(n: int):
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    def copy(typingctx, src, i, dst, j):
        if not (isinstance(src, types.Array) and isinstance(dst, types.Array)
                and src.ndim == 1 and dst.ndim == 1 and src.layout == "C"
                and dst.layout == "C" and src.dtype == dst.dtype
                and isinstance(i, types.Integer) and isinstance(j, types.Integer)):
            return None
        sig = types.void(src, i, dst, j)

        def codegen(context, builder, signature, args):
            s, si, d, dj = args
            sty, ity, dty, jty = signature.args
            sp = builder.gep(context.make_array(sty)(context, builder, s).data,
                             [context.cast(builder, si, ity, types.intp)])
            dp = builder.gep(context.make_array(dty)(context, builder, d).data,
                             [context.cast(builder, dj, jty, types.intp)])
            size = context.get_abi_sizeof(context.get_data_type(sty.dtype))
            cgutils.raw_memcpy(builder, dp, sp, ir.Constant(ir.IntType(64), n), size, align=1)
            return context.get_dummy_value()
        return sig, codegen
    copy.__qualname__ = f"copy_{n}"
    return pin_identity(intrinsic(copy), copy)


def _make_span():
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    def copy_span(typingctx, src, i, dst, j, n):
        if not (isinstance(src, types.Array) and isinstance(dst, types.Array)
                and src.ndim == 1 and dst.ndim == 1 and src.layout == "C"
                and dst.layout == "C" and src.dtype == dst.dtype
                and all(isinstance(t, types.Integer) for t in (i, j, n))):
            return None
        sig = types.void(src, i, dst, j, n)

        def codegen(context, builder, signature, args):
            s, si, d, dj, cnt = args
            sty, ity, dty, jty, nty = signature.args
            sp = builder.gep(context.make_array(sty)(context, builder, s).data,
                             [context.cast(builder, si, ity, types.intp)])
            dp = builder.gep(context.make_array(dty)(context, builder, d).data,
                             [context.cast(builder, dj, jty, types.intp)])
            size = context.get_abi_sizeof(context.get_data_type(sty.dtype))
            cgutils.raw_memcpy(builder, dp, sp, context.cast(builder, cnt, nty, types.intp),
                               size, align=1)
            return context.get_dummy_value()
        return sig, codegen
    return pin_identity(intrinsic(copy_span), copy_span)


_SPAN = []


def span_copier():
    """An ``@intrinsic`` ``copy(src, i, dst, j, n)`` for compiled code: ``dst[j:j + n] =
    src[i:i + n]`` as one ``memcpy`` (1-D C-contiguous arrays of one dtype, ranges that do not
    overlap, no bounds checks)."""
    if not _SPAN:
        _SPAN.append(_make_span())
    return _SPAN[0]


def _make_prefetch():
    from llvmlite import ir
    from numba.core import types
    from numba.extending import intrinsic

    def prefetch(typingctx, arr, i):
        if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.layout == "C"
                and isinstance(i, types.Integer)):
            return None
        sig = types.void(arr, i)

        def codegen(context, builder, signature, args):
            a, idx = args
            aty, ity = signature.args
            p = builder.gep(context.make_array(aty)(context, builder, a).data,
                            [context.cast(builder, idx, ity, types.intp)])
            i8p = ir.IntType(8).as_pointer()
            i32 = ir.IntType(32)
            fn = builder.module.declare_intrinsic(
                "llvm.prefetch", [i8p], ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]))
            # read, high locality, data cache
            builder.call(fn, [builder.bitcast(p, i8p), ir.Constant(i32, 0),
                              ir.Constant(i32, 3), ir.Constant(i32, 1)])
            return context.get_dummy_value()
        return sig, codegen
    return pin_identity(intrinsic(prefetch), prefetch)


_PREFETCH = []


def prefetcher():
    """An ``@intrinsic`` ``prefetch(arr, i)`` for compiled code: a hint to bring the cache line
    of ``arr[i]`` in (LLVM's ``llvm.prefetch``; no effect on any value, never faults)."""
    if not _PREFETCH:
        _PREFETCH.append(_make_prefetch())
    return _PREFETCH[0]
