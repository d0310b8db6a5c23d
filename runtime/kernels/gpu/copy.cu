// copy.cu: one strided, padded, converting copy for crop, flip, transpose and cast.
//
// Each sample's output is a dense array of up to NDD_COPY_MAX_DIMS axes (the host coalesces
// axes first). Output element (i0, ..., in-1) reads the input at
//   in_ptr + in_offset + sum_k i_k * stride_k          (strides in elements, negative = flip)
// when lo_k <= i_k < hi_k on every axis, and is the fill value otherwise (crop's padding): the
// fill values are given in the output type, one per output channel (channel = i_{c_axis}) or a
// single one. The element is converted with DALI's cast (ndd_cast, ndd_common.cuh).
//
// Kernels: copy_<in>_<out> for every pair of element types. Launch: grid (x, samples), any x.
#include "ndd_common.cuh"

#define NDD_COPY_MAX_DIMS 6

struct CopyDesc {
  i64 in_ptr, out_ptr, fill_ptr;   // device addresses; fill_ptr 0: no padding needed
  i64 in_offset;                   // elements from in_ptr to output coordinate 0
  i64 count;                       // output elements
  i64 ndim, c_axis, n_fill;        // c_axis -1: one fill value
  i64 shape[NDD_COPY_MAX_DIMS];
  i64 stride[NDD_COPY_MAX_DIMS];
  i64 lo[NDD_COPY_MAX_DIMS];
  i64 hi[NDD_COPY_MAX_DIMS];
};
NDD_EXPORT_SIZE(CopyDesc)

template <class T, class I>
__device__ __forceinline__ void copy_sample(const CopyDesc& d) {
  const T* in = (const T*)d.in_ptr;
  T* out = (T*)d.out_ptr;
  const T* fill = (const T*)d.fill_ptr;
  int nd = (int)d.ndim;
  NDD_SAMPLE_LOOP_T(I, d.count, idx) {
    I rest = idx;
    i64 off = d.in_offset, chan = 0;
    bool inside = true;
    for (int k = nd - 1; k >= 0; --k) {
      I c = rest % (I)d.shape[k];
      rest /= (I)d.shape[k];
      off += (i64)c * d.stride[k];
      inside = inside && (i64)c >= d.lo[k] && (i64)c < d.hi[k];
      if (k == d.c_axis) chan = (i64)c;
    }
    out[idx] = inside ? in[off] : fill[d.n_fill > 1 ? chan : 0];
  }
}

template <class T>
__device__ __forceinline__ void copy_body(const CopyDesc* __restrict__ descs, int n) {
  if ((int)blockIdx.y >= n) return;
  const CopyDesc& d = descs[blockIdx.y];
  if (d.count <= NDD_SMALL_INDEX_MAX) copy_sample<T, u32>(d);
  else copy_sample<T, i64>(d);
}

#define NDD_COPY(T, bytes) \
  extern "C" __global__ void copy_##bytes(const CopyDesc* descs, int n) { copy_body<T>(descs, n); } \
  NDD_EXPORT(copy_##bytes)
NDD_COPY(u8, 1)
NDD_COPY(u16, 2)
NDD_COPY(u32, 4)
NDD_COPY(u64, 8)
