// Detrending: device against the double-precision least-squares reference on odd grids and series
// lengths (up to 600 volumes) with fresh random data plus drifts; analytic checks (polynomial trends
// leave the constant, the DCT set removes a slow cosine and keeps a fast one); bases and validation.
// ctest-label: gpu
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <numbers>
#include <ostream>
#include <random>

#include "core/reference/detrend_reference.hpp"
#include "core/temporal/detrend.hpp"
#include "core/temporal/detrend_basis.hpp"
#include "sim/random_image.hpp"
#include "tests/support/compare.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

// Runs the detrender into a NaN-poisoned output buffer so that any unwritten element shows.
Image run_poisoned(Detrender& detrender, const Image& image) {
  Device& dev = test::test_device();
  DeviceBuffer<float> in(dev, image.data().size());
  DeviceBuffer<float> out(dev, image.data().size());
  in.write(dev.queue(), image.data());
  out.fill(dev.queue(), std::numeric_limits<float>::quiet_NaN());
  detrender.enqueue(in, out);
  Image result(image.header());
  out.read(dev.queue(), result.data());
  return result;
}

// Uniform noise in [0, 1000) plus, per voxel, a random linear, quadratic and slow cosine drift of
// up to +-300 each (so that there is something to remove).
Image drifting_image(std::array<int64_t, 3> dims, int64_t nt, double tr, uint64_t seed) {
  Image img = sim::random_image({dims, nt, {3.0, 3.0, 3.0}, tr, 0.0f, 1000.0f, seed});
  std::mt19937_64 rng(seed + 17);
  std::uniform_real_distribution<double> amp(-300.0, 300.0);
  const int64_t nvox = img.header().voxels_per_volume();
  for (int64_t v = 0; v < nvox; ++v) {
    const double a = amp(rng), b = amp(rng), c = amp(rng);
    for (int64_t t = 0; t < nt; ++t) {
      const double x = static_cast<double>(t) / static_cast<double>(nt);
      const double drift = a * x + b * x * x + c * std::cos(std::numbers::pi * 1.3 * x);
      img.data()[static_cast<size_t>(t * nvox + v)] += static_cast<float>(drift);
    }
  }
  return img;
}

// Data of magnitude up to ~1900. float32 projections with Kahan-compensated coefficients: measured
// max errors 0.9e-4..5.2e-4 over repeated runs (the largest: 600 volumes, 10 columns, mean removed),
// i.e. a few float ulps of the data; allow 1.5e-6 relative to the data scale of 1000.
constexpr double kTolerance = 1.5e-3;

struct Case {
  std::array<int64_t, 3> dims;
  int64_t volumes;
  double tr;
  std::optional<int> poly;
  std::optional<double> cutoff;
  bool remove_mean;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.dims[0] << "x" << c.dims[1] << "x" << c.dims[2] << "x" << c.volumes << " TR " << c.tr << " poly "
      << (c.poly ? std::to_string(*c.poly) : "-") << " highpass " << (c.cutoff ? std::to_string(*c.cutoff) : "-")
      << (c.remove_mean ? " remove-mean" : "");
}

class DetrendTest : public ::testing::TestWithParam<Case> {};

TEST_P(DetrendTest, MatchesLeastSquaresReference) {
  const Case c = GetParam();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const Image img = drifting_image(c.dims, c.volumes, c.tr, seed);
  const int64_t nvox = img.header().voxels_per_volume();
  Detrender detrender(test::test_device(), nvox, c.volumes, c.tr, {c.poly, c.cutoff, c.remove_mean});
  const Image out = run_poisoned(detrender, img);
  const auto ref = reference::detrend(img.data(), nvox, detrender.design(), c.remove_mean);
  const auto d = test::compare(out.data(), ref);
  EXPECT_EQ(d.non_finite, 0);
  EXPECT_LT(d.max_abs, kTolerance) << test::describe(d);
  RecordProperty("max_abs", std::to_string(d.max_abs));
  RecordProperty("columns", std::to_string(detrender.design().cols()));
}

INSTANTIATE_TEST_SUITE_P(OddGrids, DetrendTest,
                         ::testing::Values(Case{{13, 7, 9}, 23, 2.0, 1, std::nullopt, false},
                                           Case{{13, 7, 9}, 40, 2.0, 3, std::nullopt, true},
                                           Case{{13, 7, 9}, 40, 1.5, std::nullopt, 20.0, false},
                                           Case{{11, 5, 3}, 57, 1.0, 2, 25.0, true},
                                           Case{{5, 3, 7}, 600, 0.8, 3, 128.0, false},  // long series, 3 + 7 columns
                                           Case{{5, 3, 7}, 600, 0.8, std::nullopt, 100.0, true},
                                           Case{{7, 3, 5}, 61, 2.0, 10, std::nullopt, false}),
                         [](const auto& param_info) {
                           const Case& c = param_info.param;
                           return std::to_string(c.dims[0]) + "x" + std::to_string(c.dims[1]) + "x" +
                                  std::to_string(c.dims[2]) + "x" + std::to_string(c.volumes) + "_" +
                                  std::to_string(param_info.index);
                         });

TEST(Detrend, PolynomialTrendLeavesTheConstant) {
  const int64_t nt = 75, nvox = 37;
  for (int order = 0; order <= 3; ++order) {
    for (bool remove_mean : {false, true}) {
      SCOPED_TRACE("order " + std::to_string(order) + (remove_mean ? " remove mean" : ""));
      ImageHeader h;
      h.dims = {nvox, 1, 1};
      h.num_volumes = nt;
      Image img(h);
      std::vector<double> constant(nvox);
      for (int64_t v = 0; v < nvox; ++v) {
        // 400 + 10 v plus a trend of exactly `order` with its mean removed (so the mean is the constant).
        constant[static_cast<size_t>(v)] = 400.0 + 10.0 * static_cast<double>(v);
        std::vector<double> trend(nt);
        double mean = 0.0;
        for (int64_t t = 0; t < nt; ++t) {
          const double s = static_cast<double>(t) - 30.0;
          const double coeffs[4] = {0.0, 3.0 + 0.1 * v, -0.04, 0.0009};
          double p = 0.0;
          for (int k = order; k >= 1; --k) p = (p + coeffs[k]) * s;
          trend[static_cast<size_t>(t)] = p;
          mean += p / nt;
        }
        for (int64_t t = 0; t < nt; ++t) {
          img.data()[static_cast<size_t>(t * nvox + v)] =
              static_cast<float>(constant[static_cast<size_t>(v)] + trend[static_cast<size_t>(t)] - mean);
        }
      }
      Detrender detrender(test::test_device(), nvox, nt, 2.0, {order, std::nullopt, remove_mean});
      const Image out = run_poisoned(detrender, img);
      for (int64_t t = 0; t < nt; ++t) {
        for (int64_t v = 0; v < nvox; ++v) {
          const double expected = remove_mean ? 0.0 : constant[static_cast<size_t>(v)];
          ASSERT_NEAR(out.data()[static_cast<size_t>(t * nvox + v)], expected, 2e-3) << "t " << t << " v " << v;
        }
      }
    }
  }
}

TEST(Detrend, DctRemovesSlowCosineKeepsFastOne) {
  // n = 100, TR = 2 s, cutoff 128 s: K = floor(2 * 100 * 2 / 128 + 1) = 4, so k = 1..3 are removed.
  const int64_t nt = 100, nvox = 9;
  ASSERT_EQ(dct_count(nt, 2.0, 128.0), 4);
  auto cosine = [&](int k, int64_t t) {
    return std::cos(std::numbers::pi * k * (2.0 * static_cast<double>(t) + 1.0) / (2.0 * nt));
  };
  ImageHeader h;
  h.dims = {3, 3, 1};
  h.num_volumes = nt;
  Image img(h);
  for (int64_t t = 0; t < nt; ++t) {
    for (int64_t v = 0; v < nvox; ++v) {
      // period 2 n TR / k: k = 2 -> 200 s (below the cutoff frequency), k = 10 -> 40 s (above it).
      img.data()[static_cast<size_t>(t * nvox + v)] =
          static_cast<float>(300.0 + v + 50.0 * cosine(2, t) + 20.0 * cosine(10, t) + 5.0 * cosine(3, t));
    }
  }
  Detrender detrender(test::test_device(), nvox, nt, 2.0, {std::nullopt, 128.0, false});
  EXPECT_EQ(detrender.design().cols(), 4);
  const Image out = run_poisoned(detrender, img);
  for (int64_t t = 0; t < nt; ++t) {
    for (int64_t v = 0; v < nvox; ++v) {
      const double expected = 300.0 + v + 20.0 * cosine(10, t);
      ASSERT_NEAR(out.data()[static_cast<size_t>(t * nvox + v)], expected, 1e-3) << "t " << t;
    }
  }
}

TEST(Detrend, ConstantOnlyIsIdentityOrMeanRemoval) {
  const auto img = sim::random_image({{5, 4, 3}, 12, {2.0, 2.0, 2.0}, 2.0, 0.0f, 100.0f, 11});
  Detrender keep(test::test_device(), 60, 12, 2.0, {0, std::nullopt, false});
  EXPECT_EQ(keep.removed_columns(), 0);
  EXPECT_EQ(run_poisoned(keep, img).data(), img.data());
  EXPECT_EQ(keep.detrend(img).data(), img.data());
  Detrender remove(test::test_device(), 60, 12, 2.0, {0, std::nullopt, true});
  const Image out = run_poisoned(remove, img);
  for (int64_t v = 0; v < 60; ++v) {
    double mean = 0.0, in_mean = 0.0;
    for (int64_t t = 0; t < 12; ++t) {
      mean += out.data()[static_cast<size_t>(t * 60 + v)] / 12.0;
      in_mean += img.data()[static_cast<size_t>(t * 60 + v)] / 12.0;
    }
    EXPECT_NEAR(mean, 0.0, 1e-4);
    EXPECT_NEAR(out.data()[static_cast<size_t>(v)], img.data()[static_cast<size_t>(v)] - in_mean, 1e-4);
  }
}

TEST(Detrend, InPlaceMatchesOutOfPlace) {
  const auto img = drifting_image({6, 5, 4}, 30, 2.0, 5);
  Detrender detrender(test::test_device(), 120, 30, 2.0, {2, 40.0, false});
  EXPECT_EQ(detrender.detrend(img).data(), run_poisoned(detrender, img).data());
}

TEST(DetrendBasis, LegendreValues) {
  const auto p = legendre_basis(5, 3);  // x = -1, -0.5, 0, 0.5, 1
  ASSERT_EQ(p.rows(), 5);
  ASSERT_EQ(p.cols(), 4);
  for (int64_t t = 0; t < 5; ++t) {
    const double x = -1.0 + 0.5 * static_cast<double>(t);
    EXPECT_DOUBLE_EQ(p(t, 0), 1.0);
    EXPECT_NEAR(p(t, 1), x, 1e-15);
    EXPECT_NEAR(p(t, 2), 0.5 * (3 * x * x - 1), 1e-15);
    EXPECT_NEAR(p(t, 3), 0.5 * (5 * x * x * x - 3 * x), 1e-15);
  }
  EXPECT_EQ(legendre_basis(1, 0).cols(), 1);
}

TEST(DetrendBasis, DctCountAndColumns) {
  EXPECT_EQ(dct_count(100, 2.0, 128.0), 4);  // floor(4.125)
  EXPECT_EQ(dct_count(200, 2.0, 128.0), 7);  // floor(7.25)
  EXPECT_EQ(dct_count(64, 2.0, 256.0), 2);   // floor(2.0)
  EXPECT_EQ(dct_count(10, 1.0, 1000.0), 1);  // only the constant
  const auto c = dct_basis(8, 2.0, 10.0);    // K = floor(4.2) = 4
  ASSERT_EQ(c.cols(), 4);
  EXPECT_NEAR(c(0, 1), std::cos(std::numbers::pi / 16.0), 1e-15);
  EXPECT_NEAR(c(7, 3), std::cos(std::numbers::pi * 3.0 * 15.0 / 16.0), 1e-15);
  // SPM's columns are mutually orthogonal.
  const Eigen::MatrixXd g = c.transpose() * c;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      EXPECT_NEAR(g(i, j), i == j ? g(i, i) : 0.0, 1e-12);
    }
  }
}

TEST(DetrendBasis, OrthonormalBasisSpansTheDesign) {
  const auto x = detrend_design(90, 1.2, {4, 60.0, false});
  EXPECT_EQ(x.cols(), 5 + dct_count(90, 1.2, 60.0) - 1);
  const auto q = orthonormal_basis(x);
  EXPECT_LT((q.transpose() * q - Eigen::MatrixXd::Identity(q.cols(), q.cols())).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((q.col(0).array() - 1.0 / std::sqrt(90.0)).abs().maxCoeff(), 1e-14);  // constant first
  // Same span: projecting the design onto q reproduces it.
  EXPECT_LT((q * (q.transpose() * x) - x).cwiseAbs().maxCoeff(), 1e-10);
  Eigen::MatrixXd dependent(10, 3);
  dependent << Eigen::VectorXd::Ones(10), Eigen::VectorXd::LinSpaced(10, 0, 9), Eigen::VectorXd::LinSpaced(10, 5, 14);
  EXPECT_THROW(orthonormal_basis(dependent), std::invalid_argument);
}

TEST(Detrend, RejectsBadArguments) {
  Device& dev = test::test_device();
  auto make = [&](int64_t nt, double tr, DetrendSpec spec) { return Detrender(dev, 10, nt, tr, spec); };
  EXPECT_NO_THROW(make(20, 2.0, {3, 30.0, false}));
  EXPECT_THROW(make(20, 2.0, {-1, std::nullopt, false}), std::invalid_argument);
  EXPECT_THROW(make(20, 2.0, {11, std::nullopt, false}), std::invalid_argument);
  EXPECT_THROW(make(20, 2.0, {std::nullopt, 0.0, false}), std::invalid_argument);
  EXPECT_THROW(make(20, 2.0, {std::nullopt, -50.0, false}), std::invalid_argument);
  EXPECT_THROW(make(20, 0.0, {std::nullopt, 50.0, false}), std::invalid_argument);
  EXPECT_THROW(make(20, 2.0, {std::nullopt, std::nullopt, false}), std::invalid_argument);
  EXPECT_THROW(make(4, 2.0, {3, std::nullopt, false}), std::invalid_argument);  // 4 columns, 4 volumes
  EXPECT_THROW(make(20, 2.0, {2, 3.0, false}), std::invalid_argument);          // 27 DCT functions > 20
  EXPECT_THROW(make(0, 2.0, {1, std::nullopt, false}), std::invalid_argument);
  EXPECT_THROW(Detrender(dev, 0, 20, 2.0, {1, std::nullopt, false}), std::invalid_argument);
  Detrender ok = make(20, 2.0, {1, std::nullopt, false});
  DeviceBuffer<float> small(dev, 100);
  EXPECT_THROW(ok.enqueue(small, small), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
