// The live QA stage's per-voxel measures of the newest volume in one pass over it, read straight from the ring (no
// copy): the running moments, cumulative and over the sliding window (Welford; the formulas of voxel_moments.cl), the
// slice sums and the DVARS sums inside the mask (as slice_means.cl and masked_squared_difference.cl), and the carpet
// plot's column. One launch and one read a TR instead of eight commands.
//
// Sums: each work-item adds its voxels' values (and squared differences) with Neumaier's compensation, the work-group
// merges its items' (sum, compensation) pairs in a tree, and the host adds each group's sum and compensation in double:
// nearly double precision with float arithmetic (no cl_khr_fp64 needed).
//
// Memory layout: `ring` holds the ring's slots of `voxels` floats (slot s at s * voxels; x fastest, then y, then z;
// `slice_voxels` = nx * ny voxels a slice); `mask` one byte a voxel (non-zero: inside); `mean`/`m2` and
// `sliding_mean`/`sliding_m2` one float a voxel each (the moments' state, voxel_moments.cl); `carpet_row` one int a
// voxel (the carpet row it fills, -1 for none); `out` floats: per work-group (group g = z * chunks + chunk) 6 floats at
// 6 g: slice sum, its compensation, DVARS sum, its compensation, then the slice count and the DVARS count (ints);
// after the groups' 6 * groups floats, the carpet column (row r at 6 * groups + r).
// NDRange: 2D, dimension 0 = chunks * LOCAL_SIZE (items over a slice's voxels, a grid stride), dimension 1 = the
// slices; local (LOCAL_SIZE, 1) (a power of two, a define).
//
// Slots: `newest` the new volume's; `previous` the volume DVARS compares it with (-1: none, DVARS sums stay 0);
// `leaving` the sliding window's volume that leaves it (-1: the window still fills, the new volume is added;
// -2: no sliding window). `inv_n`, `sliding_inv_n`: 1 / the count after this volume (the window's length once full).
// A non-finite value makes its voxel's moments NaN from then on, and is left out of the slice and DVARS sums.

float2 add_compensated(float2 acc, const float x) {
  const float t = acc.x + x;
  acc.y += fabs(acc.x) >= fabs(x) ? (acc.x - t) + x : (x - t) + acc.x;
  acc.x = t;
  return acc;
}

float2 merge_compensated(const float2 a, const float2 b) {
  float2 out = add_compensated(a, b.x);
  out.y += b.y;
  return out;
}

__kernel __attribute__((reqd_work_group_size(LOCAL_SIZE, 1, 1))) void qa_volume_pass(
    __global const float* restrict ring, const int voxels, const int slice_voxels, const int newest, const int previous,
    const int leaving, __global const uchar* restrict mask, __global float* restrict mean, __global float* restrict m2,
    const float inv_n, __global float* restrict sliding_mean, __global float* restrict sliding_m2,
    const float sliding_inv_n, __global const int* restrict carpet_row, __global float* restrict out) {
  __local float2 slice_sums[LOCAL_SIZE], dvars_sums[LOCAL_SIZE];
  __local int slice_counts[LOCAL_SIZE], dvars_counts[LOCAL_SIZE];
  const int lid = get_local_id(0);
  const int z = get_group_id(1);
  const int chunks = get_num_groups(0);
  __global const float* volume = ring + (long)newest * voxels;
  float2 slice_sum = (float2)(0.0f, 0.0f), dvars_sum = (float2)(0.0f, 0.0f);
  int slice_count = 0, dvars_count = 0;
  for (int i = get_global_id(0); i < slice_voxels; i += chunks * LOCAL_SIZE) {
    const long v = (long)z * slice_voxels + i;
    const float x = volume[v];
    // The cumulative moments (moments_add).
    const float old_mean = mean[v];
    const float d = x - old_mean;
    const float new_mean = old_mean + d * inv_n;
    mean[v] = new_mean;
    m2[v] += d * (x - new_mean);
    // The sliding window's (moments_add while it fills, moments_replace once full).
    if (leaving == -1) {
      const float s_old = sliding_mean[v];
      const float s_d = x - s_old;
      const float s_new = s_old + s_d * sliding_inv_n;
      sliding_mean[v] = s_new;
      sliding_m2[v] += s_d * (x - s_new);
    } else if (leaving >= 0) {
      const float x_old = ring[(long)leaving * voxels + v];
      const float s_old = sliding_mean[v];
      const float s_new = s_old + (x - x_old) * sliding_inv_n;
      sliding_mean[v] = s_new;
      const float s_m2 = sliding_m2[v] + (x - x_old) * (x - s_new + x_old - s_old);
      sliding_m2[v] = s_m2 < 0.0f ? 0.0f : s_m2;  // never below 0; a NaN stays NaN
    }
    const int row = carpet_row[v];
    if (row >= 0) out[6 * chunks * get_num_groups(1) + row] = x;
    if (mask[v] != 0) {
      if (isfinite(x)) {
        slice_sum = add_compensated(slice_sum, x);
        ++slice_count;
      }
      if (previous >= 0) {
        const float change = x - ring[(long)previous * voxels + v];
        if (isfinite(change)) {
          dvars_sum = add_compensated(dvars_sum, change * change);
          ++dvars_count;
        }
      }
    }
  }
  slice_sums[lid] = slice_sum;
  dvars_sums[lid] = dvars_sum;
  slice_counts[lid] = slice_count;
  dvars_counts[lid] = dvars_count;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = LOCAL_SIZE / 2; s > 0; s >>= 1) {
    if (lid < s) {
      slice_sums[lid] = merge_compensated(slice_sums[lid], slice_sums[lid + s]);
      dvars_sums[lid] = merge_compensated(dvars_sums[lid], dvars_sums[lid + s]);
      slice_counts[lid] += slice_counts[lid + s];
      dvars_counts[lid] += dvars_counts[lid + s];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    __global float* group = out + 6 * ((long)z * chunks + get_group_id(0));
    group[0] = slice_sums[0].x;
    group[1] = slice_sums[0].y;
    group[2] = dvars_sums[0].x;
    group[3] = dvars_sums[0].y;
    ((__global int*)group)[4] = slice_counts[0];
    ((__global int*)group)[5] = dvars_counts[0];
  }
}
