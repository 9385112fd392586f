// Voxel-wise running moments of a series of volumes (Welford 1962), for the live QA stage's mean, SD and tSNR maps:
// one work-item per voxel, no reduction.
//
// Memory layout: `volume`, `leaving`, `mean`, `m2`, `sd`, `tsnr` are one volume each (`voxels` floats, x fastest).
// `mean` and `m2` are the state: the mean of the volumes counted so far and the sum of squared deviations from it.
// NDRange: 1D, global >= voxels (rounded up to the local size), any local size.
//
// moments_add:     counts `volume`; `inv_n` = 1 / (the count after it).
// moments_replace: a sliding window of fixed length n: counts `volume` and drops `leaving` (the volume n places back);
//                  `inv_n` = 1 / n. (Welford's update with both changes: mean' = mean + (x - x_old) / n,
//                  m2' = m2 + (x - x_old) (x - mean' + x_old - mean).)
// moments_maps:    sd = sqrt(m2 * inv_n) (the population SD, numpy's std), tsnr = mean / sd (0 where sd is 0).
// A non-finite value makes that voxel's moments NaN from then on (as numpy's would be).

__kernel void moments_add(__global const float* restrict volume, __global float* restrict mean,
                          __global float* restrict m2, const int voxels, const float inv_n) {
  const int v = get_global_id(0);
  if (v >= voxels) return;
  const float x = volume[v];
  const float old_mean = mean[v];
  const float d = x - old_mean;
  const float new_mean = old_mean + d * inv_n;
  mean[v] = new_mean;
  m2[v] += d * (x - new_mean);
}

__kernel void moments_replace(__global const float* restrict volume, __global const float* restrict leaving,
                              __global float* restrict mean, __global float* restrict m2, const int voxels,
                              const float inv_n) {
  const int v = get_global_id(0);
  if (v >= voxels) return;
  const float x = volume[v];
  const float x_old = leaving[v];
  const float old_mean = mean[v];
  const float new_mean = old_mean + (x - x_old) * inv_n;
  mean[v] = new_mean;
  // Rounding can leave a tiny negative sum where the window's values are all equal: it is a variance, never below 0.
  // (A NaN stays NaN: fmax would drop it.)
  const float new_m2 = m2[v] + (x - x_old) * (x - new_mean + x_old - old_mean);
  m2[v] = new_m2 < 0.0f ? 0.0f : new_m2;
}

__kernel void moments_maps(__global const float* restrict mean, __global const float* restrict m2,
                           __global float* restrict sd, __global float* restrict tsnr, const int voxels,
                           const float inv_n) {
  const int v = get_global_id(0);
  if (v >= voxels) return;
  const float s = sqrt(fmax(m2[v], 0.0f) * inv_n);
  sd[v] = isnan(m2[v]) ? m2[v] : s;
  tsnr[v] = isnan(m2[v]) || isnan(mean[v]) ? NAN : (s > 0.0f ? mean[v] / s : 0.0f);
}
