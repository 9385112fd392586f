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
//   chains   double [V][C][S][NP + 2]: beta, sigma^2, rho after each step (bayes_glm_chains, for tests)
//   contrasts, summary, above: bayes_glm_summary (below)
// Compile-time defines: NP (1 .. 16); NC contrasts and NB batches (bayes_glm_summary).
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF  // round as the host reference does (no fused multiply-adds)
#include "random_draws.clh"

#define RHO_SLOT 15u
#ifndef NC
#define NC 1
#endif
#ifndef NB
#define NB 16
#endif

// The voxel's series and lag sums, the design, the prior and the chain's state.
typedef struct {
  const __global float* y;
  int t_len;
  const __global double* x;
  const __global double* s00;
  const __global double* s01;
  const __global double* s11;
  double m00[NP], m01[NP], m10[NP], m11[NP];
  double g00, g01, g11;
  double a0, b0, beta_precision, rho_precision;
  uint2 key;
  uint voxel, chain;
  double rho, sigma2;
  double beta[NP];
} GibbsState;

inline void gibbs_setup(GibbsState* g) {
  for (int k = 0; k < NP; ++k) g->m00[k] = g->m01[k] = g->m10[k] = g->m11[k] = 0.0;
  g->g00 = g->g01 = g->g11 = 0.0;
  for (int t = 1; t < g->t_len; ++t) {
    const double cur = g->y[t], prev = g->y[t - 1];
    for (int k = 0; k < NP; ++k) {
      const double xc = g->x[t * NP + k], xp = g->x[(t - 1) * NP + k];
      g->m00[k] += xc * cur;
      g->m01[k] += xc * prev;
      g->m10[k] += xp * cur;
      g->m11[k] += xp * prev;
    }
    g->g00 += cur * cur;
    g->g01 += cur * prev;
    g->g11 += prev * prev;
  }
}

// One Gibbs step (docs/algorithms/bayes_glm.md): sigma^2 | rho, beta | sigma^2, rho, rho | beta, sigma^2.
inline void gibbs_step(GibbsState* g, const int step) {
  const int n = g->t_len - 1;
  const double rho = g->rho;
  double l[NP][NP], mean[NP], xy[NP], z[NP];
  // Precision P = X~'X~ + lambda I (lower triangle), X~'y~, y~'y~ at the current rho.
  for (int i = 0; i < NP; ++i) {
    for (int j = 0; j <= i; ++j) {
      l[i][j] = g->s00[i * NP + j] - rho * (g->s01[i * NP + j] + g->s01[j * NP + i]) + rho * rho * g->s11[i * NP + j];
    }
    l[i][i] += g->beta_precision;
    xy[i] = g->m00[i] - rho * (g->m01[i] + g->m10[i]) + rho * rho * g->m11[i];
  }
  const double yy = g->g00 - 2.0 * rho * g->g01 + rho * rho * g->g11;
  // Cholesky P = L L' in place.
  for (int j = 0; j < NP; ++j) {
    double d = l[j][j];
    for (int k = 0; k < j; ++k) d -= l[j][k] * l[j][k];
    l[j][j] = sqrt(d);
    for (int i = j + 1; i < NP; ++i) {
      double t = l[i][j];
      for (int k = 0; k < j; ++k) t -= l[i][k] * l[j][k];
      l[i][j] = t / l[j][j];
    }
  }
  // mean = P^-1 xy: L w = xy, then L' mean = w.
  for (int i = 0; i < NP; ++i) {
    double t = xy[i];
    for (int k = 0; k < i; ++k) t -= l[i][k] * mean[k];
    mean[i] = t / l[i][i];
  }
  for (int i = NP - 1; i >= 0; --i) {
    double t = mean[i];
    for (int k = i + 1; k < NP; ++k) t -= l[k][i] * mean[k];
    mean[i] = t / l[i][i];
  }
  double mxy = 0.0;
  for (int i = 0; i < NP; ++i) mxy += mean[i] * xy[i];
  // (1) sigma^2 | rho.
  const double shape = g->a0 + 0.5 * (double)n, scale = g->b0 + 0.5 * fmax(0.0, yy - mxy);
  const double sigma2 = scale / gamma_draw_d(g->key, g->voxel, g->chain, (uint)step, 0u, shape);
  // (2) beta = mean + sigma L'^-1 z.
  for (int k = 0; k < NP; k += 2) {
    const double2 pair = normal_pair_d(g->key, g->voxel, g->chain, (uint)step, (uint)(1 + k / 2));
    z[k] = pair.x;
    if (k + 1 < NP) z[k + 1] = pair.y;
  }
  double* beta = g->beta;
  for (int i = NP - 1; i >= 0; --i) {
    double t = z[i];
    for (int k = i + 1; k < NP; ++k) t -= l[k][i] * beta[k];
    beta[i] = t / l[i][i];
  }
  const double sigma = sqrt(sigma2);
  for (int i = 0; i < NP; ++i) beta[i] = mean[i] + sigma * beta[i];
  // (3) rho | beta, sigma^2 from the residuals' lag sums sum e_t e_(t-1), sum e_(t-1)^2, in time order.
  double s01e = 0.0, s11e = 0.0, previous = g->y[0];
  for (int k = 0; k < NP; ++k) previous -= g->x[k] * beta[k];
  for (int t = 1; t < g->t_len; ++t) {
    double e = g->y[t];
    for (int k = 0; k < NP; ++k) e -= g->x[t * NP + k] * beta[k];
    s01e += e * previous;
    s11e += previous * previous;
    previous = e;
  }
  const double q = g->rho_precision + s11e / sigma2;
  const double proposal =
      s01e / (sigma2 * q) + normal_pair_d(g->key, g->voxel, g->chain, (uint)step, RHO_SLOT).x / sqrt(q);
  if (fabs(proposal) < 1.0) g->rho = proposal;
  g->sigma2 = sigma2;
}

inline void gibbs_init(GibbsState* g, __global const float* restrict y, const int t_len, __global const double* x,
                       __global const double* s00, __global const double* s01, __global const double* s11,
                       const double a0, const double b0, const double beta_precision, const double rho_precision,
                       const uint key_lo, const uint key_hi, const int v, const int c, const double rho0) {
  g->y = y + (size_t)v * (size_t)t_len;
  g->t_len = t_len;
  g->x = x;
  g->s00 = s00;
  g->s01 = s01;
  g->s11 = s11;
  g->a0 = a0;
  g->b0 = b0;
  g->beta_precision = beta_precision;
  g->rho_precision = rho_precision;
  g->key = (uint2)(key_lo, key_hi);
  g->voxel = (uint)v;
  g->chain = (uint)c;
  g->rho = rho0;
  gibbs_setup(g);
}

// Every step of every chain: chains double [V][C][S][NP + 2] (beta, sigma^2, rho).
__kernel void bayes_glm_chains(__global const float* restrict y, const int voxels, const int t_len,
                               __global const double* restrict x, __global const double* restrict s00,
                               __global const double* restrict s01, __global const double* restrict s11,
                               const double a0, const double b0, const double beta_precision,
                               const double rho_precision, const uint key_lo, const uint key_hi, const int chains,
                               const int steps, const double rho0, __global double* restrict out) {
  const int v = get_global_id(0);
  const int c = get_global_id(1);
  if (v >= voxels || c >= chains) return;
  GibbsState g;
  gibbs_init(&g, y, t_len, x, s00, s01, s11, a0, b0, beta_precision, rho_precision, key_lo, key_hi, v, c, rho0);
  __global double* o = out + ((size_t)v * (size_t)chains + (size_t)c) * (size_t)steps * (NP + 2);
  for (int step = 0; step < steps; ++step) {
    gibbs_step(&g, step);
    for (int i = 0; i < NP; ++i) o[i] = g.beta[i];
    o[NP] = g.sigma2;
    o[NP + 1] = g.rho;
    o += NP + 2;
  }
}

// The chains summarised without storing them. After `burn_in` steps, K = steps - burn_in kept draws; monitored
// quantities m = the NC contrasts c'beta, then sigma^2, then rho (NM = NC + 2). Per (voxel, chain):
//   summary double [V][C][NM][4 + NB]: sum and sum of squares of the first floor(K/2) kept draws, of the last
//           floor(K/2), then the sums of NB batches of floor(K/NB) draws (split-R-hat, batch-means ESS on the host)
//   above   double [V][C][NC]: draws with c'beta > 0 (the PPM's numerator)
// contrasts double [NC][NP]. Defines NC, NB.
__kernel void bayes_glm_summary(__global const float* restrict y, const int voxels, const int t_len,
                                __global const double* restrict x, __global const double* restrict s00,
                                __global const double* restrict s01, __global const double* restrict s11,
                                const double a0, const double b0, const double beta_precision,
                                const double rho_precision, const uint key_lo, const uint key_hi, const int chains,
                                const int steps, const int burn_in, const double rho0,
                                __global const double* restrict contrasts, __global double* restrict summary,
                                __global double* restrict above) {
  const int v = get_global_id(0);
  const int c = get_global_id(1);
  if (v >= voxels || c >= chains) return;
  GibbsState g;
  gibbs_init(&g, y, t_len, x, s00, s01, s11, a0, b0, beta_precision, rho_precision, key_lo, key_hi, v, c, rho0);
  const int kept = steps - burn_in, half_len = kept / 2, batch = kept / NB;
  __global double* sm = summary + ((size_t)v * (size_t)chains + (size_t)c) * (size_t)(NC + 2) * (4 + NB);
  __global double* ab = above + ((size_t)v * (size_t)chains + (size_t)c) * (size_t)NC;
  for (int m = 0; m < (NC + 2) * (4 + NB); ++m) sm[m] = 0.0;
  for (int m = 0; m < NC; ++m) ab[m] = 0.0;
  for (int step = 0; step < steps; ++step) {
    gibbs_step(&g, step);
    const int k = step - burn_in;  // index among the kept draws
    if (k < 0) continue;
    const int part = k < half_len ? 0 : (k >= kept - half_len ? 1 : -1);
    const int b = batch > 0 ? k / batch : NB;
    for (int m = 0; m < NC + 2; ++m) {
      double value;
      if (m < NC) {
        value = 0.0;
        for (int i = 0; i < NP; ++i) value += contrasts[m * NP + i] * g.beta[i];
        if (value > 0.0) ab[m] += 1.0;
      } else {
        value = m == NC ? g.sigma2 : g.rho;
      }
      __global double* q = sm + m * (4 + NB);
      if (part >= 0) {
        q[2 * part] += value;
        q[2 * part + 1] += value * value;
      }
      if (b < NB) q[4 + b] += value;
    }
  }
}
