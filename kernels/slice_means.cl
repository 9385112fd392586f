// Per-slice sums of a volume inside a mask, for the QA stage's slice intensity z-scores and the global signal: one
// work-group per slice z sums that slice's masked, finite voxels (a strided loop, then a tree in local memory). The
// host divides: slice mean = sum / count; global signal = sum of sums / sum of counts.
//
// Memory layout: `volume` (floats) and `mask` (bytes, non-zero: inside) are one volume, x fastest, then y, then z, of
// `slice_voxels` = nx * ny voxels per slice; `sums` (float) and `counts` (int) have one entry per slice.
// NDRange: 1D, global = nz * LOCAL_SIZE, local = LOCAL_SIZE (a power of two, a define).

__kernel __attribute__((reqd_work_group_size(LOCAL_SIZE, 1, 1))) void slice_sums(__global const float* restrict volume,
                                                                                 __global const uchar* restrict mask,
                                                                                 __global float* restrict sums,
                                                                                 __global int* restrict counts,
                                                                                 const int slice_voxels) {
  __local float local_sums[LOCAL_SIZE];
  __local int local_counts[LOCAL_SIZE];
  const int lid = get_local_id(0);
  const int z = get_group_id(0);
  const long first = (long)z * slice_voxels;
  float acc = 0.0f;
  int count = 0;
  for (int i = lid; i < slice_voxels; i += LOCAL_SIZE) {
    const float x = volume[first + i];
    if (mask[first + i] != 0 && isfinite(x)) {
      acc += x;
      ++count;
    }
  }
  local_sums[lid] = acc;
  local_counts[lid] = count;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = LOCAL_SIZE / 2; s > 0; s >>= 1) {
    if (lid < s) {
      local_sums[lid] += local_sums[lid + s];
      local_counts[lid] += local_counts[lid + s];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    sums[z] = local_sums[0];
    counts[z] = local_counts[0];
  }
}
