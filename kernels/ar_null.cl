// The null data of the first-level permutation test (core/permutation/first_level_permutation.cpp,
// docs/algorithms/glm_ar.md), one work-item per mask voxel:
//   ar_null_estimate: the nuisance-only residuals r = y - Q (Q'y) (Q: an orthonormal basis of the nuisance columns,
//                     n x Z; Z = 0: r = y) and their Yule-Walker AR(P) coefficients (kernels/yule_walker.clh);
//                     also keeps Q'y per voxel.
//   ar_null_whiten:   after the host has smoothed the AR maps, the truncated whitening
//                     w_t = r_t - sum_{k=1..min(t,P)} rho_k r_{t-k}, r recomputed from y and Q'y.
//
// Memory layout (VOL = voxels of the grid, VM = mask voxels):
//   y      float [N][VOL]: the series
//   voxel  int [VM]: full-grid index of each mask voxel
//   q      float [N][Z]: Q (unused when Z = 0)
//   coef   float [Z][VM]: Q'y per voxel
//   rho    float [P][VOL]: estimate writes the coefficients of the mask voxels; whiten reads them
//   w      float [N][VOL]: whiten writes the mask voxels
// Compile-time defines: N, P, Z. NDRange: 1D, global = VM rounded up.
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double real;
#else
typedef float real;
#endif

#include "yule_walker.clh"

// r_t of a voxel from y_t and its Q'y.
#if Z > 0
#define RESIDUAL(t, yt, c) residual((t), (yt), (c), q)
inline real residual(int t, real yt, const real* c, __constant const float* q) {
  for (int j = 0; j < Z; ++j) yt -= (real)q[t * Z + j] * c[j];
  return yt;
}
#define COEFS Z
#else
#define RESIDUAL(t, yt, c) (yt)
#define COEFS 1
#endif

__kernel void ar_null_estimate(__global const float* restrict y, __global const int* restrict voxel,
                               __constant const float* restrict q, const int vm, const int vol,
                               __global float* restrict coef, __global float* restrict rho) {
  const int m = get_global_id(0);
  if (m >= vm) return;
  const size_t g = (size_t)voxel[m];
  real c[COEFS];
  for (int j = 0; j < COEFS; ++j) c[j] = 0;
#if Z > 0
  for (int t = 0; t < N; ++t) {
    const real yt = (real)y[(size_t)t * (size_t)vol + g];
    for (int j = 0; j < Z; ++j) c[j] += (real)q[t * Z + j] * yt;
  }
  for (int j = 0; j < Z; ++j) coef[(size_t)j * (size_t)vm + m] = (float)c[j];
  // The residuals below use the float-rounded Q'y, as ar_null_whiten will.
  for (int j = 0; j < Z; ++j) c[j] = (real)coef[(size_t)j * (size_t)vm + m];
#endif
  YwSums sums;
  yw_init(&sums);
  for (int t = 0; t < N; ++t) yw_add(&sums, RESIDUAL(t, (real)y[(size_t)t * (size_t)vol + g], c));
  real a[P];
  yw_solve(&sums, a);
  for (int k = 0; k < P; ++k) rho[(size_t)k * (size_t)vol + g] = (float)a[k];
}

__kernel void ar_null_whiten(__global const float* restrict y, __global const int* restrict voxel,
                             __constant const float* restrict q, const int vm, const int vol,
                             __global const float* restrict coef, __global const float* restrict rho,
                             __global float* restrict w) {
  const int m = get_global_id(0);
  if (m >= vm) return;
  const size_t g = (size_t)voxel[m];
  real c[COEFS];
  for (int j = 0; j < COEFS; ++j) c[j] = Z > 0 ? (real)coef[(size_t)j * (size_t)vm + m] : (real)0;
  real a[P], past[P];
  for (int k = 0; k < P; ++k) {
    a[k] = (real)rho[(size_t)k * (size_t)vol + g];
    past[k] = 0;
  }
  for (int t = 0; t < N; ++t) {
    const real r = RESIDUAL(t, (real)y[(size_t)t * (size_t)vol + g], c);
    real out = r;
    for (int k = 0; k < P; ++k) out -= a[k] * past[k];  // past is 0 before the series starts: truncated
    w[(size_t)t * (size_t)vol + g] = (float)out;
    for (int k = P - 1; k > 0; --k) past[k] = past[k - 1];
    past[0] = r;
  }
}
