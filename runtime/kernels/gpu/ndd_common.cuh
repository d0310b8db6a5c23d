// ndd_common.cuh: types and DALI's conversions shared by every ndd CUDA kernel.
//
// Compiles three ways: with NVRTC at run time (cupy RawModule, -I this folder), with nvcc
// (`.ci/run`: `nvcc --ptx`), and as host C++ through host_shim.h (NDD_HOST_SHIM defined), where
// the tests check the kernels bit for bit against ndd's CPU kernels. No standard header is
// included on the device side (NVRTC has none); the host shim brings <cmath> and <cstring>.
//
// Exactness: every kernel is built with --fmad=false --ftz=false --prec-div=true
// --prec-sqrt=true (runtime/kernels/gpu/compile.py, OPTIONS), and the host build with
// -ffp-contract=off and no -ffast-math, so both evaluate a*b+c as two rounded operations, keep
// subnormals and divide/sqrt correctly rounded, as numpy and torch do on the CPU.
#pragma once

#ifndef NDD_HOST_SHIM
#define NDD_DEV __device__ __forceinline__
#define NDD_EXPORT(name)
#define NDD_EXPORT_SIZE(T)
#endif

typedef signed char i8;
typedef unsigned char u8;
typedef short i16;
typedef unsigned short u16;
typedef int i32;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;
typedef float f32;
typedef double f64;

// float16 and bool as storage types of their own (2 bytes / 1 byte), so that conversions can be
// chosen by type; all arithmetic on f16 happens in float32, as numpy and DALI do.
struct f16 { u16 bits; };
struct b1 { u8 v; };

NDD_DEV u64 ndd_f64_bits(f64 x) { return (u64)__double_as_longlong(x); }
NDD_DEV f64 ndd_bits_f64(u64 b) { return __longlong_as_double((i64)b); }
NDD_DEV u32 ndd_f32_bits(f32 x) { return __float_as_uint(x); }
NDD_DEV f32 ndd_bits_f32(u32 b) { return __uint_as_float(b); }
NDD_DEV bool ndd_isnan(f64 x) { return x != x; }

// ------------------------------------------------------------------ float16
NDD_DEV f32 f16_to_f32(f16 h) {
  u32 sign = (u32)(h.bits & 0x8000u) << 16;
  u32 e = (h.bits >> 10) & 0x1Fu, m = h.bits & 0x3FFu;
  if (e == 31) return ndd_bits_f32(sign | 0x7F800000u | (m << 13));
  if (e == 0) {
    // subnormal (or zero): m * 2^-24, exact in float32
    f32 v = (f32)m * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return ndd_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

// double -> float16, round to nearest; ties to even (ties_away == false: IEEE, numpy's astype)
// or away from zero (ties_away == true: DALI's float16 conversion, ndd's cast).
NDD_DEV f16 f64_to_f16(f64 x, bool ties_away) {
  u64 b = ndd_f64_bits(x);
  u16 sign = (u16)((b >> 48) & 0x8000u);
  u32 E = (u32)((b >> 52) & 0x7FFu);
  u64 M = b & 0xFFFFFFFFFFFFFull;
  f16 out;
  if (E == 0x7FF) {                 // inf / NaN
    out.bits = (u16)(sign | 0x7C00u | (M ? 0x200u : 0u));
    return out;
  }
  if (E == 0) { out.bits = sign; return out; }   // zero or double subnormal: below f16's range
  M |= 1ull << 52;
  int e = (int)E - 1023;
  int shift;                        // bits of M dropped
  int exp16;                        // biased f16 exponent of the result before carry
  if (e >= -14) { shift = 42; exp16 = e + 15; }
  else { shift = 28 - e; exp16 = 0; }   // subnormal: units of 2^-24
  u64 r;
  if (shift > 63) {
    r = 0;
  } else {
    u64 half = 1ull << (shift - 1);
    u64 rem = M & ((1ull << shift) - 1);
    r = M >> shift;
    if (rem > half || (rem == half && (ties_away || (r & 1ull)))) r += 1;
  }
  if (exp16 == 0) {                 // subnormal result; r == 1024 is the smallest normal
    out.bits = (u16)(sign | r);
    return out;
  }
  if (r == 2048) { r = 1024; exp16 += 1; }
  if (exp16 >= 31) { out.bits = (u16)(sign | 0x7C00u); return out; }
  out.bits = (u16)(sign | ((u32)exp16 << 10) | (u32)(r - 1024));
  return out;
}

// ------------------------------------------------------------------ numeric traits
template <class T> struct ndd_lim;
#define NDD_INT_LIMITS(T, LO, HI, HI1) \
  template <> struct ndd_lim<T> { \
    static NDD_DEV T lo() { return (T)(LO); } \
    static NDD_DEV T hi() { return (T)(HI); } \
    /* hi + 1 as a double: a power of two, exact */ \
    static NDD_DEV f64 hi1() { return HI1; } \
  };
NDD_INT_LIMITS(i8, -128, 127, 128.0)
NDD_INT_LIMITS(u8, 0, 255, 256.0)
NDD_INT_LIMITS(i16, -32768, 32767, 32768.0)
NDD_INT_LIMITS(u16, 0, 65535, 65536.0)
NDD_INT_LIMITS(i32, -2147483647 - 1, 2147483647, 2147483648.0)
NDD_INT_LIMITS(u32, 0, 4294967295u, 4294967296.0)
NDD_INT_LIMITS(i64, -9223372036854775807ll - 1, 9223372036854775807ll, 9223372036854775808.0)
NDD_INT_LIMITS(u64, 0, 18446744073709551615ull, 18446744073709551616.0)

// round half away from zero of an integral-or-not double (exact)
NDD_DEV f64 ndd_round_half_away(f64 x) {
  f64 t = trunc(x);
  f64 d = x - t;
  if (d >= 0.5) return t + 1.0;
  if (d <= -0.5) return t - 1.0;
  return t;
}

// float (as double: f16/f32 are exact in it) -> integer: round half away, saturate, NaN -> 0
template <class D> NDD_DEV D ndd_float_to_int(f64 x) {
  if (ndd_isnan(x)) return (D)0;
  f64 r = ndd_round_half_away(x);
  if (r >= ndd_lim<D>::hi1()) return ndd_lim<D>::hi();
  if (r <= (f64)ndd_lim<D>::lo()) return ndd_lim<D>::lo();
  return (D)r;
}

// ------------------------------------------------------------------ DALI's cast (ndd.cast)
// cast<D>(x): float -> int rounds half away and saturates (NaN -> 0); int -> int saturates;
// float -> bool is |x| >= 0.5 or NaN; anything -> float16 rounds ties away from zero.
template <class T> struct ndd_kind { enum { is_float = 0, is_signed = 1 }; };
template <> struct ndd_kind<u8> { enum { is_float = 0, is_signed = 0 }; };
template <> struct ndd_kind<u16> { enum { is_float = 0, is_signed = 0 }; };
template <> struct ndd_kind<u32> { enum { is_float = 0, is_signed = 0 }; };
template <> struct ndd_kind<u64> { enum { is_float = 0, is_signed = 0 }; };
template <> struct ndd_kind<f32> { enum { is_float = 1, is_signed = 1 }; };
template <> struct ndd_kind<f64> { enum { is_float = 1, is_signed = 1 }; };
template <> struct ndd_kind<f16> { enum { is_float = 1, is_signed = 1 }; };
template <> struct ndd_kind<b1> { enum { is_float = 0, is_signed = 0 }; };

// the value of x in the widest type of its kind (f64 for floats, i64/u64 for integers)
NDD_DEV f64 ndd_wide(f16 x) { return (f64)f16_to_f32(x); }
NDD_DEV f64 ndd_wide(f32 x) { return (f64)x; }
NDD_DEV f64 ndd_wide(f64 x) { return x; }

// integer -> integer, saturating (compares done exactly across signedness)
template <class D, class S> NDD_DEV D ndd_int_sat(S x) {
  if (ndd_kind<S>::is_signed) {
    i64 v = (i64)x;
    if (ndd_kind<D>::is_signed) {
      if (v < (i64)ndd_lim<D>::lo()) return ndd_lim<D>::lo();
      if (v > (i64)ndd_lim<D>::hi()) return ndd_lim<D>::hi();
      return (D)v;
    }
    if (v < 0) return (D)0;
    if ((u64)v > (u64)ndd_lim<D>::hi()) return ndd_lim<D>::hi();
    return (D)v;
  }
  u64 v = (u64)x;
  if ((u64)v > (u64)ndd_lim<D>::hi()) return ndd_lim<D>::hi();
  return (D)v;
}

template <class D> struct ndd_cast_to {
  // integer destinations
  template <class S> static NDD_DEV D from(S x) { return ndd_int_sat<D>(x); }
  static NDD_DEV D from(b1 x) { return (D)x.v; }
  static NDD_DEV D from(f16 x) { return ndd_float_to_int<D>(ndd_wide(x)); }
  static NDD_DEV D from(f32 x) { return ndd_float_to_int<D>(ndd_wide(x)); }
  static NDD_DEV D from(f64 x) { return ndd_float_to_int<D>(x); }
};
template <> struct ndd_cast_to<b1> {
  template <class S> static NDD_DEV b1 from(S x) { b1 o; o.v = x != 0 ? 1 : 0; return o; }
  static NDD_DEV b1 from(b1 x) { return x; }
  static NDD_DEV b1 from(f16 x) { return from(ndd_wide(x)); }
  static NDD_DEV b1 from(f32 x) { return from((f64)x); }
  static NDD_DEV b1 from(f64 x) {
    b1 o; f64 a = x < 0 ? -x : x; o.v = (a < 0.5) ? 0 : 1; return o;   // NaN -> true
  }
};
template <> struct ndd_cast_to<f16> {
  template <class S> static NDD_DEV f16 from(S x) { return f64_to_f16((f64)x, true); }
  static NDD_DEV f16 from(b1 x) { f16 o; o.bits = x.v ? 0x3C00u : 0u; return o; }
  static NDD_DEV f16 from(f16 x) { return x; }
};
template <> struct ndd_cast_to<f32> {
  template <class S> static NDD_DEV f32 from(S x) { return (f32)x; }
  static NDD_DEV f32 from(b1 x) { return (f32)x.v; }
  static NDD_DEV f32 from(f16 x) { return f16_to_f32(x); }
};
template <> struct ndd_cast_to<f64> {
  template <class S> static NDD_DEV f64 from(S x) { return (f64)x; }
  static NDD_DEV f64 from(b1 x) { return (f64)x.v; }
  static NDD_DEV f64 from(f16 x) { return (f64)f16_to_f32(x); }
};

template <class D, class S> NDD_DEV D ndd_cast(S x) { return ndd_cast_to<D>::from(x); }

// the value a kernel computes with: float32 for f16/f32 and integers up to 16 bits, as the
// CPU kernels do (crop_mirror_normalize subtracts in float32)
NDD_DEV f32 ndd_to_f32(u8 x) { return (f32)x; }
NDD_DEV f32 ndd_to_f32(i8 x) { return (f32)x; }
NDD_DEV f32 ndd_to_f32(u16 x) { return (f32)x; }
NDD_DEV f32 ndd_to_f32(i16 x) { return (f32)x; }
NDD_DEV f32 ndd_to_f32(f16 x) { return f16_to_f32(x); }
NDD_DEV f32 ndd_to_f32(f32 x) { return x; }

// one launch covers a batch: blockIdx.y is the sample, x threads stride over its elements
#define NDD_SAMPLE_LOOP(count, idx) NDD_SAMPLE_LOOP_T(i64, count, idx)
#define NDD_SAMPLE_LOOP_T(I, count, idx) \
  for (I idx = (I)blockIdx.x * blockDim.x + threadIdx.x; idx < (I)(count); \
       idx += (I)blockDim.x * gridDim.x)

// samples of at most this many work items index in 32 bits (unsigned division is much cheaper
// than 64-bit division on a GPU); larger ones in 64. A test builds with 0 to check the 64-bit
// path too.
#ifndef NDD_SMALL_INDEX_MAX
#define NDD_SMALL_INDEX_MAX 0x7FFFFFFFll
#endif

// instantiate X(T, name) for every element type ndd stores
#define NDD_ALL_TYPES(X) \
  X(b1, bool) X(i8, int8) X(u8, uint8) X(i16, int16) X(u16, uint16) X(i32, int32) \
  X(u32, uint32) X(i64, int64) X(u64, uint64) X(f16, float16) X(f32, float32) X(f64, float64)
