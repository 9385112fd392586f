// Surrogate series for the first-level permutation test (core/permutation/first_level_permutation.cpp,
// docs/algorithms/glm_ar.md; Eklund et al. 2012): each mask voxel's whitened null residuals w, rearranged in time the
// same way for every voxel (permuted, or their signs flipped), re-coloured with the voxel's AR(P) model:
//   y*_t = w*_t + sum_{k=1..min(t,P)} rho_k y*_{t-k}.
// One work-item per (mask voxel, rearrangement).
//
// Memory layout (VOL = voxels of the grid, VM = mask voxels, B = rearrangements of the launch):
//   w        float [N][VOL]: whitened null residuals
//   voxel    int [VM]: full-grid index of each mask voxel
//   rho      float [P][VOL]: AR coefficients
//   arrange  int [B][N]: permute: the source time point of each t; sign flip: +1 or -1 per t
//   out      float [B][N][VOL]: the surrogates (only mask voxels are written)
// Compile-time defines: N, P, SIGNFLIP (0 or 1).
// NDRange: 2D, global = (VM rounded up, B).

__kernel void ar_resample(__global const float* restrict w, __global const int* restrict voxel,
                          __global const float* restrict rho, __global const int* restrict arrange, const int vm,
                          const int vol, __global float* restrict out) {
  const int m = get_global_id(0);
  const int b = get_global_id(1);
  if (m >= vm) return;
  const size_t g = (size_t)voxel[m];
  float a[P];
  for (int k = 0; k < P; ++k) a[k] = rho[(size_t)k * (size_t)vol + g];
  float past[P];  // past[k] = y*_{t-1-k}
  for (int k = 0; k < P; ++k) past[k] = 0.0f;
  __global const int* order = arrange + (size_t)b * N;
  __global float* o = out + (size_t)b * N * (size_t)vol + g;
  for (int t = 0; t < N; ++t) {
#if SIGNFLIP
    float y = (float)order[t] * w[(size_t)t * (size_t)vol + g];
#else
    float y = w[(size_t)order[t] * (size_t)vol + g];
#endif
    for (int k = 0; k < P; ++k) y = fma(a[k], past[k], y);  // past is 0 before the series starts: truncated filter
    o[(size_t)t * (size_t)vol] = y;
    for (int k = P - 1; k > 0; --k) past[k] = past[k - 1];
    past[0] = y;
  }
}
