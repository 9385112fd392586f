// Noise and nuisance signals of the phantom (docs/algorithms/phantom.md, "Noise"): the thermal / physiological
// split of the grey-matter noise budget set by the tSNR, quasi-periodic cardiac and respiratory rhythms sampled
// at the acquisition times (so they alias at the TR), per-voxel phases, and the slow multiplicative drift.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/phantom/epi_grid.hpp"
#include "sim/phantom/phantom_spec.hpp"
#include "sim/phantom/random.hpp"

namespace rtf::sim {

struct NoiseLevels {
  // sd of the thermal noise (each of the real and imaginary channels for Rician noise), output units:
  // sqrt(1 - physio_share) * GM baseline / tSNR.
  double thermal_sd = 0.0;
  // Amplitude a of each of the two physiological sinusoids per unit of the physiological weight map W (W = sum of
  // tissue fraction * baseline * physio_weight): a = sqrt(physio_share) / (tSNR * physio_weight_GM), so that pure
  // grey matter gets physiological variance physio_share * (GM baseline / tSNR)^2 (each sinusoid a^2 / 2).
  double physio_amplitude = 0.0;
  double drift_fraction = 0.0;  // drift_percent / 100
  // Factor applied to thermal_sd and physio_amplitude by calibrate_noise (1 before calibration).
  double calibration = 1.0;
};

NoiseLevels noise_levels(const PhantomSpec& spec);

// Scales thermal_sd and physio_amplitude by one factor so that the median over the given voxels of the predicted
// tSNR, baseline / sqrt(thermal_sd^2 + physio_amplitude^2 W^2), equals `tsnr` (partial volume with CSF and WM
// moves real grey-matter voxels away from the pure-GM value). No-op without noise or voxels.
NoiseLevels calibrate_noise(NoiseLevels levels, const std::vector<float>& baseline,
                            const std::vector<float>& physio_weight, double tsnr);

// A quasi-periodic rhythm: rate f(t) = f0 (1 + variation * m(t)) with m a sum of three slow random cosines
// (periods 20-120 s, |m| <= 1); phase(t) = phi0 + 2 pi * integral of f, in closed form.
class PhysioRhythm {
 public:
  PhysioRhythm(double rate_hz, double variation, Rng& rng);
  double phase(double t_s) const;

 private:
  double rate_hz_, variation_, phase0_;
  double amp_[3]{}, omega_[3]{}, chi_[3]{};
};

// Per-voxel random fields on the EPI grid (fixed in scanner space): phase offsets of the cardiac and respiratory
// fluctuation (as cos/sin pairs) and the drift gain 1 + 0.3 * (u . (x - centre)) / R, u a random direction, R
// half the field of view's diagonal (a smooth, coil-like spatial variation of the drift).
struct VoxelFields {
  std::vector<float> cardiac_cos, cardiac_sin, respiratory_cos, respiratory_sin, drift_gain;
};
VoxelFields make_voxel_fields(const EpiGrid& grid, uint64_t seed);

// Shape of the drift over the run, tau = t / run_s: (0.5 tau + 0.25 (1 - cos(2 pi tau))) / 0.7628, a linear rise
// plus one slow bump, 0 at t = 0, peak 1 at tau = 0.5516, 0.655 at the end.
double drift_shape(double t_s, double run_s);

}  // namespace rtf::sim
