// Philox words for given counters and keys (kernels/philox.clh): the device side of the generator's test against
// Random123 and the host twin (tests/random/test_philox.cpp), and of the generator's throughput benchmark.
// Memory layout (n work-items):
//   counters  uint4 [n], keys uint2 [n]: the inputs of each work-item
//   words     uint4 [n]: philox4x32_10(counter, key)
//   uniforms  float [n][4]: uniform_float of each word
#include "philox.clh"

__kernel void philox_words(__global const uint4* restrict counters, __global const uint2* restrict keys, const int n,
                           __global uint4* restrict words, __global float4* restrict uniforms) {
  const int g = get_global_id(0);
  if (g >= n) return;
  const uint4 w = philox4x32_10(counters[g], keys[g]);
  words[g] = w;
  uniforms[g] = (float4)(uniform_float(w.x), uniform_float(w.y), uniform_float(w.z), uniform_float(w.w));
}
