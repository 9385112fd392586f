// ctest-label: gpu
// DeviceGlm against the double-precision reference (core/reference/glm_reference): random fMRI-like data (baseline
// 1000, effects of a few percent, noise) on an odd number of voxels and volumes, fresh seeds; all volumes at once
// and one at a time in ring order; AR(1) prewhitening; a mask; a rank-deficient design with a non-estimable
// contrast; bad arguments. Outputs are poisoned (NaN) before each solve.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "core/glm/device_glm.hpp"
#include "core/reference/glm_reference.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

struct Problem {
  Eigen::MatrixXd design;  // T x P, last column constant
  Eigen::MatrixXd data;    // T x V
  std::vector<GlmContrast> contrasts;
};

Problem make_problem(int64_t volumes, int64_t voxels, uint32_t seed, double rho = 0.0) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  Problem p;
  const int columns = 5;
  p.design = Eigen::MatrixXd::Zero(volumes, columns);
  for (int64_t t = 0; t < volumes; ++t) {
    const double tau = static_cast<double>(t) / static_cast<double>(volumes);
    p.design(t, 0) = (t / 7) % 2 == 0 ? 1.0 : 0.0;    // block
    p.design(t, 1) = std::sin(2 * M_PI * 3.3 * tau);  // oscillation
    p.design(t, 2) = normal(rng);                     // confound
    p.design(t, 3) = 2.0 * tau - 1.0;                 // linear drift
    p.design(t, 4) = 1.0;                             // constant
  }
  p.data = Eigen::MatrixXd(volumes, voxels);
  for (int64_t v = 0; v < voxels; ++v) {
    const double baseline = 800.0 + 400.0 * std::abs(normal(rng));
    Eigen::VectorXd b(columns);
    b << 0.03 * baseline * normal(rng), 0.01 * baseline * normal(rng), 5.0 * normal(rng), 20.0 * normal(rng), baseline;
    double e = 0.0;
    for (int64_t t = 0; t < volumes; ++t) {
      e = rho * e + 10.0 * normal(rng);
      // Rounded to float: the device's input, so that the comparison measures the computation, not the rounding.
      p.data(t, v) = static_cast<double>(static_cast<float>(p.design.row(t).dot(b) + e));
    }
  }
  Eigen::MatrixXd c1 = Eigen::MatrixXd::Zero(1, columns), c2 = Eigen::MatrixXd::Zero(1, columns),
                  f = Eigen::MatrixXd::Zero(2, columns);
  c1(0, 0) = 1.0;
  c2(0, 0) = 1.0;
  c2(0, 1) = -0.5;
  f(0, 0) = 1.0;
  f(1, 1) = 1.0;
  p.contrasts = {{"block", c1}, {"block_minus_half_osc", c2}, {"effects", f}};
  return p;
}

// Relative comparison with an absolute floor: |a - b| <= tol * max(|b|, floor).
void expect_close(const std::vector<float>& device, const Eigen::MatrixXd& ref, double tol, double floor,
                  const std::string& what) {
  ASSERT_EQ(device.size(), static_cast<size_t>(ref.size())) << what;
  int bad = 0;
  double worst = 0.0;
  for (Eigen::Index r = 0; r < ref.rows(); ++r) {
    for (Eigen::Index c = 0; c < ref.cols(); ++c) {
      const double d = device[static_cast<size_t>(r * ref.cols() + c)], e = ref(r, c);
      if (std::isnan(e)) {
        if (!std::isnan(d)) ++bad;
        continue;
      }
      const double err = std::abs(d - e) / std::max(std::abs(e), floor);
      worst = std::max(worst, err);
      if (!(err <= tol)) ++bad;
    }
  }
  EXPECT_EQ(bad, 0) << what << ": worst relative error " << worst;
  std::printf("%s: worst relative error %.2e\n", what.c_str(), worst);
}

struct Outputs {
  std::vector<float> beta, sigma2, con, t, f;
};

Outputs read_outputs(DeviceGlm& glm) {
  auto q = test::test_device().queue();
  return {glm.beta().read_all(q), glm.sigma2().read_all(q), glm.contrast().read_all(q), glm.t().read_all(q),
          glm.f().read_all(q)};
}

void poison(DeviceGlm& glm) {
  auto q = test::test_device().queue();
  for (const DeviceBuffer<float>* b : {&glm.beta(), &glm.sigma2(), &glm.contrast(), &glm.t(), &glm.f()}) {
    const_cast<DeviceBuffer<float>*>(b)->fill(q, std::nanf(""));
  }
}

// Uploads the data as a series buffer [t][v] in the order of `slot_of_time` (a permutation, like a ring).
DeviceBuffer<float> upload_series(const Eigen::MatrixXd& data, const std::vector<int64_t>& slot_of_time) {
  const auto t_count = data.rows(), voxels = data.cols();
  std::vector<float> host(static_cast<size_t>(t_count * voxels));
  for (Eigen::Index t = 0; t < t_count; ++t) {
    for (Eigen::Index v = 0; v < voxels; ++v) {
      host[static_cast<size_t>(slot_of_time[static_cast<size_t>(t)] * voxels + v)] = static_cast<float>(data(t, v));
    }
  }
  DeviceBuffer<float> buffer(test::test_device(), host.size());
  buffer.write(test::test_device().queue(), host);
  return buffer;
}

void compare(DeviceGlm& glm, const reference::GlmResult& ref, const std::string& what) {
  const Outputs out = read_outputs(glm);
  // Tolerances: float32 Kahan sums of fMRI-scale data shifted by a volume, then the one-pass residual variance
  // (y'y - b'X'y) and the solve in double where the device has it, against double precision with explicit residuals
  // on the same float-rounded data. Measured 2026-11-23 (PoCL): beta <= 3e-7, sigma2 <= 7e-6, t <= 3e-6, F <= 7e-6.
  // Statistics relative to themselves with a floor of 1 (t, F near 0 compare absolutely); estimates relative to the
  // baseline scale (floor 10).
  expect_close(out.beta, ref.beta, 2e-6, 10.0, what + " beta");
  expect_close(out.sigma2, ref.sigma2.transpose(), 2e-5, 1.0, what + " sigma2");
  expect_close(out.con, ref.contrast, 2e-6, 10.0, what + " contrast");
  expect_close(out.t, ref.t, 1e-5, 1.0, what + " t");
  expect_close(out.f, ref.f, 2e-5, 1.0, what + " F");
}

// Every lane width on any device: 1 (the GPU form), 4 and 16 (CPU forms; 1237 voxels leave a partial last group).
class DeviceGlmWidths : public ::testing::TestWithParam<int> {};

TEST_P(DeviceGlmWidths, AllVolumesAtOnceMatchesReference) {
  const int64_t volumes = 57, voxels = 1237;
  const Problem p = make_problem(volumes, voxels, std::random_device{}());
  std::vector<int64_t> slots(static_cast<size_t>(volumes)), prev(static_cast<size_t>(volumes), -1);
  std::iota(slots.begin(), slots.end(), 0);
  const DeviceBuffer<float> series = upload_series(p.data, slots);
  DeviceGlm glm(test::test_device(), {voxels, 5, p.contrasts, 4, volumes, std::nullopt, true, GetParam()});
  glm.reset(series, 0);
  glm.accumulate(series, slots, prev, p.design);
  poison(glm);
  glm.solve(make_glm_model(p.design, p.contrasts));
  compare(glm, reference::fit_glm(p.data, p.design, p.contrasts), "batch, width " + std::to_string(glm.vector_width()));
}

TEST(DeviceGlm, OneVolumeAtATimeInRingOrderWithAr1) {
  const int64_t volumes = 41, voxels = 611;
  const double rho = 0.35;
  const Problem p = make_problem(volumes, voxels, std::random_device{}(), rho);
  std::vector<int64_t> slot_of_time(static_cast<size_t>(volumes));
  for (int64_t t = 0; t < volumes; ++t) slot_of_time[static_cast<size_t>(t)] = (t * 17 + 5) % volumes;  // permuted
  const DeviceBuffer<float> series = upload_series(p.data, slot_of_time);
  DeviceGlm glm(test::test_device(), {voxels, 5, p.contrasts, 4, 1, std::nullopt});
  const Eigen::MatrixXd whitened = reference::ar1_whiten(p.design, rho);
  glm.reset(series, slot_of_time[3]);  // any volume serves as the shift
  for (int64_t t = 0; t < volumes; ++t) {
    const int64_t slot = slot_of_time[static_cast<size_t>(t)];
    const int64_t prev = t > 0 ? slot_of_time[static_cast<size_t>(t - 1)] : -1;
    glm.accumulate(series, std::span<const int64_t>(&slot, 1), std::span<const int64_t>(&prev, 1), whitened.row(t),
                   rho);
  }
  poison(glm);
  glm.solve(make_glm_model(whitened, p.contrasts));
  compare(glm, reference::fit_glm(p.data, p.design, p.contrasts, rho), "incremental AR(1)");
}

TEST_P(DeviceGlmWidths, MaskAndRankDeficientDesign) {
  const int64_t volumes = 33, voxels = 301;
  Problem p = make_problem(volumes, voxels, std::random_device{}());
  // Column 3 duplicated into a 6th column: X'X is singular; the block contrast stays estimable, a contrast on the
  // duplicated column alone does not.
  Eigen::MatrixXd design(volumes, 6);
  design << p.design, p.design.col(3);
  std::vector<GlmContrast> contrasts;
  for (const auto& c : p.contrasts) {
    Eigen::MatrixXd w = Eigen::MatrixXd::Zero(c.weights.rows(), 6);
    w.leftCols(5) = c.weights;
    contrasts.push_back({c.name, w});
  }
  Eigen::MatrixXd drift_only = Eigen::MatrixXd::Zero(1, 6);
  drift_only(0, 5) = 1.0;
  contrasts.push_back({"duplicate", drift_only});
  std::vector<uint8_t> mask(static_cast<size_t>(voxels));
  std::mt19937 rng(std::random_device{}());
  for (auto& m : mask) m = static_cast<uint8_t>(rng() % 4 != 0);
  std::vector<int64_t> slots(static_cast<size_t>(volumes)), prev(static_cast<size_t>(volumes), -1);
  std::iota(slots.begin(), slots.end(), 0);
  const DeviceBuffer<float> series = upload_series(p.data, slots);
  DeviceGlm glm(test::test_device(), {voxels, 6, contrasts, 4, volumes, mask, true, GetParam()});
  glm.reset(series, 0);
  glm.accumulate(series, slots, prev, design);
  poison(glm);
  const GlmModel model = make_glm_model(design, contrasts);
  EXPECT_EQ(model.rank, 5);
  EXPECT_FALSE(model.t_estimable.back());
  glm.solve(model);
  const auto ref = reference::fit_glm(p.data, design, contrasts, 0.0, std::span<const uint8_t>(mask));
  const Outputs out = read_outputs(glm);
  // Estimable quantities only (the betas of a rank-deficient design are one of many solutions; both use pinv).
  expect_close(out.sigma2, ref.sigma2.transpose(), 2e-5, 1.0, "rank-deficient sigma2");
  expect_close(out.t, ref.t, 1e-5, 1.0, "rank-deficient t");
  for (int64_t v = 0; v < voxels; ++v) {
    EXPECT_TRUE(std::isnan(out.t[static_cast<size_t>(2 * voxels + v)])) << "non-estimable contrast, voxel " << v;
    if (mask[static_cast<size_t>(v)] == 0) {
      EXPECT_TRUE(std::isnan(out.sigma2[static_cast<size_t>(v)])) << v;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Lanes, DeviceGlmWidths, ::testing::Values(0, 1, 4, 16));

TEST(DeviceGlm, BadArgumentsAreRefused) {
  Eigen::MatrixXd c = Eigen::MatrixXd::Ones(1, 3);
  EXPECT_THROW(DeviceGlm(test::test_device(), {100, 4, {{"c", c}}, 3, 1, std::nullopt}), std::invalid_argument);
  EXPECT_THROW(DeviceGlm(test::test_device(), {100, 3, {}, 5, 1, std::nullopt}), std::invalid_argument);
  EXPECT_THROW(DeviceGlm(test::test_device(), {100, 3, {}, 2, 1, std::vector<uint8_t>(7, 1)}), std::invalid_argument);
  EXPECT_THROW(DeviceGlm(test::test_device(), {100, 3, {}, 2, 1, std::nullopt, true, 3}), std::invalid_argument);
  DeviceGlm glm(test::test_device(), {100, 3, {{"c", c}}, 2, 2, std::nullopt});
  DeviceBuffer<float> series(test::test_device(), 300);
  const std::vector<int64_t> three{0, 1, 2}, bad{5}, none{-1};
  EXPECT_THROW(glm.accumulate(series, three, three, Eigen::MatrixXd::Ones(3, 3)), std::invalid_argument);  // > max
  EXPECT_THROW(glm.accumulate(series, bad, none, Eigen::MatrixXd::Ones(1, 3)), std::out_of_range);
  EXPECT_THROW(glm.accumulate(series, none, none, Eigen::MatrixXd::Ones(1, 3)), std::out_of_range);
  EXPECT_THROW(glm.accumulate(series, std::span(three).subspan(0, 1), none, Eigen::MatrixXd::Ones(1, 2)),
               std::invalid_argument);
  EXPECT_THROW(glm.accumulate(series, std::span(three).subspan(0, 1), none, Eigen::MatrixXd::Ones(1, 3), 1.0),
               std::invalid_argument);
}

}  // namespace
}  // namespace rtf
