// Double-precision reference for sliding-window CCA (core/stats/cca.hpp), written for clarity: the spatial basis
// filters built as explicit 2D/3D kernels from their definition and applied by direct convolution (zero padding),
// and the restricted CCA solved per filter subset as a generalized symmetric eigenproblem on the spatial side.
// docs/algorithms/cca.md.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace rtf::reference {

struct CcaReferenceSpec {
  bool volumetric = false;  // false: isotropic + 3 in-plane filters at 0/60/120 deg; true: isotropic + 6 (icosahedron)
  double fwhm_mm = 6.0;
  double truncate_sigmas = 4.0;
};

// The basis filters as explicit kernels on the box of (2R+1) voxels per axis, x fastest, each summing to 1:
// f_0 = g, f_k = g(r) (n_k . r)^2 / sigma^2 with g(r) = exp(-|r|^2 / (2 sigma^2)) and r in mm.
struct CcaKernels {
  std::array<int64_t, 3> radius{};
  std::vector<std::vector<double>> kernels;
};
CcaKernels cca_kernels(std::array<double, 3> voxel_mm, const CcaReferenceSpec& spec);

// Filter responses of one volume, [filter][voxel]; samples outside the volume are zero.
std::vector<std::vector<double>> cca_filter_responses(std::span<const float> volume, std::array<int64_t, 3> dims,
                                                      const CcaKernels& kernels);

struct CcaSolution {
  double rho = 0.0;          // canonical correlation
  Eigen::VectorXd spatial;   // spatial weights (non-negative when restricted), zero for filters left out
  Eigen::VectorXd temporal;  // temporal weights on the (centred) basis columns
};

// Canonical correlation between the columns of y (n x S, filter responses) and x (n x T, temporal basis).
// restricted: the spatial weights must be non-negative (the best over the filter subsets whose optimum has weights of
// one sign); otherwise plain CCA. A response with no variance gives rho 0; subsets whose responses are collinear
// (relative Cholesky pivot <= 1e-5) are skipped.
CcaSolution canonical_correlation(const Eigen::MatrixXd& y, const Eigen::MatrixXd& x, bool restricted = true);

// The map over a window: volume j (nvox floats) is paired with row j of x. signed_map multiplies by the sign of the
// first temporal weight (spatial weights non-negative).
std::vector<double> cca_map(const std::vector<std::span<const float>>& volumes, const Eigen::MatrixXd& x,
                            std::array<int64_t, 3> dims, std::array<double, 3> voxel_mm, const CcaReferenceSpec& spec,
                            bool signed_map = false);

}  // namespace rtf::reference
