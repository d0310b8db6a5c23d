// cast.cu: DALI's type conversion (ndd_cast in ndd_common.cuh) of dense samples.
//
// out[i] = cast<D>(in[i]) over each sample's count elements: float -> integer rounds half away
// from zero and saturates (NaN -> 0), integer -> integer saturates, float -> bool is |x| >= 0.5
// or NaN, anything -> float16 rounds ties away from zero (runtime/kernels/cpu/cast.py).
//
// Kernels: cast_<in>_<out> for every pair of element types. Launch: grid (x, samples), any x.
#include "ndd_common.cuh"

struct CastDesc { i64 in_ptr, out_ptr, count; };
NDD_EXPORT_SIZE(CastDesc)

template <class S, class D>
__device__ __forceinline__ void cast_body(const CastDesc* __restrict__ descs, int n) {
  if ((int)blockIdx.y >= n) return;
  const CastDesc& d = descs[blockIdx.y];
  const S* in = (const S*)d.in_ptr;
  D* out = (D*)d.out_ptr;
  NDD_SAMPLE_LOOP(d.count, idx) { out[idx] = ndd_cast<D>(in[idx]); }
}

#define NDD_CAST_OUT(D, dname, S, sname) \
  extern "C" __global__ void cast_##sname##_##dname(const CastDesc* descs, int n) { \
    cast_body<S, D>(descs, n); \
  } \
  NDD_EXPORT(cast_##sname##_##dname)
#define NDD_CAST_IN(S, sname) \
  NDD_CAST_OUT(b1, bool, S, sname) NDD_CAST_OUT(i8, int8, S, sname) \
  NDD_CAST_OUT(u8, uint8, S, sname) NDD_CAST_OUT(i16, int16, S, sname) \
  NDD_CAST_OUT(u16, uint16, S, sname) NDD_CAST_OUT(i32, int32, S, sname) \
  NDD_CAST_OUT(u32, uint32, S, sname) NDD_CAST_OUT(i64, int64, S, sname) \
  NDD_CAST_OUT(u64, uint64, S, sname) NDD_CAST_OUT(f16, float16, S, sname) \
  NDD_CAST_OUT(f32, float32, S, sname) NDD_CAST_OUT(f64, float64, S, sname)
NDD_ALL_TYPES(NDD_CAST_IN)
