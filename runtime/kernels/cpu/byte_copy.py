"""Fixed-size copies between flat arrays in compiled code, as one ``memcpy`` of a constant size.

A loop of one-element copies (``dst[j + k] = src[i + k]`` for ``k < 6``: the two taps of a
3-channel uint8 pixel) is six loads and six stores; LLVM turns a ``memcpy`` of 6 bytes into one
4-byte and one 2-byte move, unaligned. Copies move bytes: the result does not depend on the CPU.
"""
from __future__ import annotations

from .jit import pin_identity

__all__ = ["copier", "span_copier"]

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
