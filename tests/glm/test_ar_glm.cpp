// ctest-label: gpu
// The AR(P) GLM on the device (core/glm/ar_glm.hpp, kernels/ar_glm.cl) against the double-precision reference
// (core/reference/ar_glm_reference.hpp, itself checked against statsmodels' GLSAR): fMRI-scale data (baseline ~1000,
// AR-coloured noise of sd 10, effects of a few percent) on odd grids with a mask, fresh seeds; t, F, beta, sigma2
// and the AR maps for P = 1..4, 1 and 3 Cochrane-Orcutt fits, with and without smoothed AR maps; a rank-deficient
// design with a non-estimable contrast; constant voxels; a batch of data sets equals the data sets one by one, and
// the per-map maxima equal the maps' maxima. Tolerances (float data, basis and AR maps; double sums): t and F 5e-5
// relative (floor 1; measured <= 2.0e-5 over 36 fresh seeds), beta 2e-6 of the baseline, sigma2 1e-4 relative, rho
// 2e-5.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/filters/gaussian_smoothing.hpp"
#include "core/glm/ar_glm.hpp"
#include "core/reference/ar_glm_reference.hpp"
#include "tests/support/test_device.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

using Dims = std::array<int64_t, 3>;

struct Problem {
  Dims dims;
  int n = 0;
  std::vector<uint8_t> mask;
  Eigen::MatrixXd x;        // n x columns
  std::vector<float> data;  // [n][grid]
  std::vector<GlmContrast> contrasts;
};

size_t grid(const Dims& d) {
  return static_cast<size_t>(d[0] * d[1] * d[2]);
}

// Constant, linear trend, two boxcars with different periods, a cosine; y = 1000 + x b + AR noise of sd ~10.
Problem make_problem(Dims dims, int n, std::mt19937& rng, bool duplicate_column = false) {
  Problem p;
  p.dims = dims;
  p.n = n;
  const int cols = duplicate_column ? 6 : 5;
  p.x.resize(n, cols);
  for (int t = 0; t < n; ++t) {
    p.x(t, 0) = ((t / 6) % 2) ? 1.0 : 0.0;
    p.x(t, 1) = ((t / 4) % 3 == 0) ? 1.0 : 0.0;
    p.x(t, 2) = std::cos(M_PI * t / n);
    p.x(t, 3) = (t - n / 2.0) / n;
    p.x(t, 4) = 1.0;
    if (duplicate_column) p.x(t, 5) = p.x(t, 0);
  }
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const size_t g = grid(dims);
  p.mask.assign(g, 1);
  for (size_t v = 0; v < g; ++v) p.mask[v] = uniform(rng) < 0.8 ? 1 : 0;
  p.data.assign(static_cast<size_t>(n) * g, 0.0f);
  for (size_t v = 0; v < g; ++v) {
    const double phi[4] = {0.1 + 0.4 * uniform(rng), -0.1 + 0.2 * uniform(rng), 0.1 * uniform(rng), 0.05};
    Eigen::VectorXd beta = Eigen::VectorXd::Zero(cols);
    beta(0) = 30.0 * normal(rng);
    beta(1) = 20.0 * normal(rng);
    beta(2) = 15.0 * normal(rng);
    beta(3) = 10.0 * normal(rng);
    beta(4) = 600.0 + 800.0 * uniform(rng);
    std::array<double, 4> past{};
    for (int t = 0; t < n; ++t) {
      double e = 10.0 * normal(rng);
      for (int k = 0; k < 4; ++k) e += phi[k] * past[static_cast<size_t>(k)];
      for (int k = 3; k > 0; --k) past[static_cast<size_t>(k)] = past[static_cast<size_t>(k - 1)];
      past[0] = e;
      p.data[static_cast<size_t>(t) * g + v] = static_cast<float>(p.x.row(t).dot(beta) + e);
    }
  }
  Eigen::MatrixXd c1 = Eigen::MatrixXd::Zero(1, cols), c2 = c1, f = Eigen::MatrixXd::Zero(2, cols);
  c1(0, 0) = 1.0;
  c2(0, 0) = 1.0;
  c2(0, 1) = -1.0;
  f(0, 0) = 1.0;
  f(1, 2) = 1.0;
  p.contrasts = {{"a", c1}, {"a-b", c2}, {"a_or_cos", f}};
  return p;
}

Eigen::MatrixXd as_matrix(const Problem& p) {
  const size_t g = grid(p.dims);
  Eigen::MatrixXd m(p.n, static_cast<Eigen::Index>(g));
  for (int t = 0; t < p.n; ++t) {
    for (size_t v = 0; v < g; ++v) m(t, static_cast<Eigen::Index>(v)) = p.data[static_cast<size_t>(t) * g + v];
  }
  return m;
}

std::vector<Eigen::MatrixXd> weights(const std::vector<GlmContrast>& contrasts) {
  std::vector<Eigen::MatrixXd> w;
  for (const GlmContrast& c : contrasts) w.push_back(c.weights);
  return w;
}

// NaN equals NaN; otherwise |a - e| <= tolerance * max(floor, |e|). Returns the worst relative difference seen.
double compare(double actual, double expected, double tolerance, double floor, const char* what, size_t voxel) {
  if (std::isnan(expected)) {
    EXPECT_TRUE(std::isnan(actual)) << what << " at voxel " << voxel << ": " << actual << ", reference NaN";
    return 0.0;
  }
  const double scale = std::max(floor, std::abs(expected));
  EXPECT_LE(std::abs(actual - expected), tolerance * scale)
      << what << " at voxel " << voxel << ": " << actual << " vs " << expected;
  return std::abs(actual - expected) / scale;
}

void check_against_reference(const Problem& p, const ArGlmOptions& options) {
  const std::array<double, 3> voxel_mm{3.0, 3.0, 3.5};
  Device& device = test::test_device();
  const ArGlmModel model = make_ar_glm_model(p.x, p.contrasts, options.order);
  ArGlm glm(device, p.dims, voxel_mm, p.mask, model, options, 1);
  DeviceBuffer<float> series(device, p.data.size());
  series.write(device.queue(), p.data);
  glm.fit(series, 1, true);
  const ArGlm::Fit fit = glm.read_fit();

  std::array<std::vector<double>, 3> taps;
  const bool smoothed = options.ar_fwhm_mm > 0;
  if (smoothed) {
    taps = GaussianSmoother(device, p.dims, voxel_mm,
                            SmoothingSpec{.fwhm_mm = options.ar_fwhm_mm, .path = SmoothingPath::kSeparablePasses},
                            std::span<const uint8_t>(p.mask))
               .taps();
  }
  const reference::ArGlmReference ref =
      reference::fit_ar_glm(as_matrix(p), p.dims, p.mask, p.x, weights(p.contrasts), options.order, options.iterations,
                            smoothed ? &taps : nullptr);
  EXPECT_EQ(model.dof, ref.dof);
  // U goes to the device in double where the device has fp64 (NVIDIA, PoCL; measured <= 2.0e-7 in t over 5 runs of
  // every case); float-only devices round it (measured <= 2.0e-5).
  const double stat_tolerance = device.has_fp64() ? 2e-6 : 5e-5;
  double worst_stat = 0, worst_beta = 0, worst_sigma = 0, worst_rho = 0;
  const auto& index = glm.mask_voxels_index();
  for (size_t m = 0; m < index.size(); ++m) {
    const auto v = static_cast<size_t>(index[m]);
    const auto vi = static_cast<Eigen::Index>(v);
    for (size_t s = 0; s < p.contrasts.size(); ++s) {
      worst_stat = std::max(worst_stat, compare(fit.statistics[s][m], ref.stat(static_cast<Eigen::Index>(s), vi),
                                                stat_tolerance, 1.0, "statistic", v));
    }
    for (int j = 0; j < model.columns; ++j) {
      worst_beta = std::max(
          worst_beta, compare(fit.beta(j, static_cast<Eigen::Index>(m)), ref.beta(j, vi), 2e-6, 1000.0, "beta", v));
    }
    worst_sigma = std::max(worst_sigma, compare(fit.sigma2[m], ref.sigma2(vi), 1e-4, 0.0, "sigma2", v));
    for (int k = 0; k < options.order; ++k) {
      worst_rho = std::max(worst_rho, compare(fit.rho[static_cast<size_t>(k)][v], ref.rho(k, vi), 2e-5, 1.0, "rho", v));
    }
  }
  std::cout << "AR(" << options.order << "), " << options.iterations << " fit(s), AR fwhm " << options.ar_fwhm_mm
            << ": worst t/F " << worst_stat << ", beta " << worst_beta << " (of 1000), sigma2 " << worst_sigma
            << ", rho " << worst_rho << "\n";
}

TEST(ArGlm, DeviceMatchesReferenceForEveryOrder) {
  std::mt19937 rng(test::test_seed());
  const Problem p = make_problem({7, 5, 4}, 37, rng);
  for (int order = 1; order <= 4; ++order) {
    SCOPED_TRACE(::testing::Message() << "order " << order);
    check_against_reference(p, {.order = order, .iterations = 3, .ar_fwhm_mm = 0.0});
  }
  check_against_reference(p, {.order = 4, .iterations = 1, .ar_fwhm_mm = 0.0});
}

TEST(ArGlm, SmoothedArMapsMatchReference) {
  std::mt19937 rng(test::test_seed());
  const Problem p = make_problem({9, 6, 5}, 43, rng);
  check_against_reference(p, {.order = 4, .iterations = 3, .ar_fwhm_mm = 7.0});
  check_against_reference(p, {.order = 2, .iterations = 4, .ar_fwhm_mm = 5.0});
}

TEST(ArGlm, LongSeriesKeepTheBasisInGlobalMemory) {
  std::mt19937 rng(test::test_seed());
  const Problem p = make_problem({3, 3, 2}, 2003, rng);  // 2003 x 5 doubles: 80 KB, past constant memory
  check_against_reference(p, {.order = 4, .iterations = 2, .ar_fwhm_mm = 0.0});
}

TEST(ArGlm, RankDeficientDesignAndNonEstimableContrast) {
  std::mt19937 rng(test::test_seed());
  Problem p = make_problem({5, 4, 3}, 31, rng, true);  // column 5 duplicates column 0
  Eigen::MatrixXd half = Eigen::MatrixXd::Zero(1, 6);
  half(0, 0) = 1.0;  // beta_0 alone is not estimable: only beta_0 + beta_5 is
  p.contrasts.push_back({"column0", half});
  p.contrasts[0].weights(0, 5) = 1.0;  // a = beta_0 + beta_5: estimable
  const ArGlmModel model = make_ar_glm_model(p.x, p.contrasts, 4);
  EXPECT_EQ(model.rank, 5);
  EXPECT_TRUE(model.statistics[0].estimable);
  EXPECT_FALSE(model.statistics[3].estimable);
  check_against_reference(p, {.order = 4, .iterations = 3, .ar_fwhm_mm = 0.0});
}

TEST(ArGlm, ConstantVoxelsGetNaN) {
  std::mt19937 rng(test::test_seed());
  Problem p = make_problem({5, 5, 3}, 29, rng);
  const size_t g = grid(p.dims);
  p.mask[7] = 1;
  for (int t = 0; t < p.n; ++t) p.data[static_cast<size_t>(t) * g + 7] = 812.0f;
  Device& device = test::test_device();
  ArGlm glm(device, p.dims, {3.0, 3.0, 3.0}, p.mask, make_ar_glm_model(p.x, p.contrasts, 4),
            {.order = 4, .iterations = 3, .ar_fwhm_mm = 0.0}, 1);
  DeviceBuffer<float> series(device, p.data.size());
  series.write(device.queue(), p.data);
  glm.fit(series, 1, true);
  const ArGlm::Fit fit = glm.read_fit();
  const auto& index = glm.mask_voxels_index();
  const size_t m = static_cast<size_t>(std::find(index.begin(), index.end(), 7) - index.begin());
  ASSERT_LT(m, index.size());
  for (const auto& s : fit.statistics) EXPECT_TRUE(std::isnan(s[m])) << s[m];
  EXPECT_TRUE(std::isnan(fit.sigma2[m]));
  for (int k = 0; k < 4; ++k) EXPECT_EQ(fit.rho[static_cast<size_t>(k)][7], 0.0f);
}

TEST(ArGlm, BatchEqualsOneByOneAndMaximaAreTheMapsMaxima) {
  std::mt19937 rng(test::test_seed());
  const Dims dims{6, 7, 3};
  const int n = 33, count = 3;
  std::vector<Problem> problems;
  for (int b = 0; b < count; ++b) problems.push_back(make_problem(dims, n, rng));
  for (int b = 1; b < count; ++b) {  // one design and mask, three data sets
    problems[static_cast<size_t>(b)].mask = problems[0].mask;
  }
  const Problem& p0 = problems[0];
  Device& device = test::test_device();
  const ArGlmOptions options{.order = 4, .iterations = 3, .ar_fwhm_mm = 6.0};
  const ArGlmModel model = make_ar_glm_model(p0.x, p0.contrasts, 4);
  const size_t series_size = p0.data.size();
  std::vector<float> all;
  for (const Problem& p : problems) all.insert(all.end(), p.data.begin(), p.data.end());
  ArGlm batch(device, dims, {3.0, 3.0, 3.0}, p0.mask, model, options, 4);
  DeviceBuffer<float> series(device, all.size());
  series.write(device.queue(), all);
  batch.fit(series, count);
  const std::vector<float> maxima = batch.maxima(count);
  const size_t vm = batch.mask_voxels();
  const std::vector<float> stats = batch.statistics().read_all(device.queue());
  ArGlm single(device, dims, {3.0, 3.0, 3.0}, p0.mask, model, options, 1);
  for (int b = 0; b < count; ++b) {
    DeviceBuffer<float> one(device, series_size);
    one.write(device.queue(), problems[static_cast<size_t>(b)].data);
    single.fit(one, 1, true);
    const ArGlm::Fit fit = single.read_fit();
    for (size_t s = 0; s < p0.contrasts.size(); ++s) {
      float largest = -INFINITY;
      for (size_t m = 0; m < vm; ++m) {
        const float batched = stats[(s * 4 + static_cast<size_t>(b)) * vm + m];
        const float alone = fit.statistics[s][m];
        if (std::isnan(alone)) {
          EXPECT_TRUE(std::isnan(batched));
        } else {
          EXPECT_EQ(batched, alone) << "data set " << b << ", statistic " << s << ", voxel " << m;
          largest = std::max(largest, alone);
        }
      }
      EXPECT_EQ(maxima[s * static_cast<size_t>(count) + static_cast<size_t>(b)], largest);
    }
  }
}

TEST(ArGlm, BadInput) {
  const Eigen::MatrixXd x = Eigen::MatrixXd::Ones(10, 2);
  EXPECT_THROW(make_ar_glm_model(x, {}, 5), std::invalid_argument);
  EXPECT_THROW(make_ar_glm_model(Eigen::MatrixXd::Ones(5, 1), {}, 4), std::invalid_argument);  // no dof left
  EXPECT_THROW(make_ar_glm_model(x, {{"wide", Eigen::MatrixXd::Ones(1, 3)}}, 1), std::invalid_argument);
  Device& device = test::test_device();
  Eigen::MatrixXd design(10, 2);
  for (int t = 0; t < 10; ++t) design.row(t) << 1.0, t;
  const ArGlmModel model = make_ar_glm_model(design, {}, 1);
  EXPECT_THROW(ArGlm(device, {2, 2, 2}, {1, 1, 1}, std::vector<uint8_t>(8, 0), model, {.order = 1}, 1),
               std::invalid_argument);  // empty mask
  EXPECT_THROW(ArGlm(device, {2, 2, 2}, {1, 1, 1}, std::vector<uint8_t>(7, 1), model, {.order = 1}, 1),
               std::invalid_argument);  // mask of the wrong size
  EXPECT_THROW(ArGlm(device, {2, 2, 2}, {1, 1, 1}, std::vector<uint8_t>(8, 1), model, {.order = 2}, 1),
               std::invalid_argument);  // order unlike the model's
}

}  // namespace
}  // namespace rtf
