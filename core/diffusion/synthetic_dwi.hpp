// Synthetic diffusion data for tests and benchmarks: a quasi-uniform single-shell scheme (golden-spiral directions on
// the upper hemisphere, b = 0 volumes interleaved) and ball-and-stick voxels with Gaussian or Rician noise.
// Output layout of synthetic_voxels: [voxel][measurement], the measurements of one voxel contiguous.
#pragma once

#include <cstdint>
#include <vector>

#include "core/diffusion/ball_stick_model.hpp"

namespace rtf {

// `directions` unit gradients (golden spiral on z > 0: as axes, v and -v being the same measurement, they cover the
// sphere quasi-uniformly) at b = `bvalue`, and `b0s` volumes with b = 0 and a zero bvec, the first at volume 0 and the
// others spread evenly between the directions. Throws std::invalid_argument for directions < 1, b0s < 0 or
// bvalue <= 0.
DiffusionScheme synthetic_scheme(int directions, int b0s, double bvalue);

// The ball-and-stick signal (core/diffusion/ball_stick_signal.hpp) of each voxel of `truth` with `fibres` sticks and
// `model` 1|2, plus noise of standard deviation sigma = truth[v].s0 / snr: Gaussian (S + sigma n) or, when `rician`,
// the magnitude |S + sigma (n1 + i n2)|. snr <= 0 or infinite: no noise. Deterministic for a given seed, whatever the
// number of host threads: voxels are drawn in blocks of 4096, each from its own std::mt19937_64 keyed by (seed, block).
std::vector<float> synthetic_voxels(const DiffusionScheme& scheme, const std::vector<BallStickParams>& truth,
                                    int fibres, int model, double snr, bool rician, uint64_t seed);

}  // namespace rtf
