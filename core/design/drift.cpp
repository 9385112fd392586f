// Drift regressors from the detrending bases, scaled as SPM's spm_dctmtx.
#include "core/design/drift.hpp"

#include <cmath>

#include "core/temporal/detrend_basis.hpp"

namespace rtf {

Eigen::MatrixXd spm_dct_drift(int64_t n, double tr_s, double cutoff_s) {
  const Eigen::MatrixXd cosines = dct_basis(n, tr_s, cutoff_s);  // column 0 is the constant
  return std::sqrt(2.0 / static_cast<double>(n)) * cosines.rightCols(cosines.cols() - 1);
}

Eigen::MatrixXd legendre_drift(int64_t n, int order) {
  const Eigen::MatrixXd p = legendre_basis(n, order);  // column 0 is the constant
  return p.rightCols(order);
}

}  // namespace rtf
