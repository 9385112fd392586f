// Partial sums of a float array: each work-group writes the sum of its chunk to partial[group].
// The host adds the (few) partials in double.
//
// Memory layout: `in` is n contiguous floats; `partial` has one float per work-group.
// NDRange: 1D, global = groups * LOCAL_SIZE, local = LOCAL_SIZE (a power of two, a define).
// Each work-item first accumulates a strided run of elements (grid-stride loop), then the group
// reduces in local memory as a tree.

__kernel __attribute__((reqd_work_group_size(LOCAL_SIZE, 1, 1))) void reduce_sum(__global const float* restrict in,
                                                                                 __global float* restrict partial,
                                                                                 const int n) {
  __local float scratch[LOCAL_SIZE];
  const int lid = get_local_id(0);
  float acc = 0.0f;
  for (int i = get_global_id(0); i < n; i += get_global_size(0)) acc += in[i];
  scratch[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = LOCAL_SIZE / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) partial[get_group_id(0)] = scratch[0];
}
