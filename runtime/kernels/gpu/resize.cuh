// resize.cuh (with resize.cu, resize_cmn.cu): DALI's separable resampling of a batch, two launches (one per pass) for the batch.
//
// The host (runtime/kernels/gpu/resize.py) computes each sample's tap tables with the CPU
// kernel's functions (runtime/kernels/cpu/resize_taps.py axis_taps, banded onto consecutive
// source pixels): output o of an axis reads source pixels first[o] + k, k < K, with float32
// weights w[o * K + k]. Pass 1 resamples one axis of the input into a float32 intermediate
// (h_first: H into (oh, wc, C); else W into (hc, ow, C), restricted to the source window the
// other axis reads), pass 2 the other axis into the output, which is rounded as the CPU kernel
// rounds (unsigned: x + 0.5 truncated; signed: trunc(x + copysign(0.5, x)); 32-bit integers in
// double; both saturated). Each sum runs k = 0, 1, ... as acc = acc + w * x in float32, without
// contraction: the order and rounding of the CPU's sparse matrix product.
//
// Kernels (resize.cu): resize_pass1_<in>, resize_pass2_<out>; resize_cmn.cu: rcmn_<mid>_<out>.
#pragma once
#include "ndd_common.cuh"

struct RsDesc {
  i64 in_ptr, tmp_ptr, out_ptr;
  i64 in_sy, in_sx, in_sc;           // input strides (elements) of H, W, C
  i64 out_sy, out_sx, out_sc;        // output strides
  i64 C, h_first, zero;              // zero: the output is all zeros (an empty input)
  i64 t_rows, t_cols;                // intermediate extent (t_rows, t_cols, C)
  i64 lo;                            // first source line of the cross axis read by pass 1
  i64 f1_ptr, w1_ptr, k1;            // pass 1 taps: i64 first[], f32 w[], taps per output
  i64 f2_ptr, w2_ptr, k2;            // pass 2 taps (first relative to the intermediate)
  i64 oh, ow;
};
NDD_EXPORT_SIZE(RsDesc)

template <class S, class I>
__device__ __forceinline__ void pass1_sample(const RsDesc& d) {
  const S* in = (const S*)d.in_ptr;
  f32* tmp = (f32*)d.tmp_ptr;
  const i64* first = (const i64*)d.f1_ptr;
  const f32* w = (const f32*)d.w1_ptr;
  const i64 C = d.C, K = d.k1;
  NDD_SAMPLE_LOOP_T(I, d.t_rows * d.t_cols * C, idx) {
    i64 c = (i64)(idx % (I)C);
    I rest = idx / (I)C;
    i64 q = (i64)(rest % (I)d.t_cols);
    i64 r = (i64)(rest / (I)d.t_cols);
    f32 acc = 0.0f;
    if (d.h_first) {            // r: output row, q: source column lo + q
      const S* src = in + (d.lo + q) * d.in_sx + c * d.in_sc + first[r] * d.in_sy;
      const f32* wr = w + r * K;
      for (i64 k = 0; k < K; ++k) acc = acc + wr[k] * ndd_cast<f32>(src[k * d.in_sy]);
    } else {                    // r: source row lo + r, q: output column
      const S* src = in + (d.lo + r) * d.in_sy + c * d.in_sc + first[q] * d.in_sx;
      const f32* wq = w + q * K;
      for (i64 k = 0; k < K; ++k) acc = acc + wq[k] * ndd_cast<f32>(src[k * d.in_sx]);
    }
    tmp[idx] = acc;
  }
}

template <class S>
__device__ __forceinline__ void pass1_body(const RsDesc* __restrict__ descs, int n) {
  if ((int)blockIdx.y >= n) return;
  const RsDesc& d = descs[blockIdx.y];
  if (d.zero) return;
  if (d.t_rows * d.t_cols * d.C <= NDD_SMALL_INDEX_MAX) pass1_sample<S, u32>(d);
  else pass1_sample<S, i64>(d);
}

// the CPU kernel's float32 -> output conversion (_to_output in runtime/kernels/cpu/resize.py)
template <class D> struct rs_out {
  static NDD_DEV D from(f32 x) {
    if (sizeof(D) >= 4) {       // in double
      f64 v = (f64)x;
      if (ndd_kind<D>::is_signed) v = trunc(v + (v < 0 ? -0.5 : 0.5));
      else v = v + 0.5;
      if (v < (f64)ndd_lim<D>::lo()) v = (f64)ndd_lim<D>::lo();
      if (v > (f64)ndd_lim<D>::hi()) v = (f64)ndd_lim<D>::hi();
      return (D)v;
    }
    f32 v = x;
    if (ndd_kind<D>::is_signed) v = truncf(v + (v < 0 ? -0.5f : 0.5f));
    else v = v + 0.5f;
    if (v < (f32)ndd_lim<D>::lo()) v = (f32)ndd_lim<D>::lo();
    if (v > (f32)ndd_lim<D>::hi()) v = (f32)ndd_lim<D>::hi();
    return (D)v;
  }
};
template <> struct rs_out<f32> { static NDD_DEV f32 from(f32 x) { return x; } };

// pass 2's value of output pixel (oy, ox, c): the other axis' taps over the intermediate
__device__ __forceinline__ f32 rs_pass2_value(const RsDesc& d, i64 oy, i64 ox, i64 c) {
  const f32* tmp = (const f32*)d.tmp_ptr;
  const i64* first = (const i64*)d.f2_ptr;
  const f32* w = (const f32*)d.w2_ptr;
  const i64 C = d.C, K = d.k2;
  f32 acc = 0.0f;
  if (d.zero) return acc;
  if (d.h_first) {          // tmp (oh, wc, C): resample its columns
    const f32* src = tmp + (oy * d.t_cols + first[ox]) * C + c;
    const f32* wx = w + ox * K;
    for (i64 k = 0; k < K; ++k) acc = acc + wx[k] * src[k * C];
  } else {                  // tmp (hc, ow, C): resample its rows
    const f32* src = tmp + (first[oy] * d.t_cols + ox) * C + c;
    const f32* wy = w + oy * K;
    for (i64 k = 0; k < K; ++k) acc = acc + wy[k] * src[k * d.t_cols * C];
  }
  return acc;
}

template <class D, class I>
__device__ __forceinline__ void pass2_sample(const RsDesc& d) {
  D* out = (D*)d.out_ptr;
  const i64 C = d.C;
  NDD_SAMPLE_LOOP_T(I, d.oh * d.ow * C, idx) {
    i64 c = (i64)(idx % (I)C);
    I rest = idx / (I)C;
    i64 ox = (i64)(rest % (I)d.ow);
    i64 oy = (i64)(rest / (I)d.ow);
    out[oy * d.out_sy + ox * d.out_sx + c * d.out_sc] = rs_out<D>::from(rs_pass2_value(d, oy, ox, c));
  }
}

template <class D>
__device__ __forceinline__ void pass2_body(const RsDesc* __restrict__ descs, int n) {
  if ((int)blockIdx.y >= n) return;
  const RsDesc& d = descs[blockIdx.y];
  if (d.oh * d.ow * d.C <= NDD_SMALL_INDEX_MAX) pass2_sample<D, u32>(d);
  else pass2_sample<D, i64>(d);
}
