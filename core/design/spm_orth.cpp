// Serial (Gram-Schmidt) orthogonalisation without normalisation, SPM's spm_orth semantics.
#include "core/design/spm_orth.hpp"

namespace rtf {

Eigen::MatrixXd spm_orth(const Eigen::MatrixXd& x, double relative_tolerance) {
  Eigen::MatrixXd out = Eigen::MatrixXd::Zero(x.rows(), x.cols());
  for (Eigen::Index j = 0; j < x.cols(); ++j) {
    const double original = x.col(j).norm();
    if (!(original > 0.0)) continue;  // zero (or NaN-free empty) columns stay zero
    Eigen::VectorXd d = x.col(j);
    // The kept columns are mutually orthogonal, so the projection onto their span is the sum of the
    // projections onto each; a second pass removes what rounding left behind.
    for (int pass = 0; pass < 2; ++pass) {
      for (Eigen::Index i = 0; i < j; ++i) {
        const double norm2 = out.col(i).squaredNorm();
        if (norm2 > 0.0) d -= (out.col(i).dot(d) / norm2) * out.col(i);
      }
    }
    if (d.norm() > relative_tolerance * original) out.col(j) = d;
  }
  return out;
}

}  // namespace rtf
