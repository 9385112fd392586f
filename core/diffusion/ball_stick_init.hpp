// The ball-and-stick sampler's starting point for every voxel, in double on all host cores: (a) a log-linear tensor
// fit (weighted least squares on log S of the measurements with S > 0) giving S0, MD, FA and the eigenvectors;
// (b) a Levenberg-Marquardt least-squares fit of the ball-and-stick model (model 1, then model 2 from it) with sticks
// starting along the tensor's eigenvectors; (c) bounds and order the sampler expects (mcmc_ready). Parameters are
// transformed so the constraints hold during the fit: S0 = exp, d = exp, d_std = exp, f_j = sin^2(t_j) times what the
// earlier fibres leave (so each f in [0, 1] and sum f <= 1). docs/algorithms/bedpost.md describes the whole method.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/diffusion/ball_stick_model.hpp"

namespace rtf {

// Bounds mcmc_ready applies (the priors' support, kept away from its edges).
constexpr double kInitMinDiffusivity = 1e-5, kInitMaxDiffusivity = 0.999 * kMaxDiffusivity;
constexpr double kInitMinDiffusivityStd = 1e-5;  // below it compartment_attenuation switches to model 1's form
constexpr double kInitMinFraction = 0.01, kInitMaxFraction = 0.9, kInitMaxFractionSum = 0.95;

struct TensorFit {
  double s0 = 0, md = 0, fa = 0;
  std::array<double, 3> e1{}, e2{}, e3{};  // unit eigenvectors of the eigenvalues, largest first; largest entry > 0
  std::array<double, 3> eigenvalues{};     // descending (mm^2/s)
  bool ok = false;                         // false: fewer than 7 measurements with S > 0, or a singular design
};

// Log-linear tensor fit of one voxel's signal (scheme.measurements() values): ordinary least squares on log S, then
// weighted least squares with weights S_ols^2 (Salvador et al. 2005), over the measurements with finite S > 0.
TensorFit fit_tensor(const DiffusionScheme& scheme, const double* signal);

struct BallStickFit {
  BallStickParams params;  // the least-squares estimate (fibres in fit order, no bounds applied; d_std = 0 for model 1)
  double sse = 0;          // sum of squared residuals
  int iterations = 0;      // Levenberg-Marquardt iterations (Jacobian evaluations), over both stages for model 2
  bool ok = false;         // the tensor fit worked and the result is finite
};

// The least-squares fit of one voxel. Levenberg-Marquardt (damped Gauss-Newton with Marquardt's diagonal scaling,
// Nielsen's damping update and an analytic Jacobian), at most 100 iterations per run, stopping when an accepted step
// lowers the SSE by less than 1e-8 relatively. Model 1 with n sticks keeps the lower SSE of two starts: "direct" (S0
// and d = MD clamped to [2e-4, 4e-3] from the tensor, stick j along the tensor's j-th eigenvector, f_1 = 0.2 + 0.6 FA
// clamped to [0.2, 0.7], later fibres 0.1) and, for n >= 2, a "nested" chain (the direct one-stick fit, then one stick
// at a time, each new one of f = 0.05 perpendicular to the earlier ones, everything refitted). Model 2 is fitted from
// model 1's estimate with d_std = d / 2. Noiseless data: 1 and 2 fibres (crossings 30-90 degrees) are recovered to
// ~1e-12; 3 fibres at 90 degrees always, 3 fibres with a 60-degree pair in ~99% of orientations
// (tests/diffusion/test_ball_stick_init.cpp).
BallStickFit fit_ball_stick(const DiffusionScheme& scheme, const double* signal, int fibres, int model);

// Makes a fit a valid sampler state: d into [kInitMinDiffusivity, kInitMaxDiffusivity]; model 2: d_std into
// [kInitMinDiffusivityStd, kMaxDiffusivityStd] (model 1: 0); each f into [kInitMinFraction, kInitMaxFraction], then,
// where sum f > kInitMaxFractionSum, the parts above kInitMinFraction scaled down so the sum is kInitMaxFractionSum;
// fibres sorted by f, largest first; (th, ph) rewritten for the same direction with th in [0, pi], ph in (-pi, pi];
// tau = 1 / residual_variance, residual_variance floored at (1e-4 S0)^2 + 1e-12.
BallStickParams mcmc_ready(const BallStickParams& fit, int fibres, int model, double residual_variance);

// Every voxel's starting state: data is [voxel][measurement] (scheme.measurements() floats per voxel). Voxels that
// cannot be fitted (a non-finite value, all zeros, no positive mean b = 0 signal, a failed tensor fit) get a flagged
// neutral state: S0 = mean of the b = 0 measurements (1 if not positive), d = 1e-3, d_std = 5e-4 (model 2), f = 0.01
// along x, y, z, tau = 1 / (0.05 S0)^2. `fitted`, when given, receives 1 per fitted voxel and 0 per flagged one.
// Throws std::invalid_argument for voxels < 0, fibres outside 1..kBallStickMaxFibres, model not 1 or 2, or a scheme
// with no measurements.
std::vector<BallStickParams> initialise_ball_stick(const DiffusionScheme& scheme, const float* data, int voxels,
                                                   int fibres, int model, std::vector<uint8_t>* fitted = nullptr);

}  // namespace rtf
