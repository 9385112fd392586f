// FSL's dyads of one fibre of one voxel from its MCMC samples (bedpostx's dyads<i> and dyads<i>_dispersion): the
// principal eigenvector of the mean dyadic tensor M = (1/n) sum v v' of the sampled directions v = fibre_direction(th,
// ph), and the dispersion 1 - lambda_max(M) (0 when every sample lies on one axis; up to 2/3 for isotropic samples).
// v and -v give the same v v', so the dyad is an axis; it is returned with z > 0 (with y > 0 where |z| < 1e-9,
// then x > 0).
#pragma once

#include <array>

namespace rtf {

struct Dyad {
  std::array<double, 3> vector;  // unit principal eigenvector of M
  double dispersion;             // 1 - largest eigenvalue of M
};

// The dyad of `samples` directions read at th[k * stride], ph[k * stride]. Throws std::invalid_argument for
// samples < 1 or stride < 1.
Dyad mean_dyad(const float* th, const float* ph, int samples, int stride = 1);

}  // namespace rtf
