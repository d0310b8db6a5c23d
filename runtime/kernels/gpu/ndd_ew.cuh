// ndd_ew.cuh: the element-wise operations of generated kernels (runtime/kernels/gpu/
// elementwise.py), with the semantics of runtime/kernels/cpu/arithmetic.py (numpy's, as DALI's
// arithmetic expressions): integers wrap, f16 is computed in float32 and rounded to nearest
// even, min/max/clamp follow DALI's NaN rules, comparisons of integers are exact across
// signedness.
#pragma once
#include "ndd_common.cuh"

// numpy's astype / the arithmetic kernels' cast: like ndd_cast except float -> bool is
// |x| >= 0.5 (NaN -> false) and float16 results round ties to even
template <class D> struct ndd_acast_to {
  template <class S> static NDD_DEV D from(S x) { return ndd_cast<D>(x); }
};
template <> struct ndd_acast_to<b1> {
  template <class S> static NDD_DEV b1 from(S x) { return ndd_cast<b1>(x); }
  static NDD_DEV b1 from(f64 x) { b1 o; o.v = (x >= 0.5 || x <= -0.5) ? 1 : 0; return o; }
  static NDD_DEV b1 from(f32 x) { return from((f64)x); }
  static NDD_DEV b1 from(f16 x) { return from((f64)f16_to_f32(x)); }
};
template <> struct ndd_acast_to<f16> {
  template <class S> static NDD_DEV f16 from(S x) { return f64_to_f16((f64)x, false); }
  static NDD_DEV f16 from(b1 x) { return ndd_cast<f16>(x); }
  static NDD_DEV f16 from(f16 x) { return x; }
};
template <class D, class S> NDD_DEV D ndd_acast(S x) { return ndd_acast_to<D>::from(x); }

NDD_DEV i64 ndd_ival(b1 x) { return x.v; }
template <class T> NDD_DEV T ndd_ival(T x) { return x; }

// numpy's astype of an operand to the op's dtype: integers convert modulo 2^bits (C's
// conversion), everything else as ndd_acast
template <class D, class S, bool INTS = !ndd_kind<D>::is_float && !ndd_kind<S>::is_float>
struct ndd_astype_to { static NDD_DEV D from(S x) { return ndd_acast<D>(x); } };
template <class D, class S> struct ndd_astype_to<D, S, true> {
  static NDD_DEV D from(S x) { return (D)(u64)ndd_ival(x); }
};
template <> struct ndd_astype_to<b1, b1, true> { static NDD_DEV b1 from(b1 x) { return x; } };
template <class S> struct ndd_astype_to<b1, S, true> {
  static NDD_DEV b1 from(S x) { return ndd_cast<b1>(x); }
};
template <class D, class S> NDD_DEV D ndd_astype(S x) { return ndd_astype_to<D, S>::from(x); }

NDD_DEV f16 ndd_h(f32 x) { return f64_to_f16((f64)x, false); }
NDD_DEV f32 ndd_f(f16 x) { return f16_to_f32(x); }

// wrapping integer arithmetic (through u64: no signed overflow), float arithmetic as is
#define NDD_EW_ARITH(name, OP) \
  template <class T> NDD_DEV T name(T a, T b) { return (T)((u64)a OP (u64)b); } \
  template <> NDD_DEV f32 name(f32 a, f32 b) { return a OP b; } \
  template <> NDD_DEV f64 name(f64 a, f64 b) { return a OP b; } \
  template <> NDD_DEV f16 name(f16 a, f16 b) { return ndd_h(ndd_f(a) OP ndd_f(b)); }
NDD_EW_ARITH(ew_add, +)
NDD_EW_ARITH(ew_sub, -)
NDD_EW_ARITH(ew_mul_num, *)
template <class T> NDD_DEV T ew_mul(T a, T b) { return ew_mul_num(a, b); }
template <> NDD_DEV b1 ew_mul(b1 a, b1 b) { b1 o; o.v = (a.v && b.v) ? 1 : 0; return o; }

template <class T> NDD_DEV T ew_div(T a, T b) { return a / b; }
template <> NDD_DEV f16 ew_div(f16 a, f16 b) { return ndd_h(ndd_f(a) / ndd_f(b)); }

// negation and absolute value
template <class T> NDD_DEV T ew_neg(T a) { return (T)(0ull - (u64)a); }
template <> NDD_DEV f32 ew_neg(f32 a) { return -a; }
template <> NDD_DEV f64 ew_neg(f64 a) { return -a; }
template <> NDD_DEV f16 ew_neg(f16 a) { f16 o; o.bits = (u16)(a.bits ^ 0x8000u); return o; }
template <class T> NDD_DEV T ew_abs(T a) { return a < (T)0 ? ew_neg(a) : a; }
template <> NDD_DEV f16 ew_abs(f16 a) { return ndd_f(a) < 0.0f ? ew_neg(a) : a; }

// DALI's min/max (a < b ? a : b) and clamp (std::max(x, lo) then std::min(., hi))
template <class T> NDD_DEV f64 ndd_val(T x) { return (f64)x; }
template <> NDD_DEV f64 ndd_val(f16 x) { return (f64)ndd_f(x); }
template <class T> NDD_DEV T ew_min(T a, T b) { return ndd_val(a) < ndd_val(b) ? a : b; }
template <class T> NDD_DEV T ew_max(T a, T b) { return ndd_val(a) > ndd_val(b) ? a : b; }
// integer min/max exactly (no double rounding of 64-bit values)
#define NDD_EW_IMINMAX(T) \
  template <> NDD_DEV T ew_min(T a, T b) { return a < b ? a : b; } \
  template <> NDD_DEV T ew_max(T a, T b) { return a > b ? a : b; }
NDD_EW_IMINMAX(i64)
NDD_EW_IMINMAX(u64)
NDD_EW_IMINMAX(i32)
NDD_EW_IMINMAX(u32)
template <class T> NDD_DEV T ew_clamp(T x, T lo, T hi) {
  T t = ndd_val(x) < ndd_val(lo) ? lo : x;
  return ndd_val(hi) < ndd_val(t) ? hi : t;
}

// float functions in the result's own precision (f16 through float32)
#define NDD_EW_FN(name, F32, F64) \
  NDD_DEV f32 name(f32 a) { return F32(a); } \
  NDD_DEV f64 name(f64 a) { return F64(a); } \
  NDD_DEV f16 name(f16 a) { return ndd_h(F32(ndd_f(a))); }
NDD_EW_FN(ew_sqrt, sqrtf, sqrt)
NDD_EW_FN(ew_floor, floorf, floor)
NDD_EW_FN(ew_ceil, ceilf, ceil)
NDD_EW_FN(ew_fabs, fabsf, fabs)
NDD_EW_FN(ew_exp, expf, exp)
NDD_EW_FN(ew_log, logf, log)
NDD_EW_FN(ew_log2, log2f, log2)
NDD_EW_FN(ew_log10, log10f, log10)
NDD_EW_FN(ew_sin, sinf, sin)
NDD_EW_FN(ew_cos, cosf, cos)
NDD_EW_FN(ew_tan, tanf, tan)
NDD_EW_FN(ew_asin, asinf, asin)
NDD_EW_FN(ew_acos, acosf, acos)
NDD_EW_FN(ew_atan, atanf, atan)
NDD_EW_FN(ew_sinh, sinhf, sinh)
NDD_EW_FN(ew_cosh, coshf, cosh)
NDD_EW_FN(ew_tanh, tanhf, tanh)
NDD_EW_FN(ew_asinh, asinhf, asinh)
NDD_EW_FN(ew_acosh, acoshf, acosh)
NDD_EW_FN(ew_atanh, atanhf, atanh)
NDD_EW_FN(ew_cbrt, cbrtf, cbrt)
NDD_DEV f32 ew_rsqrt(f32 a) { return 1.0f / sqrtf(a); }
NDD_DEV f64 ew_rsqrt(f64 a) { return 1.0 / sqrt(a); }
// numpy: sqrt rounded to float16, then its reciprocal rounded again
NDD_DEV f16 ew_rsqrt(f16 a) { return ndd_h(1.0f / ndd_f(ndd_h(sqrtf(ndd_f(a))))); }
#define NDD_EW_FN2(name, F32, F64) \
  NDD_DEV f32 name(f32 a, f32 b) { return F32(a, b); } \
  NDD_DEV f64 name(f64 a, f64 b) { return F64(a, b); } \
  NDD_DEV f16 name(f16 a, f16 b) { return ndd_h(F32(ndd_f(a), ndd_f(b))); }
NDD_EW_FN2(ew_pow, powf, pow)
NDD_EW_FN2(ew_atan2, atan2f, atan2)

// bitwise operators on integers and bools
#define NDD_EW_BIT(name, OP) \
  template <class T> NDD_DEV T name(T a, T b) { return (T)(a OP b); } \
  template <> NDD_DEV b1 name(b1 a, b1 b) { b1 o; o.v = (u8)(a.v OP b.v); return o; }
NDD_EW_BIT(ew_and, &)
NDD_EW_BIT(ew_or, |)
NDD_EW_BIT(ew_xor, ^)

template <class T> NDD_DEV T ew_invert(T a) { return (T)~a; }
template <> NDD_DEV b1 ew_invert(b1 a) { b1 o; o.v = a.v ? 0 : 1; return o; }

// comparisons: integers exactly across signedness (DALI's safe_compare), floats as given
#define NDD_EW_CMP(name, OP) \
  template <class A, class B> NDD_DEV b1 name##_int(A a0, B b0) { \
    auto a = ndd_ival(a0); auto b = ndd_ival(b0); b1 o; \
    bool sa = ndd_kind<decltype(a)>::is_signed, sb = ndd_kind<decltype(b)>::is_signed; \
    if (sa && !sb) o.v = ((i64)a < 0) ? (0 OP 1) : ((u64)a OP (u64)b); \
    else if (!sa && sb) o.v = ((i64)b < 0) ? (1 OP 0) : ((u64)a OP (u64)b); \
    else if (sa) o.v = ((i64)a OP (i64)b); \
    else o.v = ((u64)a OP (u64)b); \
    return o; \
  } \
  template <class T> NDD_DEV b1 name##_flt(T a, T b) { b1 o; o.v = ndd_val(a) OP ndd_val(b); return o; }
NDD_EW_CMP(ew_eq, ==)
NDD_EW_CMP(ew_ne, !=)
NDD_EW_CMP(ew_lt, <)
NDD_EW_CMP(ew_le, <=)
NDD_EW_CMP(ew_gt, >)
NDD_EW_CMP(ew_ge, >=)

// shifts in the width W the C++ code computes in (int32 for narrower types), the count masked
// to that width (x86), a left shift wrapping (through u64: no signed overflow)
template <class W> NDD_DEV W ew_lshift(W v, W c) {
  return (W)((u64)v << ((u64)c & (sizeof(W) * 8 - 1)));
}
template <class W> NDD_DEV W ew_rshift(W v, W c) {
  return (W)(v >> ((u64)c & (sizeof(W) * 8 - 1)));
}

// integer ** : square and multiply modulo 2^64 (the low bits are those of numpy's loop in the
// type itself); a negative exponent gives 0 (the CPU kernel's rule)
template <class T> NDD_DEV T ew_ipow(T a, T b) {
  if (ndd_kind<T>::is_signed && (i64)b < 0) return (T)0;
  u64 r = 1, x = (u64)a, e = (u64)b;
  while (e) {
    if (e & 1ull) r *= x;
    x *= x;
    e >>= 1;
  }
  return (T)r;
}

// float % : fmod computed in double (exact), then rounded to the result type
NDD_DEV f64 ew_fmod64(f64 a, f64 b) { return fmod(a, b); }
