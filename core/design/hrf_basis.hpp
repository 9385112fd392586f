// SPM's 'hrf' basis sets (spm_get_bf): the canonical HRF alone, with its temporal derivative, or with the
// temporal and dispersion derivatives, sampled at the microtime bin dt and serially orthogonalised.
// See docs/algorithms/design.md.
#pragma once

#include <Eigen/Core>

#include "core/design/spm_hrf.hpp"

namespace rtf {

enum class HrfDerivatives {
  kNone,                // 'hrf'
  kTemporal,            // 'hrf (with time derivative)'
  kTemporalDispersion,  // 'hrf (with time and dispersion derivatives)'
};

int hrf_basis_size(HrfDerivatives derivatives);  // 1, 2 or 3 columns

// Offsets SPM uses for its finite differences: the temporal derivative shifts the onset p(6) by 1 s, the
// dispersion derivative changes the response dispersion p(3) by 0.01.
constexpr double kHrfTemporalStep = 1.0;
constexpr double kHrfDispersionStep = 0.01;

// Columns before orthogonalisation, each of length floor(p(7) / dt) + 1:
//   0: h = spm_hrf(dt, p) (unit sum);
//   1: (h - spm_hrf(dt, p with onset p(6) + 1)) / 1;
//   2: (h - spm_hrf(dt, p with dispersion p(3) + 0.01)) / 0.01.
// Each shifted kernel is normalised to unit sum on its own, as in SPM. Throws std::invalid_argument as
// spm_hrf does.
Eigen::MatrixXd spm_hrf_basis_raw(double dt_s, HrfDerivatives derivatives, const SpmHrfParams& params = {});

// spm_orth of the raw basis: SPM's xBF.bf.
Eigen::MatrixXd spm_hrf_basis(double dt_s, HrfDerivatives derivatives, const SpmHrfParams& params = {});

}  // namespace rtf
