// cmn.cuh: crop_mirror_normalize's descriptor and per-element rule (cmn.cu, resize_cmn.cu).
//
// Output element idx of a sample (memory order of the output layout: dims/roles) is
//   c >= c_in (pad_output's extra channels):    fill[c] with policy "pad", else 0;
//   (y0 + h, x0 + w') outside the image:          fill[c] (policy "pad" only), w' = mirror ?
//                                                 w_out - 1 - w : w;
//   otherwise  cast<D>((float(in) - base[c]) * inv[c] (+ post when post != 0)),
// in float32 without contraction, exactly as runtime/kernels/cpu/cmn_pixels.py computes it.
// The source pixel comes from a functor (a load of the input, or a resampled value).
#pragma once
#include "ndd_common.cuh"

struct CmnDesc {
  i64 in_ptr, out_ptr, par_ptr, fill_ptr;   // par: float32 base[n_par] then inv[n_par]
  i64 H, W, y0, x0, h, w, c_in;              // image, window anchor, output extent
  i64 in_sh, in_sw, in_sc;                   // input strides (elements)
  i64 dim[3], role[3];                       // output extents in memory order; role 0 H, 1 W, 2 C
  i64 count, mirror, n_par, n_fill, pad, post_bits;
};
NDD_EXPORT_SIZE(CmnDesc)

// src(y, x, c) -> float32 value of the source pixel
template <class D, class I, class Src>
__device__ __forceinline__ void cmn_sample(const CmnDesc& d, Src src) {
  D* out = (D*)d.out_ptr;
  const f32* base = (const f32*)d.par_ptr;
  const f32* inv = base + d.n_par;
  const D* fill = (const D*)d.fill_ptr;
  f32 post = ndd_bits_f32((u32)d.post_bits);
  bool has_post = post != 0.0f;
  NDD_SAMPLE_LOOP_T(I, d.count, idx) {
    i64 coord[3];
    I rest = idx;
    for (int k = 2; k >= 0; --k) {
      I c = rest % (I)d.dim[k];
      rest /= (I)d.dim[k];
      coord[d.role[k]] = (i64)c;
    }
    i64 h = coord[0], w = coord[1], c = coord[2];
    i64 fc = d.n_fill > 1 ? c : 0;
    if (c >= d.c_in) {
      out[idx] = d.pad ? fill[fc] : ndd_cast<D>(0);
      continue;
    }
    i64 y = d.y0 + h;
    i64 x = d.x0 + (d.mirror ? d.w - 1 - w : w);
    if (y < 0 || y >= d.H || x < 0 || x >= d.W) {
      out[idx] = fill[fc];
      continue;
    }
    i64 pc = d.n_par > 1 ? c : 0;
    f32 r = (src(y, x, c) - base[pc]) * inv[pc];
    if (has_post) r = r + post;
    out[idx] = ndd_cast<D>(r);
  }
}
