"""One generated CUDA kernel per element-wise program: ``arithmetic``, ``elementwise_fused`` (GPU).

The compiler's element-wise fusion (``compiler/fusion_rules.py``, ``_rewrite_elementwise``) turns
a chain of arithmetic / ``ndd.math`` / ``cast`` nodes into one ``elementwise_fused`` node whose
``program`` is a tuple of steps ``(op, operands, dtype)``; an operand is ``("t", k)`` (input
``k``), ``("r", j)`` (step ``j``'s result) or ``("s", value)`` (a Python scalar). The CPU kernel
(``runtime/kernels/cpu/arithmetic.py``, ``elementwise_fused``) evaluates the steps one array at a
time. :func:`generate` turns the same program and the inputs' dtypes into one CUDA source whose
kernel evaluates every step per element, in registers, with the CPU's rounding at every step:
the natural dtype of each op from :mod:`compiler.promotion`, the operands converted to it as
numpy does, float16 computed in float32 and rounded, the step's ``dtype`` reached with the
arithmetic kernels' cast, ``cast`` steps with DALI's cast (``ndd_ew.cuh``, ``ndd_common.cuh``).
Inputs broadcast against each other per sample (numpy rules); a one-sample input (a Tensor
operand) is broadcast over the batch.

Exactness: the host build of the generated source equals the CPU kernel bit for bit for every
supported op. On a GPU the ops in :data:`DEVICE_INEXACT` call CUDA's math library, whose results
may differ from the C library's by an ulp; every other op is exactly rounded and bit-exact there
too. Not generated (:class:`Unsupported`): integer ``//`` and ``%`` (a zero divisor must raise,
which a kernel cannot).
"""
from __future__ import annotations

import hashlib

import numpy as np

from compiler import promotion
from runtime.kernels.registry import register

from .launch import address, get_kernel, launch_batch

__all__ = ["Unsupported", "generate", "Generated", "DEVICE_INEXACT", "MAX_DIMS", "run_program",
           "CTYPES"]

#: most axes of the broadcast output after coalescing
MAX_DIMS = 6

#: numpy dtype name -> C type of ndd_common.cuh
CTYPES = {"bool": "b1", "int8": "i8", "uint8": "u8", "int16": "i16", "uint16": "u16",
          "int32": "i32", "uint32": "u32", "int64": "i64", "uint64": "u64", "float16": "f16",
          "float32": "f32", "float64": "f64"}

_LIBM1 = ("exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
          "cosh", "tanh", "asinh", "acosh", "atanh", "cbrt")
_LIBM2 = {"pow": "ew_pow", "fpow": "ew_pow", "atan2": "ew_atan2"}
_EXACT1 = {"sqrt": "ew_sqrt", "floor": "ew_floor", "ceil": "ew_ceil", "fabs": "ew_fabs",
           "rsqrt": "ew_rsqrt"}
_ARITH2 = {"add": "ew_add", "sub": "ew_sub", "mul": "ew_mul", "truediv": "ew_div",
           "min": "ew_min", "max": "ew_max", "and": "ew_and", "or": "ew_or", "xor": "ew_xor"}
_SAME1 = {"neg": "ew_neg", "abs": "ew_abs", "invert": "ew_invert"}
_CMP = ("eq", "ne", "lt", "le", "gt", "ge")

#: ops whose GPU result comes from CUDA's math library (may differ from the CPU's C library)
DEVICE_INEXACT = frozenset(_LIBM1) | {"pow", "fpow", "atan2"}


class Unsupported(NotImplementedError):
    """The program uses an op (or dtype) the generator does not handle."""


def _is_float(dt):
    return dt in ("float16", "float32", "float64")


def _conv(expr, src, dst, saturate=False):
    """``expr`` of dtype ``src`` as ``dst``: numpy's astype (operands), or with ``saturate`` the
    arithmetic kernels' cast of a result (round half away, saturate)."""
    if src == dst:
        return expr
    return f"ndd_{'acast' if saturate else 'astype'}<{CTYPES[dst]}>({expr})"


def _scalar(value, promoted):
    sdt = promotion.scalar_dtype(value)
    if sdt == "float32" and promoted == "float64":
        sdt = "float64"
    if sdt == "bool":
        return ("ndd_cast<b1>(1)" if value else "ndd_cast<b1>(0)"), sdt
    if sdt == "int32":
        return f"((i32){int(value)})", sdt
    if sdt == "float32":
        return f"ndd_bits_f32(0x{int(np.float32(value).view(np.uint32)):08x}u)", sdt
    return f"ndd_bits_f64(0x{int(np.float64(value).view(np.uint64)):016x}ull)", sdt


def _step_expr(op, vals, dts):
    """C expression and result dtype of one arithmetic op (the CPU's NUMPY_IMPL semantics)."""
    name = promotion.canonical_op(op)
    info = promotion.OPS[name]
    if len(vals) != info.arity:
        raise Unsupported(f"op {name!r}: expected {info.arity} operands, got {len(vals)}")
    natural = promotion.infer_dtype(name, dts)
    if name in _CMP:
        if all(d == "bool" or not _is_float(d) for d in dts):
            return f"ew_{name}_int({vals[0]}, {vals[1]})", "bool"
        p = promotion.binary_promotion(dts[0], dts[1])
        return f"ew_{name}_flt({_conv(vals[0], dts[0], p)}, {_conv(vals[1], dts[1], p)})", "bool"
    if name == "pos":
        return vals[0], dts[0]
    if name in _SAME1:
        return f"{_SAME1[name]}({vals[0]})", dts[0]
    conv = [_conv(v, d, natural) for v, d in zip(vals, dts)]
    if name in ("lshift", "rshift"):
        wide = "int32" if natural == "bool" or np.dtype(natural).itemsize < 4 else natural
        v, c = (_conv(_conv(x, d, natural), natural, wide) for x, d in zip(vals, dts))
        expr = f"ew_{name}({v}, {c})"
        if natural == "bool":
            return f"ndd_cast<b1>({expr})", "bool"
        return _conv(expr, wide, natural), natural
    if natural == "bool" and name not in ("and", "or", "xor", "mul"):
        raise Unsupported(f"op {name!r} on bool values is not generated for the GPU")
    if name == "pow" and not _is_float(natural):
        return f"ew_ipow({conv[0]}, {conv[1]})", natural
    if name in ("floordiv", "mod") and not _is_float(natural):
        raise Unsupported(f"integer {name!r} is not generated (a zero divisor must raise, as "
                          f"the CPU kernel does)")
    if name == "floordiv":
        return f"ew_div({conv[0]}, {conv[1]})", natural
    if name == "mod":
        a, b = (_conv(v, d, "float64") for v, d in zip(vals, dts))
        return _conv(f"ew_fmod64({a}, {b})", "float64", natural, saturate=True), natural
    if name in _ARITH2:
        return f"{_ARITH2[name]}({conv[0]}, {conv[1]})", natural
    if name == "clamp":
        return f"ew_clamp({conv[0]}, {conv[1]}, {conv[2]})", natural
    if name in _EXACT1:
        return f"{_EXACT1[name]}({conv[0]})", natural
    if name in _LIBM1 or name in _LIBM2:
        work = "float32" if natural == "float16" else natural
        args = ", ".join(_conv(v, d, work) for v, d in zip(vals, dts))
        fn = f"ew_{name}" if name in _LIBM1 else _LIBM2[name]
        return _conv(f"{fn}({args})", work, natural, saturate=True), natural
    raise Unsupported(f"op {name!r} is not generated for the GPU")


class Generated:
    """A generated kernel: ``source``, kernel ``name``, ``out_dtype``, number of ``inputs``,
    the inputs the result depends on (``used``: the output has their broadcast shape)."""

    __slots__ = ("source", "name", "out_dtype", "inputs", "used", "desc_words")

    def __init__(self, source, name, out_dtype, inputs, used):
        self.source, self.name, self.out_dtype, self.inputs = source, name, out_dtype, inputs
        self.used = used
        self.desc_words = 3 + MAX_DIMS + inputs * (1 + MAX_DIMS)


def generate(program, in_dtypes) -> Generated:
    """One CUDA source evaluating ``program`` per element.

    Parameters
    ----------
    program : sequence of (op, operands, dtype)
        ``elementwise_fused``'s program (see the module docstring).
    in_dtypes : sequence of str
        The dtype of every input ``("t", k)``.

    Returns
    -------
    Generated

    Raises
    ------
    Unsupported
        An op the generator does not handle.
    """
    in_dtypes = [np.dtype(d).name for d in in_dtypes]
    lines, res_dts = [], []
    for j, (op, operands, dt) in enumerate(program):
        dts, vals = [], []
        for o in operands:
            if o[0] == "t":
                vals.append(f"t{o[1]}")
                dts.append(in_dtypes[o[1]])
            elif o[0] == "r":
                vals.append(f"r{o[1]}")
                dts.append(res_dts[o[1]])
            else:
                vals.append(None)
                dts.append(promotion.scalar_dtype(o[1]))
        promoted = dts[0]
        for d in dts[1:]:
            promoted = promotion.binary_promotion(promoted, d)
        for i, o in enumerate(operands):
            if o[0] == "s":
                vals[i], dts[i] = _scalar(o[1], promoted)
        dt = np.dtype(dt).name if dt is not None else None
        if op == "cast":
            expr, rdt = f"ndd_cast<{CTYPES[dt]}>({vals[0]})", dt
        else:
            expr, rdt = _step_expr(op, vals, dts)
            if dt is not None and dt != rdt:
                expr, rdt = _conv(expr, rdt, dt, saturate=True), dt
        if rdt not in CTYPES:
            raise Unsupported(f"dtype {rdt!r} is not supported on the GPU")
        lines.append(f"    {CTYPES[rdt]} r{j} = {expr};")
        res_dts.append(rdt)
    k = len(in_dtypes)
    # the steps and inputs the result depends on (the output has their broadcast shape)
    need, used = {len(program) - 1}, set()
    for j in range(len(program) - 1, -1, -1):
        if j in need:
            for o in program[j][1]:
                if o[0] == "r":
                    need.add(o[1])
                elif o[0] == "t":
                    used.add(o[1])
    lines = [line for j, line in enumerate(lines) if j in need]
    text = repr((tuple(program), tuple(in_dtypes)))
    name = "ew_" + hashlib.sha256(text.encode()).hexdigest()[:16]
    m = MAX_DIMS
    offs = " ".join(f"off{i} += c * d.stride[{i * m} + a];" for i in sorted(used))
    loads = "\n".join(f"    const {CTYPES[dt]} t{i} = (({CTYPES[dt]} const*)d.in_ptr[{i}])[off{i}];"
                      for i, dt in enumerate(in_dtypes) if i in used)
    out_ct = CTYPES[res_dts[-1]]
    source = f"""// generated by runtime/kernels/gpu/elementwise.py from the program
// {text[:2000].replace(chr(10), ' ')}
#include "ndd_ew.cuh"

struct EwDesc_{name} {{
  i64 out_ptr, count, ndim;
  i64 shape[{m}];
  i64 in_ptr[{max(k, 1)}];
  i64 stride[{max(k, 1) * m}];
}};
NDD_EXPORT_SIZE(EwDesc_{name})

template <class I>
__device__ __forceinline__ void {name}_sample(const EwDesc_{name}& d) {{
  {out_ct}* out = ({out_ct}*)d.out_ptr;
  const int nd = (int)d.ndim;
  NDD_SAMPLE_LOOP_T(I, d.count, idx) {{
    I rest = idx;
    {" ".join(f"i64 off{i} = 0;" for i in sorted(used))}
    for (int a = nd - 1; a >= 0; --a) {{
      const i64 c = (i64)(rest % (I)d.shape[a]);
      rest /= (I)d.shape[a];
      {offs}
    }}
{loads}
{chr(10).join(lines)}
    out[idx] = r{len(program) - 1};
  }}
}}

extern "C" __global__ void {name}(const EwDesc_{name}* __restrict__ descs, int n) {{
  if ((int)blockIdx.y >= n) return;
  const EwDesc_{name}& d = descs[blockIdx.y];
  if (d.count <= NDD_SMALL_INDEX_MAX) {name}_sample<u32>(d);
  else {name}_sample<i64>(d);
}}
NDD_EXPORT({name})
"""
    return Generated(source, name, np.dtype(res_dts[-1]), k, tuple(sorted(used)))


def _coalesce(shape, strides_list):
    """Merge output axes every input walks contiguously; drop extent-1 axes."""
    axes = [(s, [st[a] for st in strides_list]) for a, s in enumerate(shape) if s != 1]
    merged = []
    for s, st in axes:
        if merged and all(p == q * s for p, q in zip(merged[-1][1], st)):
            merged[-1] = (merged[-1][0] * s, st)
        else:
            merged.append((s, st))
    if not merged:
        merged = [(1, [0] * len(strides_list))]
    if len(merged) > MAX_DIMS:
        raise Unsupported(f"a generated kernel handles at most {MAX_DIMS} non-mergeable axes")
    return [a[0] for a in merged], [[a[1][i] for a in merged] for i in range(len(strides_list))]


def run_program(ctx, gen: Generated, inputs, n) -> list:
    """Run a generated kernel over a batch of ``n`` samples (one launch).

    ``inputs[k]`` is input ``k``'s list of per-sample device arrays (one sample: broadcast over
    the batch). Returns the per-sample outputs (``ctx.empty`` arrays).
    """
    descs = np.zeros((n, gen.desc_words), np.int64)
    outs, reads = [], []
    m, k = MAX_DIMS, gen.inputs
    for i in range(n):
        arrs = [inp[i] if len(inp) > 1 else inp[0] for inp in inputs]
        try:
            shape = np.broadcast_shapes(*(tuple(arrs[j].shape) for j in gen.used))
        except ValueError:
            shapes = ", ".join(str(tuple(a.shape)) for a in arrs)
            raise ValueError(f"sample {i}: operand shapes {shapes} cannot be broadcast "
                             f"together") from None
        strides = []
        for a in arrs:
            item = np.dtype(a.dtype).itemsize
            own = [s // item for s in a.strides]
            pad = len(shape) - len(a.shape)
            if pad < 0:       # an input the result does not read
                strides.append([0] * len(shape))
                continue
            strides.append([0 if (ax < pad or a.shape[ax - pad] == 1) else own[ax - pad]
                            for ax in range(len(shape))])
        out = ctx.empty(tuple(shape), gen.out_dtype)
        outs.append(out)
        reads.extend(arrs)
        cshape, cstrides = _coalesce(list(shape), strides)
        row = descs[i]
        row[0:3] = (address(out), int(np.prod(shape)), len(cshape))
        row[3:3 + len(cshape)] = cshape
        for j, a in enumerate(arrs):
            row[3 + m + j] = address(a)
            row[3 + m + k + j * m:3 + m + k + j * m + len(cshape)] = cstrides[j]
    if n:
        kernel = get_kernel(ctx, gen.name, gen.source, gen.name)
        launch_batch(ctx, kernel, descs, int(descs[:, 1].max()), reads=reads, writes=outs)
    return outs


def _run(ctx, inputs, program):
    dtypes = [m.dtype for m in ctx.in_metas]
    gen = generate(program, dtypes)
    return [ctx.samples(run_program(ctx, gen, inputs, ctx.batch_size))]


@register("elementwise_fused", "gpu")
def elementwise_fused_kernel(ctx, inputs, args):
    """``elementwise_fused`` on the GPU: the program as one generated kernel, one launch."""
    return _run(ctx, inputs, args["program"])


@register("arithmetic", "gpu")
def arithmetic_kernel(ctx, inputs, args):
    """``arithmetic`` on the GPU: a one-step program (operands ``("t", k)`` / ``("s", v)``)."""
    step = (args["op"], tuple(args["operands"]), ctx.out_metas[0].dtype)
    return _run(ctx, inputs, [step])
