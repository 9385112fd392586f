// Double-precision reference for the connectome's correlations, written for clarity: every pair's Pearson r from its
// definition, Kendall's tau-b by counting, and Spearman's rho as Pearson's r of ranks counted directly (rank = 1 +
// #smaller + (#equal - 1) / 2). NaN where either series is constant.
#pragma once

#include <Eigen/Core>

namespace rtf::reference {

Eigen::MatrixXd pearson_matrix(const Eigen::MatrixXd& series);   // series: N x L; result N x N
Eigen::MatrixXd spearman_matrix(const Eigen::MatrixXd& series);  // likewise
// Kendall's tau-b from its definition: (concordant - discordant) / sqrt((n0 - ties_x)(n0 - ties_y)), counting every
// time pair of every node pair; n0 - ties_x is the number of time pairs on which x differs.
Eigen::MatrixXd kendall_matrix(const Eigen::MatrixXd& series);

}  // namespace rtf::reference
