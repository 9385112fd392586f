// ctest-label: gpu
// Kendall's tau-b on the device (core/connectome/kendall.hpp, kernels/kendall.cl) against the double reference that
// counts every time pair (core/reference/connectome_reference.hpp): every pair of nodes on odd sizes, integer data
// with many ties in both series, constant series excluded, r and |r| thresholds; several bands of rows and several
// chunks of time pairs (small band memory, L = 300: 44,850 time pairs, two chunks). tau within 1e-6; the edge set
// equals the reference's except pairs within 1e-6 of the threshold.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "core/connectome/kendall.hpp"
#include "core/reference/connectome_reference.hpp"
#include "tests/support/test_device.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

Image integer_series(int n, int l, std::mt19937& rng) {
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
      image.volume(t)[static_cast<size_t>(v)] = static_cast<float>(std::clamp(std::round(2.0 * x), -4.0, 4.0));
    }
  }
  for (int t = 0; t < l; ++t) image.volume(t)[5] = 1.0f;  // constant
  return image;
}

void check(int n, int l, const CorrelationThreshold& threshold, int64_t band_bytes, std::mt19937& rng) {
  const Image image = integer_series(n, l, rng);
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

TEST(Kendall, TauBMatchesCountingReference) {
  std::mt19937 rng(test::test_seed());
  check(150, 23, {.value = 0.2, .absolute = false}, int64_t{2} << 30, rng);
  check(150, 23, {.value = 0.2, .absolute = true}, 64 * 150 * 4, rng);  // bands of 64 rows: three bands
  check(70, 300, {.value = 0.15, .absolute = true}, 64 * 70 * 4, rng);  // two chunks of time pairs
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
