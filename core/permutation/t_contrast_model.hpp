// The algebra of a permutation test of one t contrast in the GLM y = M b + e (n subjects, p columns), by
// Freedman & Lane (1983) as in Winkler et al. (2014, "Permutation inference for the general linear model"): the design
// is split into the effect of interest and nuisance Z = M (I - c' c'^+) (Beckmann/Smith partition: the part of M that
// c does not test); the data's nuisance residuals e = (I - H_Z) y are permuted (or sign-flipped), y* = P e + H_Z y,
// and the full model is refitted. Because c' pinv(M) H_Z = 0 and (I - H_M) H_Z = 0, each permutation needs only
//   c' b* = a' P e,      RSS* = |e|^2 - |U' P e|^2,      t* = a' P e / sqrt(RSS* / (n - p) * c' (M'M)^-1 c)
// with a = pinv(M)' c' and U an orthonormal basis of col(M). a lies in col(M), a = U alpha, so a' P e = alpha' (U' P
// e): p dot products of length n per voxel and permutation (kernels/permutation_t.cl). F contrasts (rows C, q x p,
// linearly independent) likewise: Z = M (I - C^+ C), C b* = Gamma' d with d = U' P e and A = M (M'M)^-1 C' = U Gamma,
// so F* = (C b*)' [C (M'M)^-1 C']^-1 (C b*) / q / (RSS* / (n - p)) = d' G d / RSS* with G = Gamma [C (M'M)^-1 C']^-1
// Gamma' (n - p) / q. docs/algorithms/randomise.md.
#pragma once

#include <Eigen/Core>
#include <string>

namespace rtf {

struct TContrastModel {
  int n = 0, p = 0;                  // subjects, design columns (full column rank)
  double dof = 0.0;                  // n - p
  double variance_factor = 0;        // c' (M'M)^-1 c
  Eigen::VectorXd a;                 // n: c' b = a' y
  Eigen::MatrixXd basis;             // n x p: U, orthonormal basis of col(M)
  Eigen::MatrixXd residual_forming;  // n x n: I - H_Z (the identity without nuisance)
  int nuisance_rank = 0;             // rank of Z
  int q = 0;                         // F contrasts: rows of C (0 for a t contrast)
  Eigen::MatrixXd quadratic;         // F contrasts: p x p, G above
  bool is_f() const { return q > 0; }
};

// Throws std::invalid_argument, naming `what` (the files), when M has fewer rows than columns + 1, is rank-deficient
// (smallest singular value below 1e-10 of the largest, or a zero column), has non-finite entries, or when c's length
// differs from M's columns or c is zero.
TContrastModel make_t_contrast_model(const Eigen::MatrixXd& design, const Eigen::RowVectorXd& contrast,
                                     const std::string& what = "design");

// An F contrast of the rows C (q x p). Throws as make_t_contrast_model, and when the rows are not linearly independent.
TContrastModel make_f_contrast_model(const Eigen::MatrixXd& design, const Eigen::MatrixXd& rows,
                                     const std::string& what = "design");

}  // namespace rtf
