// The ball-and-stick model of diffusion MRI (Behrens et al. 2003, 2007; FSL's xfibres/bedpostx) as `rtfmri bedpost`
// samples it: the acquisition, the options (bedpostx's names), one voxel's state, and the stream slots shared by the
// device sampler (core/diffusion/ball_stick_mcmc.hpp, kernels/ball_stick.cl) and the double reference
// (core/reference/ball_stick_reference.hpp). docs/algorithms/bedpost.md has the model, the priors and the step.
//
// Signal of measurement i (b-value b_i in s/mm^2, unit gradient g_i), fibre j at v_j = (sin th cos ph, sin th sin ph,
// cos th) with fraction f_j:
//   model 1:  S_i = S0 [ (1 - sum f_j) exp(-b_i d) + sum f_j exp(-b_i d (g_i . v_j)^2) ]
//   model 2:  exp(-b d x) replaced by (d / (d + b x d_std^2))^(d^2 / d_std^2)  (a gamma distribution of
//             diffusivities with mean d and standard deviation d_std; model 1's form where d_std < 1e-5)
// Noise: Gaussian with its variance integrated out (energy n/2 log(SSE/2)), or Rician with precision tau (--rician).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rtf {

constexpr int kBallStickMaxFibres = 3;

// The diffusion acquisition: b-values (s/mm^2) and unit gradient directions, one per volume (FSL's bvals/bvecs).
struct DiffusionScheme {
  std::vector<double> bvals;
  std::vector<std::array<double, 3>> bvecs;
  int measurements() const { return static_cast<int>(bvals.size()); }
};

// bedpostx's options (`rtfmri bedpost --help`), with its defaults.
struct BallStickOptions {
  int fibres = 3;                  // -n
  double ard_weight = 1.0;         // -w: the ARD prior's weight (fudge) on f_j of fibres 2..n
  int burn_in = 1000;              // -b
  int jumps = 1250;                // -j: iterations after burn-in
  int sample_every = 25;           // -s: keep every s-th of them (jumps / s samples)
  int model = 1;                   // --model 1|2
  bool rician = false;             // --rician
  bool all_ard = false;            // --allard: ARD on fibre 1 too
  bool no_ard = false;             // --noard: no ARD at all
  int update_proposal_every = 40;  // proposal widths adapted every this many burn-in iterations
  uint64_t seed = 8665904;         // --seed
  int lanes = 0;  // work-items per voxel on the device, a power of two up to 32 (0: from the device; lanes change
                  // only the order in which a voxel's measurements are summed, not its draws)
  int samples() const { return jumps / sample_every; }
};

// One voxel's parameters (the sampler's state, also the initialisation's result).
struct BallStickParams {
  double s0 = 0, d = 0, d_std = 0, tau = 0;
  std::array<double, kBallStickMaxFibres> th{}, ph{}, f{};
};

// Priors' bounds (xfibres' values): 0 <= d <= kMaxDiffusivity; 0 < d_std <= kMaxDiffusivityStd.
constexpr double kMaxDiffusivity = 0.005;    // mm^2/s
constexpr double kMaxDiffusivityStd = 0.01;  // mm^2/s

// Philox slots of one iteration (docs/algorithms/random_streams.md): each Metropolis-Hastings update draws one block
// of its slot: words 0-1 the proposal's normal, word 2 the acceptance uniform. Order of the updates in an iteration:
// tau (Rician), d, d_std (model 2), S0, then per fibre th, ph, f.
constexpr uint32_t kSlotTau = 0, kSlotD = 1, kSlotDStd = 2, kSlotS0 = 3;
constexpr uint32_t fibre_slot(int fibre, int which) {  // which: 0 th, 1 ph, 2 f
  return 4u + 3u * static_cast<uint32_t>(fibre) + static_cast<uint32_t>(which);
}

// The sampled quantities in the sampler's state order (kernels/ball_stick.cl): S0, d, d_std, tau, then th, ph, f of
// each fibre (the slots above give the order of the updates, which differs).
constexpr int kParS0 = 0, kParD = 1, kParDStd = 2, kParTau = 3;
constexpr int fibre_par(int fibre, int which) {
  return 4 + 3 * fibre + which;
}
constexpr int kBallStickQuantities = 4 + 3 * kBallStickMaxFibres;
using BallStickVector = std::array<double, kBallStickQuantities>;

inline BallStickVector pack_params(const BallStickParams& p) {
  BallStickVector v{};
  v[kParS0] = p.s0;
  v[kParD] = p.d;
  v[kParDStd] = p.d_std;
  v[kParTau] = p.tau;
  for (int j = 0; j < kBallStickMaxFibres; ++j) {
    const auto k = static_cast<size_t>(j);
    v[static_cast<size_t>(fibre_par(j, 0))] = p.th[k];
    v[static_cast<size_t>(fibre_par(j, 1))] = p.ph[k];
    v[static_cast<size_t>(fibre_par(j, 2))] = p.f[k];
  }
  return v;
}

inline BallStickParams unpack_params(const BallStickVector& v) {
  BallStickParams p;
  p.s0 = v[kParS0];
  p.d = v[kParD];
  p.d_std = v[kParDStd];
  p.tau = v[kParTau];
  for (int j = 0; j < kBallStickMaxFibres; ++j) {
    const auto k = static_cast<size_t>(j);
    p.th[k] = v[static_cast<size_t>(fibre_par(j, 0))];
    p.ph[k] = v[static_cast<size_t>(fibre_par(j, 1))];
    p.f[k] = v[static_cast<size_t>(fibre_par(j, 2))];
  }
  return p;
}

// xfibres' starting proposal widths: S0/10, d/10, d_std/10, tau/2, and 0.2 for th, ph and f.
inline BallStickVector initial_proposal_widths(const BallStickParams& p) {
  BallStickVector w{};
  w[kParS0] = p.s0 / 10.0;
  w[kParD] = p.d / 10.0;
  w[kParDStd] = p.d_std / 10.0;
  w[kParTau] = p.tau / 2.0;
  for (int k = 4; k < kBallStickQuantities; ++k) w[static_cast<size_t>(k)] = 0.2;
  return w;
}

// Bit j set: fibre j carries the ARD prior (fibres 2..n by default; all with --allard; none with --noard).
inline uint32_t ard_fibres(const BallStickOptions& o) {
  uint32_t mask = 0;
  if (o.no_ard) return 0;
  for (int j = o.all_ard ? 0 : 1; j < o.fibres; ++j) mask |= 1u << j;
  return mask;
}

}  // namespace rtf
