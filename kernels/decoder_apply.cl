// The live decoder's per-volume step (core/decoding/live_decoder.cpp, docs/algorithms/decoding.md "Live"): each
// feature voxel's running sums over the run's volumes so far are updated with the new volume, the volume's value is
// detrended against the voxel's least-squares line (or mean) over the run so far and scaled (by the residuals' SD so
// far, or a fixed mean and scale), and every work-group sums its features' products with each decision function's
// weights. The host adds the work-groups' sums and the intercepts. In double throughout.
//
// Memory layout (P features, M decision functions, G = ceil(P / WG) work-groups):
//   volumes  float  [..][V]: the ring; the volume at `offset` (elements)
//   voxels   int    [P]: the features' voxels in a volume
//   sums     double [4][P]: in/out: the first volume's value x0, then sums over tau = 0..t of (x - x0), tau (x - x0),
//                   (x - x0)^2; reset by the host (zeros) at a run's start
//   coef     double [M][P]
//   shift    double [P], scale double [P]: SCALE 2: z = (r - shift) / scale
//   partial  double [G][M]: out
// Compile-time defines: P, M, WG (a power of two), DETREND (-1 none, 0 the mean, 1 the line), SCALE (0 none, 1 the
// residuals' running SD with 1/n, 2 fixed). Scalar args: offset (ulong), t (int: the volume's place in the run, 0..).
// NDRange: 1D, global = G * WG, local = WG.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void decoder_apply(
    __global const float* restrict volumes, const ulong offset, const int t, __global const int* restrict voxels,
    __global double* restrict sums, __global const double* restrict coef, __global const double* restrict shift,
    __global const double* restrict scale, __global double* restrict partial) {
  const int f = get_global_id(0);
  const int lid = get_local_id(0);
  __local double products[M][WG];
  double z = 0.0;
  if (f < P) {
    const double x = (double)volumes[offset + (size_t)voxels[f]];
    if (t == 0) sums[f] = x;
    const double d = x - sums[f];
    const double s0 = sums[P + f] + d, s1 = sums[2 * P + f] + (double)t * d, s2 = sums[3 * P + f] + d * d;
    sums[P + f] = s0;
    sums[2 * P + f] = s1;
    sums[3 * P + f] = s2;
    const double n = (double)(t + 1);
    double fitted = 0.0, rss = s2;
#if DETREND == 1
    // The line a + b tau over tau = 0..t: s_tau = t (t + 1) / 2, s_tautau = t (t + 1) (2t + 1) / 6.
    const double st = 0.5 * (double)t * n, stt = (double)t * n * (2.0 * (double)t + 1.0) / 6.0;
    const double det = n * stt - st * st;
    const double b = det > 0.0 ? (n * s1 - st * s0) / det : 0.0;
    const double a = (s0 - b * st) / n;
    fitted = a + b * (double)t;
    rss = s2 - a * s0 - b * s1;
#elif DETREND == 0
    fitted = s0 / n;
    rss = s2 - fitted * s0;
#endif
    double r = d - fitted;
#if DETREND < 0
    r = x;
#endif
#if SCALE == 1
    // A NaN or inf among the voxel's values so far makes z NaN (fmax would have hidden it).
    const double sd = isnan(rss) || isinf(rss) ? NAN : sqrt(fmax(rss, 0.0) / n);
    z = isnan(sd) ? NAN : (sd > 0.0 ? r / sd : 0.0);
#elif SCALE == 2
    z = (r - shift[f]) / scale[f];
#else
    z = r;
#endif
  }
  for (int m = 0; m < M; ++m) products[m][lid] = f < P ? coef[(size_t)m * P + f] * z : 0.0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int k = WG / 2; k > 0; k >>= 1) {
    if (lid < k) {
      for (int m = 0; m < M; ++m) products[m][lid] += products[m][lid + k];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid < M) partial[get_group_id(0) * M + lid] = products[lid][0];
}
