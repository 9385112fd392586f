// Gaussian filter taps and the FWHM <-> sigma conversion used by every smoothing operation.
#pragma once

#include <vector>

namespace rtf {

// sigma = FWHM / (2 sqrt(2 ln 2)) ~= FWHM / 2.3548
double fwhm_to_sigma(double fwhm);

// Sampled Gaussian exp(-k^2 / (2 sigma^2)) for k = -R..R with R = ceil(truncate * sigma),
// normalised to sum 1. sigma <= 0 gives the identity filter {1}.
std::vector<double> gaussian_taps(double sigma_voxels, double truncate_sigmas = 4.0);

}  // namespace rtf
