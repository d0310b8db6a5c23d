// color.cu: the colour ops of a batch in one launch, as runtime/kernels/cpu/color_pixels.py
// computes them, in float32 without contraction, then DALI's cast to the output type:
//   color_scale_<in>_<out>: out = cast(float(x) * mul + add) per element (brightness_contrast,
//                           brightness, contrast);
//   color_mat3_<in>_<out>:  out_i = cast(((m_i0 r + m_i1 g) + m_i2 b) + off_i) per RGB pixel,
//                           channels last, BGR input when bgr (hsv, hue, saturation,
//                           color_twist).
// Per-sample parameters: float32 mul, add (scale) or m[9], off[3] (mat3) at par_ptr.
// Launch: grid (x, samples), any x.
#include "ndd_common.cuh"

struct ColorDesc { i64 in_ptr, out_ptr, par_ptr, count, bgr; };
NDD_EXPORT_SIZE(ColorDesc)

template <class S, class D>
__device__ __forceinline__ void scale_body(const ColorDesc* __restrict__ descs, int n) {
  if ((int)blockIdx.y >= n) return;
  const ColorDesc& d = descs[blockIdx.y];
  const S* in = (const S*)d.in_ptr;
  D* out = (D*)d.out_ptr;
  const f32* p = (const f32*)d.par_ptr;
  const f32 mul = p[0], add = p[1];
  NDD_SAMPLE_LOOP(d.count, idx) { out[idx] = ndd_cast<D>(ndd_cast<f32>(in[idx]) * mul + add); }
}

template <class S, class D>
__device__ __forceinline__ void mat3_body(const ColorDesc* __restrict__ descs, int n) {
  if ((int)blockIdx.y >= n) return;
  const ColorDesc& d = descs[blockIdx.y];
  const S* in = (const S*)d.in_ptr;
  D* out = (D*)d.out_ptr;
  const f32* m = (const f32*)d.par_ptr;
  const int i0 = d.bgr ? 2 : 0, i2 = d.bgr ? 0 : 2;
  NDD_SAMPLE_LOOP(d.count, px) {
    const f32 r = ndd_cast<f32>(in[px * 3 + i0]);
    const f32 g = ndd_cast<f32>(in[px * 3 + 1]);
    const f32 b = ndd_cast<f32>(in[px * 3 + i2]);
    for (int i = 0; i < 3; ++i) {
      f32 v = m[3 * i] * r + m[3 * i + 1] * g;
      v = v + m[3 * i + 2] * b;
      out[px * 3 + i] = ndd_cast<D>(v + m[9 + i]);
    }
  }
}

#define NDD_COLOR(S, sname, D, dname) \
  extern "C" __global__ void color_scale_##sname##_##dname(const ColorDesc* descs, int n) { \
    scale_body<S, D>(descs, n); \
  } \
  NDD_EXPORT(color_scale_##sname##_##dname) \
  extern "C" __global__ void color_mat3_##sname##_##dname(const ColorDesc* descs, int n) { \
    mat3_body<S, D>(descs, n); \
  } \
  NDD_EXPORT(color_mat3_##sname##_##dname)
#define NDD_COLOR_IN(S, sname) \
  NDD_COLOR(S, sname, u8, uint8) NDD_COLOR(S, sname, i8, int8) \
  NDD_COLOR(S, sname, u16, uint16) NDD_COLOR(S, sname, i16, int16) \
  NDD_COLOR(S, sname, i32, int32) NDD_COLOR(S, sname, f16, float16) \
  NDD_COLOR(S, sname, f32, float32)
NDD_COLOR_IN(u8, uint8)
NDD_COLOR_IN(i8, int8)
NDD_COLOR_IN(u16, uint16)
NDD_COLOR_IN(i16, int16)
NDD_COLOR_IN(i32, int32)
NDD_COLOR_IN(f16, float16)
NDD_COLOR_IN(f32, float32)
