// cmn.cu: crop_mirror_normalize of a batch in one launch (the rule: cmn.cuh).
//
// Kernels: cmn_<in>_<out>. Launch: grid (x, samples), any x.
#include "cmn.cuh"

template <class S>
struct CmnLoad {
  const S* in; i64 sh, sw, sc;
  __device__ __forceinline__ f32 operator()(i64 y, i64 x, i64 c) const {
    return ndd_to_f32(in[y * sh + x * sw + c * sc]);
  }
};

template <class S, class D>
__device__ __forceinline__ void cmn_body(const CmnDesc* __restrict__ descs, int n) {
  if ((int)blockIdx.y >= n) return;
  const CmnDesc& d = descs[blockIdx.y];
  CmnLoad<S> src{(const S*)d.in_ptr, d.in_sh, d.in_sw, d.in_sc};
  if (d.count <= NDD_SMALL_INDEX_MAX) cmn_sample<D, u32>(d, src);
  else cmn_sample<D, i64>(d, src);
}
#define NDD_CMN(S, sname, D, dname) \
  extern "C" __global__ void cmn_##sname##_##dname(const CmnDesc* descs, int n) { \
    cmn_body<S, D>(descs, n); \
  } \
  NDD_EXPORT(cmn_##sname##_##dname)
#define NDD_CMN_IN(S, sname) \
  NDD_CMN(S, sname, f32, float32) NDD_CMN(S, sname, f16, float16) \
  NDD_CMN(S, sname, u8, uint8) NDD_CMN(S, sname, i8, int8) \
  NDD_CMN(S, sname, i16, int16) NDD_CMN(S, sname, i32, int32)
NDD_CMN_IN(u8, uint8)
NDD_CMN_IN(i8, int8)
NDD_CMN_IN(u16, uint16)
NDD_CMN_IN(i16, int16)
NDD_CMN_IN(f16, float16)
NDD_CMN_IN(f32, float32)
