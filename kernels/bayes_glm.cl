// Gibbs chains of the Bayesian first-level GLM with AR(1) noise, in double, one work-item per (voxel, chain)
// (core/glm/bayes_glm.hpp; the model, priors and step: core/reference/bayes_glm_reference.hpp and
// docs/algorithms/bayes_glm.md). Each step draws from the Philox streams (random_draws.clh) with the same slots as the
// reference, so a chain equals the reference's draw for draw up to the double functions' rounding.
// Per work-item, once: the voxel's lag sums m00 = X0'y0, m01 = X0'y1, m10 = X1'y0, m11 = X1'y1 and g00, g01, g11
// (X0, y0: volumes 1 .. T-1; X1, y1: 0 .. T-2); per step the P x P system and one pass over the series for the
// residuals' lag sums (explicit residuals: their quadratic forms in beta cancel badly at BOLD's offsets).
// Memory layout (V voxels, T volumes, C chains, S steps, NP regressors):
//   y        float [V][T]: the voxels' series
//   x        double [T][NP]: the design
//   s00, s01, s11   double [NP][NP]: X0'X0, X0'X1, X1'X1 (the host sums them in time order, as the reference)
//   chains   double [V][C][S][NP + 2]: beta, sigma^2, rho after each step
// Compile-time defines: NP (1 .. 16).
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF  // round as the host reference does (no fused multiply-adds)
#include "random_draws.clh"

#define RHO_SLOT 15u

__kernel void bayes_glm_chains(__global const float* restrict y, const int voxels, const int t_len,
                               __global const double* restrict x, __global const double* restrict s00,
                               __global const double* restrict s01, __global const double* restrict s11,
                               const double a0, const double b0, const double beta_precision,
                               const double rho_precision, const uint key_lo, const uint key_hi, const int chains,
                               const int steps, const double rho0, __global double* restrict out) {
  const int v = get_global_id(0);
  const int c = get_global_id(1);
  if (v >= voxels || c >= chains) return;
  const uint2 key = (uint2)(key_lo, key_hi);
  const __global float* yv = y + (size_t)v * (size_t)t_len;
  double m00[NP], m01[NP], m10[NP], m11[NP];
  for (int k = 0; k < NP; ++k) m00[k] = m01[k] = m10[k] = m11[k] = 0.0;
  double g00 = 0.0, g01 = 0.0, g11 = 0.0;
  for (int t = 1; t < t_len; ++t) {
    const double cur = yv[t], prev = yv[t - 1];
    for (int k = 0; k < NP; ++k) {
      const double xc = x[t * NP + k], xp = x[(t - 1) * NP + k];
      m00[k] += xc * cur;
      m01[k] += xc * prev;
      m10[k] += xp * cur;
      m11[k] += xp * prev;
    }
    g00 += cur * cur;
    g01 += cur * prev;
    g11 += prev * prev;
  }
  const int n = t_len - 1;
  double rho = rho0;
  double l[NP][NP], mean[NP], xy[NP], beta[NP], z[NP];
  __global double* o = out + ((size_t)v * (size_t)chains + (size_t)c) * (size_t)steps * (NP + 2);
  for (int step = 0; step < steps; ++step) {
    // Precision P = X~'X~ + lambda I (lower triangle), X~'y~, y~'y~ at the current rho.
    for (int i = 0; i < NP; ++i) {
      for (int j = 0; j <= i; ++j) {
        l[i][j] = s00[i * NP + j] - rho * (s01[i * NP + j] + s01[j * NP + i]) + rho * rho * s11[i * NP + j];
      }
      l[i][i] += beta_precision;
      xy[i] = m00[i] - rho * (m01[i] + m10[i]) + rho * rho * m11[i];
    }
    const double yy = g00 - 2.0 * rho * g01 + rho * rho * g11;
    // Cholesky P = L L' in place.
    for (int j = 0; j < NP; ++j) {
      double d = l[j][j];
      for (int k = 0; k < j; ++k) d -= l[j][k] * l[j][k];
      l[j][j] = sqrt(d);
      for (int i = j + 1; i < NP; ++i) {
        double s = l[i][j];
        for (int k = 0; k < j; ++k) s -= l[i][k] * l[j][k];
        l[i][j] = s / l[j][j];
      }
    }
    // mean = P^-1 xy: L w = xy, then L' mean = w.
    for (int i = 0; i < NP; ++i) {
      double s = xy[i];
      for (int k = 0; k < i; ++k) s -= l[i][k] * mean[k];
      mean[i] = s / l[i][i];
    }
    for (int i = NP - 1; i >= 0; --i) {
      double s = mean[i];
      for (int k = i + 1; k < NP; ++k) s -= l[k][i] * mean[k];
      mean[i] = s / l[i][i];
    }
    double mxy = 0.0;
    for (int i = 0; i < NP; ++i) mxy += mean[i] * xy[i];
    // (1) sigma^2 | rho.
    const double shape = a0 + 0.5 * (double)n, scale = b0 + 0.5 * fmax(0.0, yy - mxy);
    const double sigma2 = scale / gamma_draw_d(key, (uint)v, (uint)c, (uint)step, 0u, shape);
    // (2) beta = mean + sigma L'^-1 z.
    for (int k = 0; k < NP; k += 2) {
      const double2 pair = normal_pair_d(key, (uint)v, (uint)c, (uint)step, (uint)(1 + k / 2));
      z[k] = pair.x;
      if (k + 1 < NP) z[k + 1] = pair.y;
    }
    for (int i = NP - 1; i >= 0; --i) {
      double s = z[i];
      for (int k = i + 1; k < NP; ++k) s -= l[k][i] * beta[k];
      beta[i] = s / l[i][i];
    }
    const double sigma = sqrt(sigma2);
    for (int i = 0; i < NP; ++i) beta[i] = mean[i] + sigma * beta[i];
    // (3) rho | beta, sigma^2 from the residuals' lag sums sum e_t e_(t-1), sum e_(t-1)^2, in time order.
    double s01e = 0.0, s11e = 0.0, previous = yv[0];
    for (int k = 0; k < NP; ++k) previous -= x[k] * beta[k];
    for (int t = 1; t < t_len; ++t) {
      double e = yv[t];
      for (int k = 0; k < NP; ++k) e -= x[t * NP + k] * beta[k];
      s01e += e * previous;
      s11e += previous * previous;
      previous = e;
    }
    const double q = rho_precision + s11e / sigma2;
    const double proposal =
        s01e / (sigma2 * q) + normal_pair_d(key, (uint)v, (uint)c, (uint)step, RHO_SLOT).x / sqrt(q);
    if (fabs(proposal) < 1.0) rho = proposal;
    for (int i = 0; i < NP; ++i) o[i] = beta[i];
    o[NP] = sigma2;
    o[NP + 1] = rho;
    o += NP + 2;
  }
}
