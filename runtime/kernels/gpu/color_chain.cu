// color_chain.cu: a chain of up to NDD_CHAIN_MAX colour ops [-> crop_mirror_normalize] in one
// pass (the compiler's fused.color chain on the GPU; color_cmn.cu is the one-op case).
//
// Each element of crop_mirror_normalize's output (cmn.cuh's rule) is computed from the chain's
// value of the pixel it reads: every stage as color.cu computes it (float32, no contraction),
// then rounded to that stage's output type (uint8, or float32 kept as is) exactly as the
// unfused chain stores it, so the result equals the colour ops one by one followed by
// crop_mirror_normalize bit for bit; no intermediate image is written.
//   kind 0 (scale: brightness_contrast, brightness, contrast): v = float(x) * p[0] + p[1];
//   kind 1 (mat3: hsv, hue, saturation, color_twist): v_c = ((p[3c] r + p[3c+1] g) + p[3c+2] b)
//          + p[9+c], channels last (3 channels).
// A chain with no mat3 stage computes only the channel read; otherwise the pixel's three
// channels go through every stage. A chain that ends without cmn runs with an identity cmn
// (mean 0, std 1, HWC, the last stage's type): (v - 0) * 1 = v.
// Per-sample parameters: 12 float32 per stage at cpar_ptr + 48 * k bytes.
//
// Kernels: cchain_<in>_<out>. Launch: grid (x, samples), any x.
#include "cmn.cuh"

#define NDD_CHAIN_MAX 4

struct ChDesc {
  CmnDesc c;
  i64 cpar_ptr, stages, mat3;
  i64 kind[NDD_CHAIN_MAX], to_u8[NDD_CHAIN_MAX];
};
NDD_EXPORT_SIZE(ChDesc)

__device__ __forceinline__ f32 chain_round(f32 v, i64 to_u8) {
  return to_u8 ? ndd_to_f32(ndd_cast<u8>(v)) : v;
}

template <class S>
struct ChainValue {
  const ChDesc* d;
  __device__ __forceinline__ f32 operator()(i64 y, i64 x, i64 c) const {
    const S* in = (const S*)d->c.in_ptr;
    const f32* p = (const f32*)d->cpar_ptr;
    const i64 at = y * d->c.in_sh + x * d->c.in_sw;
    const int n = (int)d->stages;
    if (!d->mat3) {             // scale stages only: channel c alone
      f32 v = ndd_cast<f32>(in[at + c * d->c.in_sc]);
#pragma unroll
      for (int k = 0; k < NDD_CHAIN_MAX; ++k) {
        if (k < n) v = chain_round(v * p[12 * k] + p[12 * k + 1], d->to_u8[k]);
      }
      return v;
    }
    f32 r = ndd_cast<f32>(in[at]);
    f32 g = ndd_cast<f32>(in[at + d->c.in_sc]);
    f32 b = ndd_cast<f32>(in[at + 2 * d->c.in_sc]);
#pragma unroll
    for (int k = 0; k < NDD_CHAIN_MAX; ++k) {
      if (k >= n) break;
      const f32* q = p + 12 * k;
      const i64 u = d->to_u8[k];
      if (d->kind[k] == 0) {
        r = chain_round(r * q[0] + q[1], u);
        g = chain_round(g * q[0] + q[1], u);
        b = chain_round(b * q[0] + q[1], u);
      } else {
        f32 v0 = q[0] * r + q[1] * g;
        v0 = v0 + q[2] * b;
        f32 v1 = q[3] * r + q[4] * g;
        v1 = v1 + q[5] * b;
        f32 v2 = q[6] * r + q[7] * g;
        v2 = v2 + q[8] * b;
        r = chain_round(v0 + q[9], u);
        g = chain_round(v1 + q[10], u);
        b = chain_round(v2 + q[11], u);
      }
    }
    return c == 0 ? r : (c == 1 ? g : b);
  }
};

template <class S, class D>
__device__ __forceinline__ void cchain_body(const ChDesc* __restrict__ descs, int n) {
  if ((int)blockIdx.y >= n) return;
  const ChDesc& d = descs[blockIdx.y];
  ChainValue<S> src{&d};
  if (d.c.count <= NDD_SMALL_INDEX_MAX) cmn_sample<D, u32>(d.c, src);
  else cmn_sample<D, i64>(d.c, src);
}

#define NDD_CCHAIN(S, sname, D, dname) \
  extern "C" __global__ void cchain_##sname##_##dname(const ChDesc* descs, int n) { \
    cchain_body<S, D>(descs, n); \
  } \
  NDD_EXPORT(cchain_##sname##_##dname)
#define NDD_CCHAIN_OUT(S, sname) \
  NDD_CCHAIN(S, sname, f32, float32) NDD_CCHAIN(S, sname, f16, float16) \
  NDD_CCHAIN(S, sname, u8, uint8)
NDD_CCHAIN_OUT(u8, uint8)
NDD_CCHAIN_OUT(f32, float32)
