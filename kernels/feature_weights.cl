// A decoder's weights over the voxels from its weights over the training samples (core/decoding/feature_weights.cpp,
// docs/algorithms/decoding.md): w_m = X^T beta_m, the representer theorem's back-projection, in double.
//
// Memory layout:
//   x     float  [N][P]: the samples' features, one row per sample
//   beta  double [N][M]: the samples' weights, one column per decision function
//   w     double [M][P]: out
// Compile-time defines: N, P, M (decision functions, at most 64).
// NDRange: 1D, global = P (one work-item per feature; the reads of X coalesced across features, beta broadcast).
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

__kernel void feature_weights(__global const float* restrict x, __global const double* restrict beta,
                              __global double* restrict w) {
  const int f = get_global_id(0);
  if (f >= P) return;
  double sum[M];
  for (int m = 0; m < M; ++m) sum[m] = 0.0;
  for (int i = 0; i < N; ++i) {
    const double xi = (double)x[(size_t)i * P + f];
    for (int m = 0; m < M; ++m) sum[m] += beta[i * M + m] * xi;
  }
  for (int m = 0; m < M; ++m) w[(size_t)m * P + f] = sum[m];
}
