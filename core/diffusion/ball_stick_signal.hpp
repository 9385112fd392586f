// The ball-and-stick model's predicted signal in double (core/diffusion/ball_stick_model.hpp has the formulas): shared
// by the initialisation's fit, the synthetic data of the tests and benchmarks, and the double reference sampler.
#pragma once

#include <array>
#include <vector>

#include "core/diffusion/ball_stick_model.hpp"

namespace rtf {

// Unit vector of angles (th, ph): (sin th cos ph, sin th sin ph, cos th).
std::array<double, 3> fibre_direction(double th, double ph);

// Attenuation exp(-b d x) (model 1, or model 2 with d_std < 1e-5) or (d / (d + b x d_std^2))^(d^2 / d_std^2) (model
// 2), where x = 1 for the ball and (g . v)^2 for a stick.
double compartment_attenuation(int model, double b, double x, double d, double d_std);

// S_i for every measurement of `scheme`, with `fibres` sticks.
std::vector<double> ball_stick_signal(const DiffusionScheme& scheme, const BallStickParams& p, int fibres, int model);

}  // namespace rtf
