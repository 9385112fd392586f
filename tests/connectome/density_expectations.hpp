// The checks shared by the density tests (test_thresholded_correlation.cpp, test_kendall.cpp): a density's edges are
// exactly the k largest pairs of a double reference matrix (r or |r|; NaN entries, constant series, are not pairs),
// except pairs within 1e-6 of the cut, and the cut is within 1e-6 of the reference's k-th largest value.
#pragma once

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <vector>

#include "core/connectome/density_threshold.hpp"

namespace rtf::test {

inline void expect_k_largest(const Eigen::MatrixXd& ref, const DensityEdges& d, bool absolute) {
  const auto n = static_cast<int>(ref.rows());
  std::vector<double> all;
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      if (!std::isnan(ref(i, j))) all.push_back(absolute ? std::abs(ref(i, j)) : ref(i, j));
    }
  }
  ASSERT_EQ(d.pairs, static_cast<int64_t>(all.size()));
  ASSERT_GE(d.requested, 1);
  std::nth_element(all.begin(), all.begin() + (d.requested - 1), all.end(), std::greater<>());
  const double kth = all[static_cast<size_t>(d.requested - 1)];
  EXPECT_NEAR(d.threshold, kth, 1e-6);
  // Pairs tied with the cut are all kept: the excess over k is at most the pairs within 1e-6 of it (tau of integer
  // data ties often; float r rarely).
  const auto near_cut = std::count_if(all.begin(), all.end(), [&](double m) { return std::abs(m - kth) <= 1e-6; });
  EXPECT_GE(static_cast<int64_t>(d.edges.size()), d.requested);
  EXPECT_LE(static_cast<int64_t>(d.edges.size()), d.requested + std::max<int64_t>(2, near_cut));
  std::set<std::pair<int, int>> kept;
  for (const Edge& e : d.edges) kept.insert({e.i, e.j});
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      if (std::isnan(ref(i, j))) {
        EXPECT_EQ(kept.count({i, j}), 0U) << "pair " << i << "," << j << " of a constant series";
        continue;
      }
      const double m = absolute ? std::abs(ref(i, j)) : ref(i, j);
      if (std::abs(m - kth) <= 1e-6) continue;
      EXPECT_EQ(kept.count({i, j}) == 1, m > kth) << "pair " << i << "," << j;
    }
  }
}

}  // namespace rtf::test
