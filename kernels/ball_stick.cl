// Ball-and-stick Metropolis-Hastings chains (FSL xfibres' model, priors and update order; core/diffusion/
// ball_stick_model.hpp, docs/algorithms/bedpost.md), LANES work-items per voxel (a power of two, 1..32, consecutive in
// the work-group), a launch running iterations [first, first + count) and leaving the chain's state in global memory
// for the next launch. Lane l of a voxel holds measurements l, l + LANES, ... (MEAS = ceil(n / LANES) of them) in
// registers: their signal, b-value, gradient and each compartment's attenuation; every lane keeps the whole chain state
// and takes the same decisions (the same draws and, after a fixed-order tree over the lanes in local memory, the same
// energy), so one voxel's chain does not depend on which other voxels share its launch, block or device. Each update
// draws one Philox block of its slot (words 0-1: the proposal's normal, word 2: the acceptance uniform), as the double
// reference (core/reference/ball_stick_reference.cpp) does: compiled with USE_DOUBLE the chain equals the reference's
// draw for draw up to the energies' rounding (the reference sums the measurements in order, the lanes in a tree).
// Each compartment (0: the ball, 1 + j: stick j) keeps its attenuations in `cur` and a proposal's in `prop`; an
// accepted proposal copies the compartments it recomputed.
// Memory layout (V voxels of the launch, n measurements, NQ = 13 quantities: S0, d, d_std, tau, then th, ph, f of
// fibres 0..2; S = kept samples):
//   y        float [n][V]                    the measurements
//   scheme   real [n][4]                     b, gx, gy, gz
//   state    real [NQ][V]                    the chain's parameters
//   widths   real [NQ][V]                    proposal widths
//   counts   int [2][NQ][V]                  accepted, rejected since the last adaptation (while recording: all)
//   samples  float [3 NF][S][V]              th, ph, f of each fibre at each kept sample
//   sums     real [4][V]                     sums over the kept samples of S0, d, d_std, tau
//   trace    real [count][NQ][V]             the state after each iteration (TRACE builds, for tests)
//   scratch  local real [2][GROUP]           the lanes' partial sums (two halves used in turn: one barrier fewer)
// Launch: global size (voxels rounded up to GROUP / LANES) x LANES, work-groups of GROUP.
// Defines: NF fibres (1..3), MODEL (1|2), RICIAN (0|1), LANES, MEAS, GROUP, USE_DOUBLE, TRACE.
#ifdef USE_DOUBLE
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF  // round as the double reference does
#endif
#include "random_draws.clh"

#ifdef USE_DOUBLE
typedef double real;
#define PROPOSAL_NORMAL(w) normal_from_words_d((w).x, (w).y).x
#define ACCEPT_UNIFORM(w) ((double)uniform_float((w).z))
#else
typedef float real;
#define PROPOSAL_NORMAL(w) normal_from_words((w).x, (w).y).x
#define ACCEPT_UNIFORM(w) uniform_float((w).z)
#endif

#define NQ 13
#define P_S0 0
#define P_D 1
#define P_DSTD 2
#define P_TAU 3
#define P_TH(j) (4 + 3 * (j))
#define P_PH(j) (5 + 3 * (j))
#define P_F(j) (6 + 3 * (j))
#define SLOT_TAU 0u
#define SLOT_D 1u
#define SLOT_DSTD 2u
#define SLOT_S0 3u
#define SLOT_FIBRE(j, which) (4u + 3u * (uint)(j) + (which))
#define MAX_D ((real)0.005)
#define MAX_DSTD ((real)0.01)
#define ALL_COMPARTMENTS ((1u << (NF + 1)) - 1u)

// Attenuation of a compartment at b-value b, x = 1 (ball) or (g . v)^2 (stick).
inline real attenuation(const real b, const real x, const real d, const real d_std) {
#if MODEL == 2
  if (!(d_std < (real)1e-5)) {
    const real var = d_std * d_std;
    return exp(log(d / (d + b * x * var)) * (d * d / var));
  }
#endif
  return exp(-b * d * x);
}

// log I0(x) (Abramowitz & Stegun 9.8.1-9.8.2), as the reference.
inline real log_bessel_i0(const real x) {
  const real ax = fabs(x);
  if (ax < (real)3.75) {
    const real t = (x / (real)3.75) * (x / (real)3.75);
    return log((real)1.0 +
               t * ((real)3.5156229 +
                    t * ((real)3.0899424 +
                         t * ((real)1.2067492 + t * ((real)0.2659732 + t * ((real)0.0360768 + t * (real)0.0045813))))));
  }
  const real t = (real)3.75 / ax;
  const real poly =
      (real)0.39894228 +
      t * ((real)0.01328592 +
           t * ((real)0.00225319 +
                t * ((real)-0.00157565 +
                     t * ((real)0.00916281 +
                          t * ((real)-0.02057706 +
                               t * ((real)0.02635537 + t * ((real)-0.01647633 + t * (real)0.00392377)))))));
  return ax + log(poly / sqrt(ax));
}

inline real prior_energy(const real* q, const uint ard_mask, const real ard_weight) {
  real e = (real)0.0;
#if MODEL == 2
  e += log(q[P_DSTD]);
#endif
  for (int j = 0; j < NF; ++j) {
    if (q[P_TH(j)] != (real)0.0) e += -log(fabs(sin(q[P_TH(j)]) / (real)2.0));
    if ((ard_mask >> j) & 1u) e += ard_weight * log(q[P_F(j)]);
  }
  return e;
}

// Loops over a lane's measurements are unrolled unless there are many (one lane per voxel on a CPU, where unrolling
// only lengthens PoCL's compilation; NVIDIA's compiler times were the same either way).
#if MEAS <= 16
#define UNROLL_MEASUREMENTS _Pragma("unroll")
#else
#define UNROLL_MEASUREMENTS
#endif

// One lane's part of a voxel's chain: its measurements and their attenuations, and the voxel's constants.
typedef struct {
  real y[MEAS], b[MEAS], gx[MEAS], gy[MEAS], gz[MEAS];  // zeros past the lane's `mine` measurements
  real cur[NF + 1][MEAS], prop[NF + 1][MEAS];
  int mine, n;
  uint ard_mask;
  real ard_weight;
  __local real* scratch;
  int lid, lane, parity;
} Voxel;

// The sum of x over the voxel's lanes, the same tree for every voxel (every lane of the work-group must call it).
inline real lane_sum(Voxel* x, const real value) {
#if LANES == 1
  return value;
#else
  __local real* s = x->scratch + x->parity * GROUP;
  x->parity ^= 1;  // the next call uses the other half: nobody still reads it after this call's barriers
  s[x->lid] = value;
  barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
  for (int h = LANES / 2; h > 0; h >>= 1) {
    if (x->lane < h) s[x->lid] += s[x->lid + h];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  return s[x->lid - x->lane];
#endif
}

// The energy of state q, the compartments in `recompute` evaluated anew (into `prop`), the others read from `cur`.
inline real energy(Voxel* x, const real* q, const uint recompute) {
  real dir[NF][3];
#pragma unroll
  for (int j = 0; j < NF; ++j) {
    if ((recompute >> (j + 1)) & 1u) {
      const real th = q[P_TH(j)], ph = q[P_PH(j)];
      dir[j][0] = sin(th) * cos(ph);
      dir[j][1] = sin(th) * sin(ph);
      dir[j][2] = cos(th);
    }
  }
  real fsum = (real)0.0;
#pragma unroll
  for (int j = 0; j < NF; ++j) fsum += q[P_F(j)];
  real total = (real)0.0;
  UNROLL_MEASUREMENTS
  for (int m = 0; m < MEAS; ++m) {
    const real b = x->b[m];
    if (recompute & 1u) x->prop[0][m] = attenuation(b, (real)1.0, q[P_D], q[P_DSTD]);
    real acc = ((real)1.0 - fsum) * ((recompute & 1u) ? x->prop[0][m] : x->cur[0][m]);
#pragma unroll
    for (int j = 0; j < NF; ++j) {
      const bool anew = (recompute >> (j + 1)) & 1u;
      if (anew) {
        const real dot = x->gx[m] * dir[j][0] + x->gy[m] * dir[j][1] + x->gz[m] * dir[j][2];
        x->prop[j + 1][m] = attenuation(b, dot * dot, q[P_D], q[P_DSTD]);
      }
      acc += q[P_F(j)] * (anew ? x->prop[j + 1][m] : x->cur[j + 1][m]);
    }
    const real pred = q[P_S0] * acc;
    const real yi = x->y[m];
    if (m < x->mine) {
#if RICIAN
      total += (real)-0.5 * q[P_TAU] * (yi * yi + pred * pred) + log_bessel_i0(q[P_TAU] * pred * yi);
#else
      const real r = yi - pred;
      total += r * r;
#endif
    }
  }
  total = lane_sum(x, total);
#if RICIAN
  const real likelihood = -(real)x->n * log(q[P_TAU]) - total;
#else
  const real likelihood = ((real)x->n / (real)2.0) * log(total / (real)2.0);
#endif
  return prior_energy(q, x->ard_mask, x->ard_weight) + likelihood;
}

// The proposal's attenuations of the compartments in `recompute` become the current ones.
inline void keep_proposal(Voxel* x, const uint recompute) {
#pragma unroll
  for (int c = 0; c <= NF; ++c) {
    if ((recompute >> c) & 1u) {
      UNROLL_MEASUREMENTS
      for (int m = 0; m < MEAS; ++m) x->cur[c][m] = x->prop[c][m];
    }
  }
}

// One Metropolis-Hastings update of quantity `par` (stream slot `slot`), recomputing the compartments in `recompute`.
inline void update(Voxel* x, real* q, const real* widths, int* acc, int* rej, real* e, const uint2 key,
                   const uint voxel, const uint step, const uint slot, const int par, const uint recompute) {
  const uint4 w = stream_words(key, voxel, 0u, step, slot << 16);
  const real z = PROPOSAL_NORMAL(w);
  const real u = ACCEPT_UNIFORM(w);
  const real old = q[par];
  q[par] = old + z * widths[par];
  bool valid = true;
  if (par == P_TAU) valid = q[P_TAU] > (real)0.0;
  if (par == P_D) valid = q[P_D] >= (real)0.0 && q[P_D] <= MAX_D;
  if (par == P_DSTD) valid = q[P_DSTD] > (real)0.0 && q[P_DSTD] <= MAX_DSTD;
  if (par == P_S0) valid = q[P_S0] >= (real)0.0;
  if (par >= 4 && (par - 4) % 3 == 2) {
    real fsum = (real)0.0;
    for (int j = 0; j < NF; ++j) fsum += q[P_F(j)];
    valid = q[par] > (real)0.0 && q[par] < (real)1.0 && fsum <= (real)1.0;
  }
#if LANES == 1
  if (valid) {
    const real proposed = energy(x, q, recompute);
#else
  {
    // Evaluated even for a proposal outside the prior's bounds (and then ignored): every lane of the work-group must
    // meet the same barriers, whatever its voxel's proposal.
    const real proposed = energy(x, q, recompute);
#endif
    if (valid && log(u) < *e - proposed) {
      *e = proposed;
      keep_proposal(x, recompute);
      acc[par] += 1;
      return;
    }
  }
  q[par] = old;
  rej[par] += 1;
}

__kernel __attribute__((reqd_work_group_size(GROUP, 1, 1))) void ball_stick_iterations(
    const __global float* restrict y, const __global real* restrict scheme, const int n, const int voxels,
    const uint voxel_offset, const uint key0, const uint key1, const int first, const int count, const int burn_in,
    const int update_every, const int sample_every, const int samples, const uint ard_mask, const real ard_weight,
    __global real* restrict state, __global real* restrict widths, __global int* restrict counts,
    __global float* restrict samples_out, __global real* restrict sums, __global real* restrict trace) {
  __local real scratch[2 * GROUP];
  const int lane = (int)get_local_id(0) % LANES;
  const int slot_voxel = (int)(get_global_id(0) / LANES);
  // Lanes past the last voxel repeat its chain (and write nothing): every lane must meet the barriers.
  const bool writer = slot_voxel < voxels && lane == 0;
  const int v = min(slot_voxel, voxels - 1);
  Voxel x;
  x.n = n;
  x.mine = 0;
  x.ard_mask = ard_mask;
  x.ard_weight = ard_weight;
  x.scratch = scratch;
  x.lid = (int)get_local_id(0);
  x.lane = lane;
  x.parity = 0;
  UNROLL_MEASUREMENTS
  for (int m = 0; m < MEAS; ++m) {
    const int i = lane + m * LANES;
    const bool mine = i < n;
    x.mine += mine ? 1 : 0;
    x.y[m] = mine ? (real)y[(size_t)i * (size_t)voxels + (size_t)v] : (real)0.0;
    x.b[m] = mine ? scheme[4 * i] : (real)0.0;
    x.gx[m] = mine ? scheme[4 * i + 1] : (real)0.0;
    x.gy[m] = mine ? scheme[4 * i + 2] : (real)0.0;
    x.gz[m] = mine ? scheme[4 * i + 3] : (real)0.0;
  }
  const uint2 key = (uint2)(key0, key1);
  const uint voxel = voxel_offset + (uint)v;
  real q[NQ], w[NQ];
  int acc[NQ], rej[NQ];
  for (int k = 0; k < NQ; ++k) {
    q[k] = state[(size_t)k * voxels + v];
    w[k] = widths[(size_t)k * voxels + v];
    acc[k] = counts[(size_t)k * voxels + v];
    rej[k] = counts[(size_t)(NQ + k) * voxels + v];
  }
  real e = energy(&x, q, ALL_COMPARTMENTS);
  keep_proposal(&x, ALL_COMPARTMENTS);
  for (int it = first; it < first + count; ++it) {
    const uint step = (uint)it;
#if RICIAN
    update(&x, q, w, acc, rej, &e, key, voxel, step, SLOT_TAU, P_TAU, 0u);
#endif
    update(&x, q, w, acc, rej, &e, key, voxel, step, SLOT_D, P_D, ALL_COMPARTMENTS);
#if MODEL == 2
    update(&x, q, w, acc, rej, &e, key, voxel, step, SLOT_DSTD, P_DSTD, ALL_COMPARTMENTS);
#endif
    update(&x, q, w, acc, rej, &e, key, voxel, step, SLOT_S0, P_S0, 0u);
#pragma unroll
    for (int j = 0; j < NF; ++j) {
      update(&x, q, w, acc, rej, &e, key, voxel, step, SLOT_FIBRE(j, 0u), P_TH(j), 1u << (j + 1));
      update(&x, q, w, acc, rej, &e, key, voxel, step, SLOT_FIBRE(j, 1u), P_PH(j), 1u << (j + 1));
      update(&x, q, w, acc, rej, &e, key, voxel, step, SLOT_FIBRE(j, 2u), P_F(j), 0u);
    }
    if (it < burn_in && (it + 1) % update_every == 0) {
      for (int k = 0; k < NQ; ++k) {
        w[k] = fmin(w[k] * sqrt(((real)acc[k] + (real)1.0) / ((real)rej[k] + (real)1.0)), (real)1e10);
        acc[k] = rej[k] = 0;
      }
    }
    if (it == burn_in - 1) {
      for (int k = 0; k < NQ; ++k) acc[k] = rej[k] = 0;
    }
    if (writer && it >= burn_in && (it - burn_in + 1) % sample_every == 0) {
      const int s = (it - burn_in + 1) / sample_every - 1;
      if (s < samples) {
        for (int j = 0; j < NF; ++j) {
          samples_out[((size_t)(3 * j) * samples + s) * voxels + v] = (float)q[P_TH(j)];
          samples_out[((size_t)(3 * j + 1) * samples + s) * voxels + v] = (float)q[P_PH(j)];
          samples_out[((size_t)(3 * j + 2) * samples + s) * voxels + v] = (float)q[P_F(j)];
        }
        sums[v] += q[P_S0];
        sums[(size_t)voxels + v] += q[P_D];
        sums[(size_t)2 * voxels + v] += q[P_DSTD];
        sums[(size_t)3 * voxels + v] += q[P_TAU];
      }
    }
#ifdef TRACE
    if (writer) {
      for (int k = 0; k < NQ; ++k) trace[((size_t)(it - first) * NQ + k) * voxels + v] = q[k];
    }
#endif
  }
  if (writer) {
    for (int k = 0; k < NQ; ++k) {
      state[(size_t)k * voxels + v] = q[k];
      widths[(size_t)k * voxels + v] = w[k];
      counts[(size_t)k * voxels + v] = acc[k];
      counts[(size_t)(NQ + k) * voxels + v] = rej[k];
    }
  }
}
