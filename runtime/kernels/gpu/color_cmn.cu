// color_cmn.cu: a colour op -> crop_mirror_normalize in one pass (the compiler's fused.color
// chain of two stages, on the GPU).
//
// Each element of crop_mirror_normalize's output (cmn.cuh's rule) is computed from the colour
// op's value of the pixel it reads, computed as color.cu computes it (float32, no contraction)
// and cast to the colour op's output type <mid> first, exactly as the unfused chain stores it,
// so the result equals the colour op followed by crop_mirror_normalize bit for bit; the colour
// image is never written.
//   kind 0 (scale: brightness_contrast, brightness, contrast): v = float(x) * p[0] + p[1];
//   kind 1 (mat3: hsv, hue, saturation, color_twist): v_c = ((p[3c] r + p[3c+1] g) + p[3c+2] b)
//          + p[9+c], channels last.
//
// Kernels: ccmn_<in>_<mid>_<out>. Launch: grid (x, samples), any x.
#include "cmn.cuh"

struct CcDesc { CmnDesc c; i64 cpar_ptr, kind; };
NDD_EXPORT_SIZE(CcDesc)

template <class S, class M>
struct ColorValue {
  const CcDesc* d;
  __device__ __forceinline__ f32 operator()(i64 y, i64 x, i64 c) const {
    const S* in = (const S*)d->c.in_ptr;
    const f32* p = (const f32*)d->cpar_ptr;
    const i64 at = y * d->c.in_sh + x * d->c.in_sw;
    if (d->kind == 0)
      return ndd_to_f32(ndd_cast<M>(ndd_cast<f32>(in[at + c * d->c.in_sc]) * p[0] + p[1]));
    const f32 r = ndd_cast<f32>(in[at]);
    const f32 g = ndd_cast<f32>(in[at + d->c.in_sc]);
    const f32 b = ndd_cast<f32>(in[at + 2 * d->c.in_sc]);
    f32 v = p[3 * c] * r + p[3 * c + 1] * g;
    v = v + p[3 * c + 2] * b;
    return ndd_to_f32(ndd_cast<M>(v + p[9 + c]));
  }
};

template <class S, class M, class D>
__device__ __forceinline__ void ccmn_body(const CcDesc* __restrict__ descs, int n) {
  if ((int)blockIdx.y >= n) return;
  const CcDesc& d = descs[blockIdx.y];
  ColorValue<S, M> src{&d};
  if (d.c.count <= NDD_SMALL_INDEX_MAX) cmn_sample<D, u32>(d.c, src);
  else cmn_sample<D, i64>(d.c, src);
}

#define NDD_CCMN(S, sname, M, mname, D, dname) \
  extern "C" __global__ void ccmn_##sname##_##mname##_##dname(const CcDesc* descs, int n) { \
    ccmn_body<S, M, D>(descs, n); \
  } \
  NDD_EXPORT(ccmn_##sname##_##mname##_##dname)
#define NDD_CCMN_OUT(S, sname, M, mname) \
  NDD_CCMN(S, sname, M, mname, f32, float32) NDD_CCMN(S, sname, M, mname, f16, float16) \
  NDD_CCMN(S, sname, M, mname, u8, uint8)
NDD_CCMN_OUT(u8, uint8, u8, uint8)
NDD_CCMN_OUT(u8, uint8, f32, float32)
NDD_CCMN_OUT(f32, float32, u8, uint8)
NDD_CCMN_OUT(f32, float32, f32, float32)
