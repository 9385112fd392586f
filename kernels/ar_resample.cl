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
// Compile-time defines: N, P, SIGNFLIP (0 or 1), WG (work-group size along the voxels).
// NDRange: 2D, global = (VM rounded up to WG, B), local = (WG, 1).

#define TB 8  // volumes loaded together
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void ar_resample(
    __global const float* restrict w, __global const int* restrict voxel, __global const float* restrict rho,
    __global const int* restrict arrange, const int vm, const int vol, __global float* restrict out) {
  const int m = get_global_id(0);
  const int b = get_global_id(1);
  // The rearrangement in local memory: the loads of w then depend on no global load.
  __local int order[N];
  for (int i = get_local_id(0); i < N; i += WG) order[i] = arrange[(size_t)b * N + i];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (m >= vm) return;
  const size_t g = (size_t)voxel[m];
  float a[P];
  for (int k = 0; k < P; ++k) a[k] = rho[(size_t)k * (size_t)vol + g];
  float past[P];  // past[k] = y*_{t-1-k}
  for (int k = 0; k < P; ++k) past[k] = 0.0f;
  __global float* o = out + (size_t)b * N * (size_t)vol + g;
  for (int t0 = 0; t0 < N; t0 += TB) {
    float block[TB];  // TB loads in flight per work-item
    for (int i = 0; i < TB; ++i) {
      const int t = min(t0 + i, N - 1);
#if SIGNFLIP
      block[i] = (float)order[t] * w[(size_t)t * (size_t)vol + g];
#else
      block[i] = w[(size_t)order[t] * (size_t)vol + g];
#endif
    }
    for (int i = 0; i < TB; ++i) {
      if (t0 + i >= N) continue;
      float y = block[i];
      for (int k = 0; k < P; ++k) y = fma(a[k], past[k], y);  // past is 0 before the series starts: truncated filter
      o[(size_t)(t0 + i) * (size_t)vol] = y;
      for (int k = P - 1; k > 0; --k) past[k] = past[k - 1];
      past[0] = y;
    }
  }
}
