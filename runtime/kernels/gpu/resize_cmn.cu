// resize_cmn.cu: resize (or random_resized_crop) -> [flip] -> crop_mirror_normalize in one
// pass after resize's first pass: the fused.image chain of the compiler, on the GPU.
//
// Pass 1 is resize.cuh's (resize_pass1_<in>, from resize.cu). Pass 2 computes each element of
// crop_mirror_normalize's output (cmn.cuh's rule) from the resampled pixel it reads, rounded to
// the resize's output type <mid> first (rs_out), exactly as the unfused chain stores it, so the
// result equals resize followed by crop_mirror_normalize bit for bit; the resized image is
// never written.
//
// Kernels: rcmn_<mid>_<out>. Launch: grid (x, samples), any x.
#include "resize.cuh"
#include "cmn.cuh"

struct RcDesc { RsDesc r; CmnDesc c; };
NDD_EXPORT_SIZE(RcDesc)

template <class M>
struct RsValue {
  const RsDesc* r;
  __device__ __forceinline__ f32 operator()(i64 y, i64 x, i64 c) const {
    return ndd_to_f32(rs_out<M>::from(rs_pass2_value(*r, y, x, c)));
  }
};

template <class M, class D>
__device__ __forceinline__ void rcmn_body(const RcDesc* __restrict__ descs, int n) {
  if ((int)blockIdx.y >= n) return;
  const RcDesc& d = descs[blockIdx.y];
  RsValue<M> src{&d.r};
  if (d.c.count <= NDD_SMALL_INDEX_MAX) cmn_sample<D, u32>(d.c, src);
  else cmn_sample<D, i64>(d.c, src);
}

#define NDD_RCMN(M, mname, D, dname) \
  extern "C" __global__ void rcmn_##mname##_##dname(const RcDesc* descs, int n) { \
    rcmn_body<M, D>(descs, n); \
  } \
  NDD_EXPORT(rcmn_##mname##_##dname)
#define NDD_RCMN_MID(M, mname) \
  NDD_RCMN(M, mname, f32, float32) NDD_RCMN(M, mname, f16, float16) \
  NDD_RCMN(M, mname, u8, uint8)
NDD_RCMN_MID(u8, uint8)
NDD_RCMN_MID(f32, float32)
