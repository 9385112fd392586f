// The AR(P) GLM, one Cochrane-Orcutt step per launch (core/glm/ar_glm.cpp, docs/algorithms/glm_ar.md). One work-item
// per (mask voxel, data set): the voxel's series whitened with its AR coefficients (dropping the first P volumes),
// regressed on the whitened orthonormal basis U (Cholesky of the r x r system), then a second pass over the series
// for either
//   ESTIMATE 1: the unwhitened residuals' Yule-Walker AR(P) coefficients (demeaned; c0 / n, ck / (n - k)), written
//               to rho_out for the next step (after spatial smoothing on the host side), or
//   ESTIMATE 0: the whitened residual sum of squares, sigma2 = RSS / DOF, and per statistic s with rows A (q x r):
//               t = A gamma / sqrt(sigma2 A G^-1 A') (q = 1) or F = (A gamma)' (A G^-1 A')^-1 (A gamma) / (q sigma2).
//
// Memory layout (VOL = voxels of the full grid, VM = mask voxels, B = data sets of the launch):
//   y        float [B][N][VOL]: the series, volume after volume
//   voxel    int [VM]: the full-grid index of each mask voxel (ascending)
//   basis    float [N][R]: U
//   rows     float [NS][QMAX][R]: each statistic's rows in gamma's coordinates
//   shape    int [NS][2]: rows q (0: not estimable -> NaN) and kind (0 t, 1 F)
//   rho_in   float [B][P][VOL]: the AR coefficients of this fit (ignored when first != 0: all zero)
//   rho_out  float [B][P][VOL]: ESTIMATE 1 writes the new coefficients of the mask voxels
//   stat     float [NS][SB][VM]: ESTIMATE 0 writes statistic s of data set b at (s * SB + b) * VM + m
//   sigma2   float [B][VM], gamma float [B][R][VM]: ESTIMATE 0 with details != 0
// Compile-time defines: N, P, R, NS, QMAX, DOF (n - P - r), ESTIMATE, WG (map_max's work-group size).
// NDRange: 2D, global = (VM rounded up, B).
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double real;
#else
typedef float real;
#endif

#define PACKED(i, j) ((i) * ((i) + 1) / 2 + (j))  // lower triangle, i >= j

// In-place Cholesky of a packed lower-triangular D x D matrix; 0 when it is not positive definite.
#define CHOLESKY(a, D, ok)                                                             \
  do {                                                                                 \
    ok = 1;                                                                            \
    for (int i_ = 0; i_ < (D) && ok; ++i_) {                                           \
      for (int j_ = 0; j_ <= i_; ++j_) {                                               \
        real s_ = a[PACKED(i_, j_)];                                                   \
        for (int k_ = 0; k_ < j_; ++k_) s_ -= a[PACKED(i_, k_)] * a[PACKED(j_, k_)];   \
        if (i_ == j_) {                                                                \
          if (!(s_ > (real)1e-12 * fabs(a[PACKED(i_, i_)]) && s_ > (real)0)) ok = 0;   \
          a[PACKED(i_, i_)] = ok ? sqrt(s_) : (real)1;                                 \
        } else {                                                                       \
          a[PACKED(i_, j_)] = s_ / a[PACKED(j_, j_)];                                  \
        }                                                                              \
      }                                                                                \
    }                                                                                  \
  } while (0)

__kernel void ar_fit(__global const float* restrict y, __global const int* restrict voxel,
                     __constant float* restrict basis, __constant float* restrict rows,
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
  real h[R];
  for (int i = 0; i < R * (R + 1) / 2; ++i) G[i] = 0;
  for (int i = 0; i < R; ++i) h[i] = 0;
  real past[P];  // past[k] = y_{t-1-k}
  for (int k = 0; k < P; ++k) past[k] = 0;
  const float y0 = ys[0];
  int varies = 0;  // a constant series has no noise to model: NaN statistics, AR 0
  for (int t = 0; t < N; ++t) {
    const real yt = (real)ys[(size_t)t * (size_t)vol];
    varies |= ys[(size_t)t * (size_t)vol] != y0;
    if (t >= P) {
      real yw = yt;
      for (int k = 0; k < P; ++k) yw -= rho[k] * past[k];
      real uw[R];
      for (int j = 0; j < R; ++j) {
        real u = (real)basis[t * R + j];
        for (int k = 0; k < P; ++k) u -= rho[k] * (real)basis[(t - 1 - k) * R + j];
        uw[j] = u;
      }
      for (int i = 0; i < R; ++i) {
        h[i] += uw[i] * yw;
        for (int j = 0; j <= i; ++j) G[PACKED(i, j)] += uw[i] * uw[j];
      }
    }
    for (int k = P - 1; k > 0; --k) past[k] = past[k - 1];
    past[0] = yt;
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
  // Pass 2: unwhitened residuals e_t = y_t - u_t' gamma; raw lag sums, the first and last P residuals.
  real lag[P + 1], head[P], last[P], sum = 0;
  for (int k = 0; k <= P; ++k) lag[k] = 0;
  for (int k = 0; k < P; ++k) past[k] = 0;
  for (int t = 0; t < N; ++t) {
    real e = (real)ys[(size_t)t * (size_t)vol];
    for (int j = 0; j < R; ++j) e -= (real)basis[t * R + j] * gam[j];
    sum += e;
    lag[0] += e * e;
    for (int k = 1; k <= P; ++k) {
      if (t >= k) lag[k] += e * past[k - 1];
    }
    if (t < P) head[t] = e;
    for (int k = P - 1; k > 0; --k) past[k] = past[k - 1];
    past[0] = e;
  }
  for (int k = 0; k < P; ++k) last[k] = past[k];  // last[k] = e_{N-1-k}
  // Demeaned autocovariances: sum_{t>=k} (e_t - m)(e_{t-k} - m) = lag_k - m (tail_k + head_k) + (N - k) m^2.
  const real mean = sum / (real)N;
  real c[P + 1];
  c[0] = (lag[0] - sum * mean) / (real)N;
  real head_cut = 0, tail_cut = 0;  // sums of the first k and of the last k residuals
  for (int k = 1; k <= P; ++k) {
    head_cut += head[k - 1];
    tail_cut += last[k - 1];
    const real tail_k = sum - head_cut;   // sum_{t=k}^{N-1} e_t
    const real front_k = sum - tail_cut;  // sum_{t=0}^{N-1-k} e_t
    c[k] = (lag[k] - mean * (tail_k + front_k) + (real)(N - k) * mean * mean) / (real)(N - k);
  }
  // Levinson-Durbin: Toeplitz(c_0 .. c_{P-1}) a = (c_1 .. c_P).
  real a[P], prev[P];
  for (int k = 0; k < P; ++k) a[k] = 0;
  real err = c[0];
  int good = ok && c[0] > (real)0;
  for (int k = 0; k < P && good; ++k) {
    real acc = c[k + 1];
    for (int j = 0; j < k; ++j) acc -= a[j] * c[k - j];
    const real kappa = acc / err;
    for (int j = 0; j < k; ++j) prev[j] = a[j];
    for (int j = 0; j < k; ++j) a[j] = prev[j] - kappa * prev[k - 1 - j];
    a[k] = kappa;
    err *= (real)1 - kappa * kappa;
    if (!(err > (real)0)) good = 0;
  }
  for (int k = 0; k < P; ++k) rho_out[((size_t)b * P + k) * (size_t)vol + g] = good ? (float)a[k] : 0.0f;
#else
  // Pass 2: the whitened residual sum of squares.
  real rss = 0;
  for (int k = 0; k < P; ++k) past[k] = 0;
  for (int t = 0; t < N; ++t) {
    const real yt = (real)ys[(size_t)t * (size_t)vol];
    if (t >= P) {
      real r = yt;
      for (int k = 0; k < P; ++k) r -= rho[k] * past[k];
      for (int j = 0; j < R; ++j) {
        real u = (real)basis[t * R + j];
        for (int k = 0; k < P; ++k) u -= rho[k] * (real)basis[(t - 1 - k) * R + j];
        r -= u * gam[j];
      }
      rss += r * r;
    }
    for (int k = P - 1; k > 0; --k) past[k] = past[k - 1];
    past[0] = yt;
  }
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
          const real a_li = (real)rows[(s * QMAX + l) * R + i];
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
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void map_max(__global const float* restrict maps,
                                                                      const int vm, const int count, const int sb,
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
