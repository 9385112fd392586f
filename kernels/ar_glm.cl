// The AR(P) GLM, one Cochrane-Orcutt step per launch (core/glm/ar_glm.cpp, docs/algorithms/glm_ar.md). One work-item
// per (mask voxel, data set): the voxel's series whitened with its AR coefficients (dropping the first P volumes),
// regressed on the whitened orthonormal basis U (Cholesky of the r x r system), then a second pass over the series
// for either
//   ESTIMATE 1: the unwhitened residuals' Yule-Walker AR(P) coefficients (demeaned; c0 / n, ck / (n - k)), written
//               to rho_out for the next step (after spatial smoothing on the host side), or
//   ESTIMATE 0: the whitened residual sum of squares (from the pass-1 sums in double, a second pass in float),
//               sigma2 = RSS / DOF, and per statistic s with rows A (q x r):
//               t = A gamma / sqrt(sigma2 A G^-1 A') (q = 1) or F = (A gamma)' (A G^-1 A')^-1 (A gamma) / (q sigma2).
//
// Memory layout (VOL = voxels of the full grid, VM = mask voxels, B = data sets of the launch):
//   y        float [B][N][VOL]: the series, volume after volume
//   voxel    int [VM]: the full-grid index of each mask voxel (ascending)
//   basis    real [N][R]: U (double where the device has cl_khr_fp64, as `real`)
//   rows     real [NS][QMAX][R]: each statistic's rows in gamma's coordinates
//   shape    int [NS][2]: rows q (0: not estimable -> NaN) and kind (0 t, 1 F)
//   rho_in   float [B][P][VOL]: the AR coefficients of this fit (ignored when first != 0: all zero)
//   rho_out  float [B][P][VOL]: ESTIMATE 1 writes the new coefficients of the mask voxels
//   stat     float [NS][SB][VM]: ESTIMATE 0 writes statistic s of data set b at (s * SB + b) * VM + m
//   sigma2   float [B][VM], gamma float [B][R][VM]: ESTIMATE 0 with details != 0
// Compile-time defines: N, P, R, NS, QMAX, DOF (n - P - r), ESTIMATE, WG (map_max's work-group size), BSPACE
// (__constant or __global: where basis and rows live), TB (volumes loaded together).
// NDRange: 2D, global = (VM rounded up, B).
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double real;
#else
typedef float real;
#endif

#include "yule_walker.clh"

#ifndef TB
#define TB 8  // volumes loaded together
#endif
#ifndef BSPACE
#define BSPACE __constant  // __global when U and the rows exceed constant memory (long series, many columns)
#endif

#define PACKED(i, j) ((i) * ((i) + 1) / 2 + (j))  // lower triangle, i >= j

// In-place Cholesky of a packed lower-triangular D x D matrix; ok = 0 when it is not positive definite (the loops
// run to the end regardless, so that with a compile-time D they unroll and the matrix stays in registers).
#define CHOLESKY(a, D, ok)                                                            \
  do {                                                                                \
    ok = 1;                                                                           \
    for (int i_ = 0; i_ < (D); ++i_) {                                                \
      for (int j_ = 0; j_ <= i_; ++j_) {                                              \
        real s_ = a[PACKED(i_, j_)];                                                  \
        for (int k_ = 0; k_ < j_; ++k_) s_ -= a[PACKED(i_, k_)] * a[PACKED(j_, k_)];  \
        if (i_ == j_) {                                                               \
          const int pd_ = s_ > (real)1e-12 * fabs(a[PACKED(i_, i_)]) && s_ > (real)0; \
          ok = ok && pd_;                                                             \
          a[PACKED(i_, i_)] = pd_ ? sqrt(s_) : (real)1;                               \
        } else {                                                                      \
          a[PACKED(i_, j_)] = s_ / a[PACKED(j_, j_)];                                 \
        }                                                                             \
      }                                                                               \
    }                                                                                 \
  } while (0)

__kernel void ar_fit(__global const float* restrict y, __global const int* restrict voxel,
                     BSPACE const real* restrict basis, BSPACE const real* restrict rows,
                     __constant int* restrict shape, __global const float* restrict rho_in, const int first,
                     const int vm, const int vol, const int sb, __global float* restrict rho_out,
                     __global float* restrict stat, const int details, __global float* restrict sigma2,
                     __global float* restrict gamma_out) {
  const int m = get_global_id(0);
  const int b = get_global_id(1);
  if (m >= vm) return;
  const size_t g = (size_t)voxel[m];
  const __global float* ys = y + (size_t)b * N * (size_t)vol + g;
  real rho[P];
  for (int k = 0; k < P; ++k) rho[k] = first ? (real)0 : (real)rho_in[((size_t)b * P + k) * (size_t)vol + g];

  // Pass 1: G = U~'U~ (packed lower) and h = U~'y~ over t = P .. N-1.
  real G[R * (R + 1) / 2];
  real h[R], yy = 0;
  for (int i = 0; i < R * (R + 1) / 2; ++i) G[i] = 0;
  for (int i = 0; i < R; ++i) h[i] = 0;
  real past[P];  // past[k] = y_{t-1-k}
  for (int k = 0; k < P; ++k) past[k] = 0;
  const float y0 = ys[0];
  int varies = 0;  // a constant series has no noise to model: NaN statistics, AR 0
  for (int t0 = 0; t0 < N; t0 += TB) {
    float block[TB];  // TB loads in flight per work-item: the loop is latency-bound otherwise
    for (int i = 0; i < TB; ++i) block[i] = t0 + i < N ? ys[(size_t)(t0 + i) * (size_t)vol] : y0;
    for (int i = 0; i < TB; ++i) {
      const int t = t0 + i;
      if (t >= N) continue;
      const real yt = (real)block[i];
      varies |= block[i] != y0;
      if (t >= P) {
        real yw = yt;
        for (int k = 0; k < P; ++k) yw -= rho[k] * past[k];
        real uw[R];
        for (int j = 0; j < R; ++j) {
          real u = basis[t * R + j];
          for (int k = 0; k < P; ++k) u -= rho[k] * basis[(t - 1 - k) * R + j];
          uw[j] = u;
        }
        yy += yw * yw;
        for (int i = 0; i < R; ++i) {
          h[i] += uw[i] * yw;
          for (int j = 0; j <= i; ++j) G[PACKED(i, j)] += uw[i] * uw[j];
        }
      }
      for (int k = P - 1; k > 0; --k) past[k] = past[k - 1];
      past[0] = yt;
    }
  }
  int ok;
  CHOLESKY(G, R, ok);
  ok = ok && varies;
  real gam[R];
  for (int i = 0; i < R; ++i) {  // L z = h, then L' gamma = z
    real s = h[i];
    for (int k = 0; k < i; ++k) s -= G[PACKED(i, k)] * gam[k];
    gam[i] = s / G[PACKED(i, i)];
  }
  for (int i = R - 1; i >= 0; --i) {
    real s = gam[i];
    for (int k = i + 1; k < R; ++k) s -= G[PACKED(k, i)] * gam[k];
    gam[i] = s / G[PACKED(i, i)];
  }

#if ESTIMATE
  // Pass 2: unwhitened residuals e_t = y_t - u_t' gamma, their Yule-Walker AR(P).
  YwSums sums;
  yw_init(&sums);
  for (int t0 = 0; t0 < N; t0 += TB) {
    float block[TB];
    for (int i = 0; i < TB; ++i) block[i] = t0 + i < N ? ys[(size_t)(t0 + i) * (size_t)vol] : 0.0f;
    for (int i = 0; i < TB; ++i) {
      const int t = t0 + i;
      if (t >= N) continue;
      real e = (real)block[i];
      for (int j = 0; j < R; ++j) e -= basis[t * R + j] * gam[j];
      yw_add(&sums, e);
    }
  }
  real a[P];
  const int good = yw_solve(&sums, a) && ok;
  for (int k = 0; k < P; ++k) rho_out[((size_t)b * P + k) * (size_t)vol + g] = good ? (float)a[k] : 0.0f;
#else
#ifdef cl_khr_fp64
  // In double the residual sum of squares follows from the sums: RSS = y~'y~ - gamma'h (G gamma = h). The whitened
  // series keep a mean of ~1000 (1 - sum rho), so y~'y~ exceeds RSS by ~1e4: ~1e-12 relative left, no second pass.
  real rss = yy;
  for (int i = 0; i < R; ++i) rss -= gam[i] * h[i];
  rss = fmax(rss, (real)0);
#else
  // In float the cancellation would leave nothing: a second pass over the series.
  real rss = 0;
  for (int k = 0; k < P; ++k) past[k] = 0;
  for (int t = 0; t < N; ++t) {
    const real yt = (real)ys[(size_t)t * (size_t)vol];
    if (t >= P) {
      real r = yt;
      for (int k = 0; k < P; ++k) r -= rho[k] * past[k];
      for (int j = 0; j < R; ++j) {
        real u = basis[t * R + j];
        for (int k = 0; k < P; ++k) u -= rho[k] * basis[(t - 1 - k) * R + j];
        r -= u * gam[j];
      }
      rss += r * r;
    }
    for (int k = P - 1; k > 0; --k) past[k] = past[k - 1];
    past[0] = yt;
  }
#endif
  const real s2 = rss / (real)DOF;
  const int valid = ok && s2 > (real)0;
  for (int s = 0; s < NS; ++s) {
    const int q = shape[2 * s];
    float value = NAN;
    if (valid && q > 0) {
      // Z = L^-1 A' (r x q), M = Z'Z (q x q, packed), d = A gamma.
      real z[QMAX][R];
      real d[QMAX];
      for (int l = 0; l < q; ++l) {
        d[l] = 0;
        for (int i = 0; i < R; ++i) {
          const real a_li = rows[(s * QMAX + l) * R + i];
          d[l] += a_li * gam[i];
          real acc = a_li;
          for (int k = 0; k < i; ++k) acc -= G[PACKED(i, k)] * z[l][k];
          z[l][i] = acc / G[PACKED(i, i)];
        }
      }
      real mm[QMAX * (QMAX + 1) / 2];
      for (int i = 0; i < q; ++i) {
        for (int j = 0; j <= i; ++j) {
          real acc = 0;
          for (int k = 0; k < R; ++k) acc += z[i][k] * z[j][k];
          mm[PACKED(i, j)] = acc;
        }
      }
      if (shape[2 * s + 1] == 0) {
        value = (float)(d[0] / sqrt(s2 * mm[0]));
      } else {
        int okm;
        CHOLESKY(mm, q, okm);
        if (okm) {
          real quad = 0;
          real w[QMAX];
          for (int i = 0; i < q; ++i) {
            real acc = d[i];
            for (int k = 0; k < i; ++k) acc -= mm[PACKED(i, k)] * w[k];
            w[i] = acc / mm[PACKED(i, i)];
            quad += w[i] * w[i];
          }
          value = (float)(quad / ((real)q * s2));
        }
      }
    }
    stat[((size_t)s * sb + b) * (size_t)vm + m] = value;
  }
  if (details) {
    sigma2[(size_t)b * vm + m] = valid ? (float)s2 : NAN;
    for (int i = 0; i < R; ++i) gamma_out[((size_t)b * R + i) * (size_t)vm + m] = ok ? (float)gam[i] : NAN;
  }
#endif
}

// The largest finite value of each map (NaN ignored; -INFINITY for none): one work-group of WG work-items per map,
// map (s, b) = group (s * count + b) reads stat [s][SB][VM] at (s * sb + b) * vm; out float [NS][count].
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void map_max(__global const float* restrict maps, const int vm,
                                                                      const int count, const int sb,
                                                                      __global float* restrict out) {
  const int map = get_group_id(0);
  const int lid = get_local_id(0);
  __local float best[WG];
  float v = -INFINITY;
  const __global float* p = maps + ((size_t)(map / count) * sb + (size_t)(map % count)) * (size_t)vm;
  for (int i = lid; i < vm; i += WG) v = fmax(v, p[i]);  // fmax ignores NaN
  best[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (lid < s) best[lid] = fmax(best[lid], best[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) out[map] = best[0];
}
