// Double-precision reference of the ball-and-stick Metropolis-Hastings sampler (FSL xfibres' model, priors and update
// order; core/diffusion/ball_stick_model.hpp, docs/algorithms/bedpost.md), drawing from the Philox streams of
// core/random/philox.hpp so that the device sampler (kernels/ball_stick.cl, compiled in double) equals it draw for
// draw. One iteration updates, each with a Gaussian random-walk proposal and an accept test log u < E_old - E_new on
// the energy E = -log posterior: tau (Rician), d, d_std (model 2), S0, then th, ph, f of each fibre. Widths adapt
// every `update_proposal_every` burn-in iterations (w *= sqrt((accepted + 1) / (rejected + 1))) and stay fixed while
// recording; every `sample_every`-th iteration after burn-in is a sample.
#pragma once

#include <cstdint>
#include <vector>

#include "core/diffusion/ball_stick_model.hpp"

namespace rtf::reference {

// logI0(x), the log of the modified Bessel function of the first kind, order 0 (Abramowitz & Stegun 9.8.1-9.8.2),
// for the Rician likelihood; relative error of I0 < 2e-7.
double log_bessel_i0(double x);

// -log prior of a state, in the sampler's order (model 2's log d_std, then each fibre's -log|sin th / 2| and, for ARD
// fibres, w log f).
double ball_stick_prior_energy(const BallStickParams& p, const BallStickOptions& o, uint32_t ard_mask);

struct BallStickChain {
  std::vector<BallStickVector> samples;    // the kept samples (jumps / sample_every)
  std::vector<BallStickVector> states;     // the state after every iteration (when asked for)
  BallStickVector widths{};                // proposal widths at the end
  BallStickVector accepted{}, rejected{};  // counts while recording
};

// The chain of one voxel (`voxel`: its index in the whole mask, the stream's coordinate) from `init`, with
// `data` its n measurements. `iterations` < 0: burn_in + jumps.
BallStickChain ball_stick_chain(const DiffusionScheme& scheme, const std::vector<double>& data,
                                const BallStickParams& init, const BallStickOptions& options, uint32_t voxel,
                                bool keep_states = false, int iterations = -1);

}  // namespace rtf::reference
