// Partial sums for DVARS: each work-group writes the sum of (a[i] - b[i])^2 over the voxels of its grid-stride chunk
// that are inside the mask and whose difference is finite, and how many voxels that was. The host adds the (few)
// partials in double and takes sqrt(sum / count).
//
// Memory layout: `a` and `b` are one volume each (n floats, x fastest); `mask` is n bytes (non-zero: inside);
// `partial_sum` (float) and `partial_count` (int) have one entry per work-group.
// NDRange: 1D, global = groups * LOCAL_SIZE, local = LOCAL_SIZE (a power of two, a define).

__kernel __attribute__((reqd_work_group_size(LOCAL_SIZE, 1, 1))) void masked_squared_difference(
    __global const float* restrict a, __global const float* restrict b, __global const uchar* restrict mask,
    __global float* restrict partial_sum, __global int* restrict partial_count, const int n) {
  __local float sums[LOCAL_SIZE];
  __local int counts[LOCAL_SIZE];
  const int lid = get_local_id(0);
  float acc = 0.0f;
  int count = 0;
  for (int i = get_global_id(0); i < n; i += get_global_size(0)) {
    const float d = a[i] - b[i];
    if (mask[i] != 0 && isfinite(d)) {
      acc += d * d;
      ++count;
    }
  }
  sums[lid] = acc;
  counts[lid] = count;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = LOCAL_SIZE / 2; s > 0; s >>= 1) {
    if (lid < s) {
      sums[lid] += sums[lid + s];
      counts[lid] += counts[lid + s];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    partial_sum[get_group_id(0)] = sums[0];
    partial_count[get_group_id(0)] = counts[0];
  }
}
