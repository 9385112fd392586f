// The host half of the AR(P) GLM (docs/algorithms/glm_ar.md): the design X (n x columns) replaced by an orthonormal
// basis U of its column space (thin SVD X = U S V', the GLM's rank rule), so every per-voxel whitened system is well
// conditioned and rank-deficient designs work; beta = V S^-1 gamma. Each contrast becomes rows in gamma's coordinates:
// a t contrast c the row a = S^-1 V' c, an F contrast an orthonormal basis of its rows' span (the F statistic depends
// only on that span). Double precision, columns x columns: microseconds.
#pragma once

#include <Eigen/Core>
#include <vector>

#include "core/glm/glm_model.hpp"

namespace rtf {

struct ArStatistic {
  bool is_f = false;
  bool estimable = true;
  Eigen::MatrixXd rows;  // q x rank in gamma's coordinates (q = 1 for t); 0 rows when not estimable
};

struct ArGlmModel {
  int n = 0;                            // volumes
  int order = 0;                        // P
  int columns = 0;                      // of X
  int rank = 0;                         // r
  double dof = 0;                       // n - P - r
  Eigen::MatrixXd basis;                // n x r: U
  Eigen::MatrixXd to_beta;              // columns x r: V S^-1
  std::vector<ArStatistic> statistics;  // one per contrast, in the order given
  int max_rows() const;                 // the largest q (at least 1)
};

// Throws std::invalid_argument for an order outside 1..4, a design with no more rows than order + rank, or a contrast
// whose width differs from the design's columns. A contrast outside the row space of X (|c - c V V'| > 1e-4 |c|) is
// kept as not estimable: its maps are NaN.
ArGlmModel make_ar_glm_model(const Eigen::MatrixXd& x, const std::vector<GlmContrast>& contrasts, int order);

}  // namespace rtf
