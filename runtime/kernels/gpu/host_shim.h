// host_shim.h: compile ndd's CUDA kernels as host C++ (for the offline exactness tests).
//
// Included before a kernel source (g++ -include host_shim.h, -ffp-contract=off, no fast math).
// __global__ / __device__ vanish; blockIdx, threadIdx, blockDim and gridDim are thread-local
// globals that ndd_shim_launch sets while it loops over the whole grid, one "thread" at a time.
// This is exact for ndd's kernels because none uses shared memory, __syncthreads or atomics:
// every thread computes its outputs from inputs alone (grid-stride loops), so any order of
// threads gives the same result. NDD_EXPORT(name) adds an extern "C" entry point
// ndd_host_<name>(dims, args) taking CUDA's launch convention (void** kernelParams).
#pragma once
#define NDD_HOST_SHIM 1
#include <cmath>
#include <cstring>
#include <cstddef>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define NDD_DEV inline

struct ndd_uint3 { unsigned x, y, z; };
inline thread_local ndd_uint3 blockIdx, threadIdx, blockDim, gridDim;

static inline long long __double_as_longlong(double x) { long long b; std::memcpy(&b, &x, 8); return b; }
static inline double __longlong_as_double(long long b) { double x; std::memcpy(&x, &b, 8); return x; }
static inline unsigned __float_as_uint(float x) { unsigned b; std::memcpy(&b, &x, 4); return b; }
static inline float __uint_as_float(unsigned b) { float x; std::memcpy(&x, &b, 4); return x; }
using std::trunc;
using std::floor;
using std::ceil;
using std::sqrt;

template <class... A, std::size_t... I>
static inline void ndd_shim_call(void (*k)(A...), void** args, std::index_sequence<I...>) {
  k(*static_cast<std::remove_reference_t<A>*>(args[I])...);
}

// dims: grid x, y, z, block x, y, z
template <class... A>
static inline void ndd_shim_launch(void (*k)(A...), const unsigned* dims, void** args) {
  gridDim = {dims[0], dims[1], dims[2]};
  blockDim = {dims[3], dims[4], dims[5]};
  for (unsigned bz = 0; bz < dims[2]; ++bz)
    for (unsigned by = 0; by < dims[1]; ++by)
      for (unsigned bx = 0; bx < dims[0]; ++bx) {
        blockIdx = {bx, by, bz};
        for (unsigned tz = 0; tz < dims[5]; ++tz)
          for (unsigned ty = 0; ty < dims[4]; ++ty)
            for (unsigned tx = 0; tx < dims[3]; ++tx) {
              threadIdx = {tx, ty, tz};
              ndd_shim_call(k, args, std::index_sequence_for<A...>{});
            }
      }
}

#define NDD_EXPORT(name) \
  extern "C" void ndd_host_##name(const unsigned* dims, void** args) { \
    ndd_shim_launch(name, dims, args); \
  }

// the size of a descriptor struct, so the tests can check the Python side's layout
#define NDD_EXPORT_SIZE(T) \
  extern "C" long long ndd_sizeof_##T() { return (long long)sizeof(T); }
