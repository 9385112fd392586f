// Normal pairs and gamma draws for every voxel of a stream point (kernels/random_draws.clh): the device side of the
// samplers' tests against the host twin (tests/random/test_random_draws.cpp) and of their throughput benchmark.
// Memory layout (n voxels, work-item g = voxel g):
//   normals  float2 [n]: normal_pair(key, g, chain, step, slot)
//   shapes   float [n]: the gamma shape of each voxel; gammas float [n]: gamma_draw(key, g, chain, step, slot + 1,
//   shape)
#include "random_draws.clh"

__kernel void random_draws(const uint key_lo, const uint key_hi, const uint chain, const uint step, const uint slot,
                           const int n, __global float2* restrict normals, __global const float* restrict shapes,
                           __global float* restrict gammas) {
  const int g = get_global_id(0);
  if (g >= n) return;
  const uint2 key = (uint2)(key_lo, key_hi);
  normals[g] = normal_pair(key, (uint)g, chain, step, slot);
  gammas[g] = gamma_draw(key, (uint)g, chain, step, slot + 1, shapes[g]);
}
