// Gibbs chains of the Bayesian first-level GLM with AR(L) noise (L = NAR, 1 .. 4), in double, one work-item per
// (voxel, chain) (core/glm/bayes_glm.hpp; the model, priors and step: core/reference/bayes_glm_reference.hpp and
// docs/algorithms/bayes_glm.md). Each step draws from the Philox streams (random_draws.clh) with the same slots as the
// reference, so a chain equals the reference's draw for draw up to the double functions' rounding.
// Per work-item, once: the voxel's lag sums m_ab = sum_t x_(t-a) y_(t-b) and g_ab = sum_t y_(t-a) y_(t-b) (a <= b) over
// t = L .. T-1; per step the P x P system from X~'X~ = sum_ab c_a c_b S_ab, c = (1, -rho_1, .., -rho_L), and one pass
// over the series for the residuals' lag sums (explicit residuals: their quadratic forms in beta cancel badly at
// BOLD's offsets).
// Memory layout (V voxels, T volumes, C chains, S steps, NP regressors, L = NAR):
//   y        float [V][T]: the voxels' series
//   x        double [T][NP]: the design
//   sxx      double [L + 1][L + 1][NP][NP]: S_ab = sum_t x_(t-a) x_(t-b)' (the host sums them in time order, as the
//            reference)
//   chains   double [V][C][S][NP + 1 + L]: beta, sigma^2, rho_1 .. rho_L after each step (bayes_glm_chains, for tests)
//   contrasts, summary, above: bayes_glm_summary (below)
// Work-item v draws from the streams of voxel first_voxel + v (its index in the whole mask), so a block of voxels run
// on its own gives the chains the whole run gives them.
// Compile-time defines: NP (1 .. 16), NAR (1 .. 4, default 1); NC contrasts and NB batches (bayes_glm_summary).
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF  // round as the host reference does (no fused multiply-adds)
#include "random_draws.clh"

#define RHO_SLOT 15u  // the normal pairs of (rho_1, rho_2) and, at RHO_SLOT + 1, (rho_3, rho_4)
#ifndef NAR
#define NAR 1
#endif
#ifndef NC
#define NC 1
#endif
#ifndef NB
#define NB 16
#endif
#define NL (NAR + 1)

// The voxel's series and lag sums, the design, the prior and the chain's state.
typedef struct {
  const __global float* y;
  int t_len;
  const __global double* x;
  const __global double* sxx;
  double m[NL][NL][NP];
  double g[NL][NL];
  double a0, b0, beta_precision, rho_precision;
  uint2 key;
  uint voxel, chain;
  double rho[NAR];
  double sigma2;
  double beta[NP];
} GibbsState;

inline void gibbs_setup(GibbsState* g) {
  for (int a = 0; a < NL; ++a) {
    for (int b = 0; b < NL; ++b) {
      for (int k = 0; k < NP; ++k) g->m[a][b][k] = 0.0;
      g->g[a][b] = 0.0;
    }
  }
  for (int t = NAR; t < g->t_len; ++t) {
    double ys[NL];
    for (int a = 0; a < NL; ++a) ys[a] = g->y[t - a];
    for (int a = 0; a < NL; ++a) {
      for (int b = 0; b < NL; ++b) {
        for (int k = 0; k < NP; ++k) g->m[a][b][k] += g->x[(t - a) * NP + k] * ys[b];
        if (a <= b) g->g[a][b] += ys[a] * ys[b];
      }
    }
  }
}

// Levinson-Durbin step-down: is e_t = sum_k rho_k e_(t-k) + eps_t stationary (every |reflection coefficient| < 1)?
// As core/reference/bayes_glm_reference.cpp ar_is_stationary.
inline int ar_is_stationary(const double* rho) {
  double a[NAR], next[NAR];
  for (int i = 0; i < NAR; ++i) a[i] = rho[i];
  for (int m = NAR; m >= 1; --m) {
    const double k = a[m - 1];
    if (!(fabs(k) < 1.0)) return 0;
    const double d = 1.0 - k * k;
    for (int i = 0; i < m - 1; ++i) next[i] = (a[i] + k * a[m - 2 - i]) / d;
    for (int i = 0; i < m - 1; ++i) a[i] = next[i];
  }
  return 1;
}

// The S_ab element (i, j).
#define SXX(a, b, i, j) g->sxx[(((a)*NL + (b)) * NP + (i)) * NP + (j)]

// One Gibbs step (docs/algorithms/bayes_glm.md): sigma^2 | rho, beta | sigma^2, rho, rho | beta, sigma^2.
inline void gibbs_step(GibbsState* g, const int step) {
  const int n = g->t_len - NAR;
  double r[NAR];
  for (int a = 0; a < NAR; ++a) r[a] = g->rho[a];
  double l[NP][NP], mean[NP], xy[NP], z[NP];
  // Precision P = X~'X~ + lambda I (lower triangle), X~'y~, y~'y~ at the current rho: the lag-0 term, the terms linear
  // in rho, then the quadratic ones (the reference's order).
  for (int i = 0; i < NP; ++i) {
    for (int j = 0; j <= i; ++j) {
      double v = SXX(0, 0, i, j);
      for (int a = 1; a <= NAR; ++a) v -= r[a - 1] * (SXX(0, a, i, j) + SXX(0, a, j, i));
      for (int a = 1; a <= NAR; ++a) {
        v += r[a - 1] * r[a - 1] * SXX(a, a, i, j);
        for (int b = a + 1; b <= NAR; ++b) v += r[a - 1] * r[b - 1] * (SXX(a, b, i, j) + SXX(a, b, j, i));
      }
      l[i][j] = v;
    }
    l[i][i] += g->beta_precision;
    double v = g->m[0][0][i];
    for (int a = 1; a <= NAR; ++a) v -= r[a - 1] * (g->m[0][a][i] + g->m[a][0][i]);
    for (int a = 1; a <= NAR; ++a) {
      v += r[a - 1] * r[a - 1] * g->m[a][a][i];
      for (int b = a + 1; b <= NAR; ++b) v += r[a - 1] * r[b - 1] * (g->m[a][b][i] + g->m[b][a][i]);
    }
    xy[i] = v;
  }
  double yy = g->g[0][0];
  for (int a = 1; a <= NAR; ++a) yy -= 2.0 * r[a - 1] * g->g[0][a];
  for (int a = 1; a <= NAR; ++a) {
    yy += r[a - 1] * r[a - 1] * g->g[a][a];
    for (int b = a + 1; b <= NAR; ++b) yy += 2.0 * r[a - 1] * r[b - 1] * g->g[a][b];
  }
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
  // (3) rho | beta, sigma^2 from the residuals' lag sums E'e, E'E over t = L .. T-1, in time order; previous[k] =
  // e_(t-1-k).
  double previous[NAR], ee[NAR][NAR], en[NAR];
  for (int a = 0; a < NAR; ++a) {
    en[a] = 0.0;
    for (int b = 0; b < NAR; ++b) ee[a][b] = 0.0;
  }
  for (int t = 0; t < NAR; ++t) {
    double e = g->y[t];
    for (int k = 0; k < NP; ++k) e -= g->x[t * NP + k] * beta[k];
    previous[NAR - 1 - t] = e;
  }
  for (int t = NAR; t < g->t_len; ++t) {
    double e = g->y[t];
    for (int k = 0; k < NP; ++k) e -= g->x[t * NP + k] * beta[k];
    for (int a = 0; a < NAR; ++a) {
      en[a] += e * previous[a];
      for (int b = a; b < NAR; ++b) ee[a][b] += previous[a] * previous[b];
    }
    for (int a = NAR - 1; a > 0; --a) previous[a] = previous[a - 1];
    previous[0] = e;
  }
  const double2 w01 = normal_pair_d(g->key, g->voxel, g->chain, (uint)step, RHO_SLOT);
#if NAR == 1
  // The scalar conditional N(s_01 / (sigma^2 q), 1 / q), q = rho_precision + s_11 / sigma^2.
  const double q = g->rho_precision + ee[0][0] / sigma2;
  const double proposal = en[0] / (sigma2 * q) + w01.x / sqrt(q);
  if (fabs(proposal) < 1.0) g->rho[0] = proposal;
#else
  // N(Q^-1 E'e / sigma^2, Q^-1), Q = rho_precision I + E'E / sigma^2 = L L': mean + L'^-1 z.
  const double2 w23 = normal_pair_d(g->key, g->voxel, g->chain, (uint)step, RHO_SLOT + 1u);
  const double words[4] = {w01.x, w01.y, w23.x, w23.y};
  double lq[NAR][NAR], mr[NAR], u[NAR];
  for (int a = 0; a < NAR; ++a) {
    for (int b = 0; b <= a; ++b) lq[a][b] = (a == b ? g->rho_precision : 0.0) + ee[b][a] / sigma2;
  }
  for (int j = 0; j < NAR; ++j) {
    double d = lq[j][j];
    for (int k = 0; k < j; ++k) d -= lq[j][k] * lq[j][k];
    lq[j][j] = sqrt(d);
    for (int i = j + 1; i < NAR; ++i) {
      double t = lq[i][j];
      for (int k = 0; k < j; ++k) t -= lq[i][k] * lq[j][k];
      lq[i][j] = t / lq[j][j];
    }
  }
  for (int i = 0; i < NAR; ++i) {
    double t = en[i] / sigma2;
    for (int k = 0; k < i; ++k) t -= lq[i][k] * mr[k];
    mr[i] = t / lq[i][i];
  }
  for (int i = NAR - 1; i >= 0; --i) {
    double t = mr[i];
    for (int k = i + 1; k < NAR; ++k) t -= lq[k][i] * mr[k];
    mr[i] = t / lq[i][i];
  }
  for (int i = NAR - 1; i >= 0; --i) {
    double t = words[i];
    for (int k = i + 1; k < NAR; ++k) t -= lq[k][i] * u[k];
    u[i] = t / lq[i][i];
  }
  double proposal[NAR];
  for (int i = 0; i < NAR; ++i) proposal[i] = mr[i] + u[i];
  if (ar_is_stationary(proposal)) {
    for (int i = 0; i < NAR; ++i) g->rho[i] = proposal[i];
  }
#endif
  g->sigma2 = sigma2;
}

inline void gibbs_init(GibbsState* g, __global const float* restrict y, const int t_len, __global const double* x,
                       __global const double* sxx, const double a0, const double b0, const double beta_precision,
                       const double rho_precision, const uint key_lo, const uint key_hi, const int v,
                       const uint first_voxel, const int c, const double rho0) {
  g->y = y + (size_t)v * (size_t)t_len;
  g->t_len = t_len;
  g->x = x;
  g->sxx = sxx;
  g->a0 = a0;
  g->b0 = b0;
  g->beta_precision = beta_precision;
  g->rho_precision = rho_precision;
  g->key = (uint2)(key_lo, key_hi);
  g->voxel = first_voxel + (uint)v;  // the stream's voxel: its index in the whole mask
  g->chain = (uint)c;
  g->rho[0] = rho0;
  for (int a = 1; a < NAR; ++a) g->rho[a] = 0.0;
  gibbs_setup(g);
}

// Every step of every chain: chains double [V][C][S][NP + 1 + NAR] (beta, sigma^2, rho_1 .. rho_L). rho starts at
// (rho0, 0, .., 0).
__kernel void bayes_glm_chains(__global const float* restrict y, const int voxels, const int t_len,
                               __global const double* restrict x, __global const double* restrict sxx, const double a0,
                               const double b0, const double beta_precision, const double rho_precision,
                               const uint key_lo, const uint key_hi, const uint first_voxel, const int chains,
                               const int steps, const double rho0, __global double* restrict out) {
  const int v = get_global_id(0);
  const int c = get_global_id(1);
  if (v >= voxels || c >= chains) return;
  GibbsState g;
  gibbs_init(&g, y, t_len, x, sxx, a0, b0, beta_precision, rho_precision, key_lo, key_hi, v, first_voxel, c, rho0);
  __global double* o = out + ((size_t)v * (size_t)chains + (size_t)c) * (size_t)steps * (NP + 1 + NAR);
  for (int step = 0; step < steps; ++step) {
    gibbs_step(&g, step);
    for (int i = 0; i < NP; ++i) o[i] = g.beta[i];
    o[NP] = g.sigma2;
    for (int a = 0; a < NAR; ++a) o[NP + 1 + a] = g.rho[a];
    o += NP + 1 + NAR;
  }
}

// The chains summarised without storing them. After `burn_in` steps, K = steps - burn_in kept draws; monitored
// quantities m = the NC contrasts c'beta, then sigma^2, then rho_1 .. rho_L (NM = NC + 1 + NAR). Per (voxel, chain):
//   summary double [V][C][NM][4 + NB]: sum and sum of squares of the first floor(K/2) kept draws, of the last
//           floor(K/2), then the sums of NB batches of floor(K/NB) draws (split-R-hat, batch-means ESS on the host)
//   above   double [V][C][NC]: draws with c'beta > 0 (the PPM's numerator)
// contrasts double [NC][NP]. Defines NC, NB.
__kernel void bayes_glm_summary(__global const float* restrict y, const int voxels, const int t_len,
                                __global const double* restrict x, __global const double* restrict sxx, const double a0,
                                const double b0, const double beta_precision, const double rho_precision,
                                const uint key_lo, const uint key_hi, const uint first_voxel, const int chains,
                                const int steps, const int burn_in, const double rho0,
                                __global const double* restrict contrasts, __global double* restrict summary,
                                __global double* restrict above) {
  const int v = get_global_id(0);
  const int c = get_global_id(1);
  if (v >= voxels || c >= chains) return;
  GibbsState g;
  gibbs_init(&g, y, t_len, x, sxx, a0, b0, beta_precision, rho_precision, key_lo, key_hi, v, first_voxel, c, rho0);
  const int kept = steps - burn_in, half_len = kept / 2, batch = kept / NB;
  __global double* sm = summary + ((size_t)v * (size_t)chains + (size_t)c) * (size_t)(NC + 1 + NAR) * (4 + NB);
  __global double* ab = above + ((size_t)v * (size_t)chains + (size_t)c) * (size_t)NC;
  for (int m = 0; m < (NC + 1 + NAR) * (4 + NB); ++m) sm[m] = 0.0;
  for (int m = 0; m < NC; ++m) ab[m] = 0.0;
  for (int step = 0; step < steps; ++step) {
    gibbs_step(&g, step);
    const int k = step - burn_in;  // index among the kept draws
    if (k < 0) continue;
    const int part = k < half_len ? 0 : (k >= kept - half_len ? 1 : -1);
    const int b = batch > 0 ? k / batch : NB;
    for (int m = 0; m < NC + 1 + NAR; ++m) {
      double value;
      if (m < NC) {
        value = 0.0;
        for (int i = 0; i < NP; ++i) value += contrasts[m * NP + i] * g.beta[i];
        if (value > 0.0) ab[m] += 1.0;
      } else {
        value = m == NC ? g.sigma2 : g.rho[m - NC - 1];
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
