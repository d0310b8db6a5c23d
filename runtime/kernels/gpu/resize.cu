// resize.cu: DALI's separable resampling of a batch (the passes: resize.cuh).
//
// Kernels: resize_pass1_<in>, resize_pass2_<out>. Launch: grid (x, samples), any x.
#include "resize.cuh"

#define NDD_RS(T, name) \
  extern "C" __global__ void resize_pass1_##name(const RsDesc* descs, int n) { \
    pass1_body<T>(descs, n); \
  } \
  NDD_EXPORT(resize_pass1_##name) \
  extern "C" __global__ void resize_pass2_##name(const RsDesc* descs, int n) { \
    pass2_body<T>(descs, n); \
  } \
  NDD_EXPORT(resize_pass2_##name)
NDD_RS(u8, uint8)
NDD_RS(i8, int8)
NDD_RS(u16, uint16)
NDD_RS(i16, int16)
NDD_RS(i32, int32)
NDD_RS(f32, float32)
