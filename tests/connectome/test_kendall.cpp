// ctest-label: gpu
// Kendall's tau-b on the device (core/connectome/kendall.hpp, kernels/kendall.cl) against the double reference that
// counts every time pair (core/reference/connectome_reference.hpp): every pair of nodes on odd sizes, integer data
// with many ties in both series, constant series excluded, r and |r| thresholds; several bands of rows and several
// chunks of time pairs (small band memory, L = 300: 44,850 time pairs, two chunks); continuous series with a few
// listed ties (the one-popcount path and its correction) beside integer ones; density. tau within 1e-6; the edge set
// equals the reference's except pairs within 1e-6 of the threshold.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "core/connectome/density_threshold.hpp"
#include "core/connectome/kendall.hpp"
#include "core/reference/connectome_reference.hpp"
#include "tests/connectome/density_expectations.hpp"
#include "tests/support/test_device.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

// Nodes from `continuous` on: integers in [-4, 4] (many ties); nodes before it: continuous values (no ties, so their
// tiles take the kernel's one-popcount path). Node 5 is constant.
Image integer_series(int n, int l, std::mt19937& rng, int continuous = 0) {
  ImageHeader h;
  h.dims = {n, 1, 1};
  h.num_volumes = l;
  Image image(h);
  std::normal_distribution<double> normal;
  std::vector<double> shared(static_cast<size_t>(l));
  for (double& s : shared) s = normal(rng);
  for (int v = 0; v < n; ++v) {
    const double w = normal(rng);
    for (int t = 0; t < l; ++t) {
      const double x = w * shared[static_cast<size_t>(t)] + 0.9 * normal(rng);
      image.volume(t)[static_cast<size_t>(v)] =
          static_cast<float>(v < continuous ? x : std::clamp(std::round(2.0 * x), -4.0, 4.0));
    }
  }
  for (int t = 0; t < l; ++t) image.volume(t)[5] = 1.0f;  // constant
  return image;
}

void check_image(const Image& image, const CorrelationThreshold& threshold, int64_t band_bytes) {
  const auto n = static_cast<int>(image.header().dims[0]);
  const auto l = static_cast<int>(image.header().num_volumes);
  const NodeSeries series =
      node_series(image, std::vector<uint8_t>(static_cast<size_t>(n), 1), CorrelationMethod::kPearson, false);
  std::map<std::pair<int, int>, float> found;
  kendall_correlations(
      test::test_device(), series, threshold,
      [&](std::span<const Edge> edges) {
        for (const Edge& e : edges) EXPECT_TRUE(found.emplace(std::pair{e.i, e.j}, e.r).second);
      },
      {}, band_bytes);
  Eigen::MatrixXd data(n, l);
  for (int t = 0; t < l; ++t) {
    for (int v = 0; v < n; ++v) data(v, t) = image.volume(t)[static_cast<size_t>(v)];
  }
  const Eigen::MatrixXd ref = reference::kendall_matrix(data);
  int64_t expected = 0;
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      const auto it = found.find({i, j});
      if (std::isnan(ref(i, j))) {
        EXPECT_TRUE(it == found.end());
        continue;
      }
      const double m = threshold.absolute ? std::abs(ref(i, j)) : ref(i, j);
      expected += m >= threshold.value ? 1 : 0;
      if (it != found.end()) {
        worst = std::max(worst, std::abs(it->second - ref(i, j)));
        EXPECT_NEAR(it->second, ref(i, j), 1e-6);
      }
      if (std::abs(m - threshold.value) > 1e-6) {
        EXPECT_EQ(it != found.end(), m >= threshold.value) << i << "," << j << " tau " << ref(i, j);
      }
    }
  }
  std::cout << n << " nodes, L " << l << ": " << found.size() << " edges (reference " << expected << "), worst |tau - "
            << "reference| " << worst << "\n";
  EXPECT_GT(expected, 0);
}

void check(int n, int l, const CorrelationThreshold& threshold, int64_t band_bytes, std::mt19937& rng) {
  check_image(integer_series(n, l, rng), threshold, band_bytes);
}

TEST(Kendall, TauBMatchesCountingReference) {
  std::mt19937 rng(test::test_seed());
  check(150, 23, {.value = 0.2, .absolute = false}, int64_t{2} << 30, rng);
  check(150, 23, {.value = 0.2, .absolute = true}, 64 * 150 * 4, rng);  // bands of 64 rows: three bands
  check(70, 300, {.value = 0.15, .absolute = true}, 64 * 70 * 4, rng);  // two chunks of time pairs
}

TEST(Kendall, FewTiesCorrectedOnePopcountTilesMatchReference) {
  // Continuous series (tiles 1 and 2: nodes 64..191) take the one-popcount path; some have a few tied time pairs,
  // listed and corrected: nodes divisible by 3 tie (10, 20), those divisible by 5 tie 7, 250 and 251 (three pairs),
  // so pairs of them share tied pairs. Tile 0 holds the constant node 5 and tile 3 (192..199) integer data: many ties,
  // the two-popcount path, also against the corrected tiles.
  std::mt19937 rng(test::test_seed());
  const int n = 200, l = 300;
  Image image = integer_series(n, l, rng, 192);
  for (int v = 64; v < 192; ++v) {
    const auto at = [&](int t) -> float& { return image.volume(t)[static_cast<size_t>(v)]; };
    if (v % 3 == 0) at(20) = at(10);
    if (v % 5 == 0) at(250) = at(251) = at(7);
  }
  check_image(image, {.value = 0.1, .absolute = true}, int64_t{96} * 4 * n);  // bands of 64 rows, two chunks
}

// --density with tau-b: the sample and the pass both run kendall_correlations; exactly the reference's k largest pairs.
TEST(Kendall, DensityKeepsTheLargestPairs) {
  std::mt19937 rng(test::test_seed());
  const Image image = integer_series(150, 23, rng);
  NodeSeries series = node_series(image, std::vector<uint8_t>(150, 1), CorrelationMethod::kPearson, false);
  mark_constant_series(series);
  EXPECT_EQ(series.valid[5], 0);
  Eigen::MatrixXd data(150, 23);
  for (int t = 0; t < 23; ++t) {
    for (int v = 0; v < 150; ++v) data(v, t) = image.volume(t)[static_cast<size_t>(v)];
  }
  const Eigen::MatrixXd ref = reference::kendall_matrix(data);
  const CorrelationPass pass = [](const NodeSeries& s, const CorrelationThreshold& t, const EdgeSink& sink,
                                  const TileRowProgress& p) {
    kendall_correlations(test::test_device(), s, t, sink, p);
  };
  for (const auto& [density, absolute, margin] : {std::tuple{0.03, false, 1.5}, std::tuple{0.01, true, 0.1}}) {
    SCOPED_TRACE(::testing::Message() << "density " << density << (absolute ? " |tau|" : " tau") << " margin "
                                      << margin);
    const DensityEdges d = edges_at_density(pass, series, density, absolute, 3, {}, margin);
    EXPECT_EQ(d.pairs, 149 * 148 / 2);
    if (margin < 1.0) {
      EXPECT_GT(d.passes, 1);
    }
    test::expect_k_largest(ref, d, absolute);
  }
}

TEST(Kendall, BadInput) {
  std::mt19937 rng(test::test_seed());
  const Image image = integer_series(10, 8, rng);
  const NodeSeries normalised = node_series(image, std::vector<uint8_t>(10, 1), CorrelationMethod::kPearson, true);
  EXPECT_THROW(kendall_correlations(test::test_device(), normalised, {.value = 0.5}, [](std::span<const Edge>) {}),
               std::invalid_argument);
  const NodeSeries raw = node_series(image, std::vector<uint8_t>(10, 1), CorrelationMethod::kPearson, false);
  EXPECT_THROW(kendall_correlations(test::test_device(), raw, {.value = NAN}, [](std::span<const Edge>) {}),
               std::invalid_argument);
}

}  // namespace
}  // namespace rtf
