// Canonical HRF and its SPM finite-difference derivatives, orthogonalised as spm_get_bf does.
#include "core/design/hrf_basis.hpp"

#include <vector>

#include "core/design/spm_orth.hpp"

namespace rtf {
namespace {

Eigen::VectorXd as_vector(const std::vector<double>& v) {
  return Eigen::Map<const Eigen::VectorXd>(v.data(), static_cast<Eigen::Index>(v.size()));
}

}  // namespace

int hrf_basis_size(HrfDerivatives derivatives) {
  switch (derivatives) {
    case HrfDerivatives::kNone:
      return 1;
    case HrfDerivatives::kTemporal:
      return 2;
    case HrfDerivatives::kTemporalDispersion:
      return 3;
  }
  return 1;
}

Eigen::MatrixXd spm_hrf_basis_raw(double dt_s, HrfDerivatives derivatives, const SpmHrfParams& params) {
  const Eigen::VectorXd h = as_vector(spm_hrf(dt_s, params));
  Eigen::MatrixXd bf(h.size(), hrf_basis_size(derivatives));
  bf.col(0) = h;
  if (derivatives != HrfDerivatives::kNone) {
    SpmHrfParams shifted = params;
    shifted.onset_s += kHrfTemporalStep;
    bf.col(1) = (h - as_vector(spm_hrf(dt_s, shifted))) / kHrfTemporalStep;
  }
  if (derivatives == HrfDerivatives::kTemporalDispersion) {
    SpmHrfParams wider = params;
    wider.response_dispersion += kHrfDispersionStep;
    bf.col(2) = (h - as_vector(spm_hrf(dt_s, wider))) / kHrfDispersionStep;
  }
  return bf;
}

Eigen::MatrixXd spm_hrf_basis(double dt_s, HrfDerivatives derivatives, const SpmHrfParams& params) {
  return spm_orth(spm_hrf_basis_raw(dt_s, derivatives, params));
}

}  // namespace rtf
