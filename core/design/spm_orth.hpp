// SPM's serial orthogonalisation (spm_orth with its default 'pad' option): each column, in order, minus its
// least-squares projection onto the columns before it, without normalisation; a column that is (numerically)
// in the span of the earlier ones, or zero, becomes a zero column. The first column is unchanged. SPM uses it
// on basis sets (derivatives orthogonal to the HRF) and on each trial type's regressors.
#pragma once

#include <Eigen/Core>

namespace rtf {

// A column counts as dependent when its residual's 2-norm is at most `relative_tolerance` times its own
// 2-norm (SPM tests the residual's 1-norm against exp(-32) in absolute terms; a relative test does not
// depend on the regressors' scale).
Eigen::MatrixXd spm_orth(const Eigen::MatrixXd& x, double relative_tolerance = 1e-10);

}  // namespace rtf
