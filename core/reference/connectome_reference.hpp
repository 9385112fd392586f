// Double-precision reference for the connectome's correlations, written for clarity: every pair's Pearson r from its
// definition, and Spearman's rho as Pearson's r of ranks counted directly (rank = 1 + #smaller + (#equal - 1) / 2).
// NaN where either series is constant.
#pragma once

#include <Eigen/Core>

namespace rtf::reference {

Eigen::MatrixXd pearson_matrix(const Eigen::MatrixXd& series);   // series: N x L; result N x N
Eigen::MatrixXd spearman_matrix(const Eigen::MatrixXd& series);  // likewise

}  // namespace rtf::reference
