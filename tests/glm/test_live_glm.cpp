// ctest-label: gpu
// The per-TR GLMs through a device ring: the cumulative GLM over a 2,000-volume run stays equal to the double
// reference on the volumes so far (no drift in float32; the DCT drift columns join progressively), also with AR(1)
// prewhitening; the sliding-window GLM equals
// the reference on each window (with its own Legendre drift), also with a volume missing; bad use is refused.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>

#include "core/device/cl_error.hpp"
#include "core/glm/live_glm.hpp"
#include "core/reference/glm_reference.hpp"
#include "core/temporal/detrend_basis.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

// A block design (20 s on/off, two conditions alternating) with SPM's DCT drift, TR 1 s.
DesignMatrix block_design(int64_t volumes) {
  std::vector<Event> events;
  for (double onset = 10.0; onset < static_cast<double>(volumes); onset += 40.0) {
    events.push_back({onset, 20.0, (static_cast<int>(onset) / 40) % 2 == 0 ? "faces" : "houses", std::nullopt});
  }
  DesignOptions options;
  options.tr_s = 1.0;
  options.n_scans = volumes;
  return build_design_matrix(events, options);
}

std::vector<GlmContrast> contrasts_for(const DesignMatrix& d) {
  const auto cols = d.x.cols();
  Eigen::MatrixXd diff = Eigen::MatrixXd::Zero(1, cols), faces = Eigen::MatrixXd::Zero(1, cols),
                  f = Eigen::MatrixXd::Zero(2, cols);
  diff(0, *d.find("faces")) = 1.0;
  diff(0, *d.find("houses")) = -1.0;
  faces(0, *d.find("faces")) = 1.0;
  f(0, *d.find("faces")) = 1.0;
  f(1, *d.find("houses")) = 1.0;
  return {{"faces-houses", diff}, {"faces", faces}, {"effects", f}};
}

// fMRI-like data: baseline 600-1400, 2% faces and 1% houses effects, slow drift, AR(1) noise of sd 10; float-rounded.
Eigen::MatrixXd make_data(const DesignMatrix& d, int64_t voxels, uint32_t seed, double rho) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  const int64_t volumes = d.x.rows();
  Eigen::MatrixXd data(volumes, voxels);
  const Eigen::Index faces = *d.find("faces"), houses = *d.find("houses");
  for (int64_t v = 0; v < voxels; ++v) {
    const double base = 1000.0 + 400.0 * std::tanh(normal(rng));
    const double a = 0.02 * base * normal(rng), b = 0.01 * base * normal(rng), drift = 30.0 * normal(rng);
    double e = 0.0;
    for (int64_t t = 0; t < volumes; ++t) {
      e = rho * e + 10.0 * normal(rng);
      const double tau = static_cast<double>(t) / static_cast<double>(volumes);
      data(t, v) = static_cast<double>(
          static_cast<float>(base + a * d.x(t, faces) + b * d.x(t, houses) + drift * std::sin(3.0 * tau) + e));
    }
  }
  return data;
}

void push(DeviceRingBuffer& ring, int64_t index, const Eigen::MatrixXd& data) {
  std::vector<float> v(static_cast<size_t>(data.cols()));
  for (Eigen::Index i = 0; i < data.cols(); ++i) v[static_cast<size_t>(i)] = static_cast<float>(data(index, i));
  const ClEvent e = ring.push(index, std::as_bytes(std::span<const float>(v)), DataType::kFloat32);
  const cl_event raw = e.get();
  RTF_CL_CHECK(clWaitForEvents(1, &raw));
}

// Worst relative difference (floor 1) between a device map [k][v] and the reference's rows.
double worst(const std::vector<float>& device, const Eigen::MatrixXd& ref) {
  double w = 0.0;
  for (Eigen::Index r = 0; r < ref.rows(); ++r) {
    for (Eigen::Index c = 0; c < ref.cols(); ++c) {
      const double d = device[static_cast<size_t>(r * ref.cols() + c)], e = ref(r, c);
      if (std::isnan(e) != std::isnan(d)) return INFINITY;
      if (!std::isnan(e)) w = std::max(w, std::abs(d - e) / std::max(std::abs(e), 1.0));
    }
  }
  return w;
}

void run_cumulative(double rho) {
  const int64_t volumes = 2000, voxels = 53;
  const DesignMatrix design = block_design(volumes);
  const auto contrasts = contrasts_for(design);
  const Eigen::MatrixXd data = make_data(design, voxels, std::random_device{}(), rho);
  DeviceRingBuffer ring(test::test_device(), voxels, 4);
  CumulativeGlm glm(test::test_device(), voxels, {design, contrasts, rho, std::nullopt, 1.0, 128.0});
  auto q = test::test_device().queue();
  for (int64_t t = 0; t < volumes; ++t) {
    push(ring, t, data);
    glm.update(ring, t);
    if (t == 99 || t == 999 || t == volumes - 1) {
      // The reference fits the design's columns that are active after t + 1 volumes (the first
      // floor(2 (t + 1) / 128) drift columns), then the same contrasts.
      const auto active_drift = static_cast<int64_t>(std::floor(2.0 * static_cast<double>(t + 1) / 128.0));
      std::vector<Eigen::Index> kept;
      int64_t drift = 0;
      for (size_t j = 0; j < design.columns.size(); ++j) {
        if (design.columns[j].kind != DesignColumn::Kind::kDrift || ++drift <= active_drift) {
          kept.push_back(static_cast<Eigen::Index>(j));
        }
      }
      Eigen::MatrixXd x(t + 1, static_cast<Eigen::Index>(kept.size()));
      std::vector<GlmContrast> kept_contrasts;
      for (size_t k = 0; k < kept.size(); ++k) x.col(static_cast<Eigen::Index>(k)) = design.x.col(kept[k]).head(t + 1);
      for (const auto& c : contrasts) {
        Eigen::MatrixXd w(c.weights.rows(), static_cast<Eigen::Index>(kept.size()));
        for (size_t k = 0; k < kept.size(); ++k) w.col(static_cast<Eigen::Index>(k)) = c.weights.col(kept[k]);
        kept_contrasts.push_back({c.name, w});
      }
      auto ref = reference::fit_glm(data.topRows(t + 1), x, kept_contrasts, rho);
      Eigen::MatrixXd full_beta = Eigen::MatrixXd::Zero(design.x.cols(), voxels);
      for (size_t k = 0; k < kept.size(); ++k) full_beta.row(kept[k]) = ref.beta.row(static_cast<Eigen::Index>(k));
      ref.beta = full_beta;
      // Betas of the task columns (drift betas are nuisance), contrasts through t and F.
      const std::vector<float> beta = glm.glm().beta().read_all(q);
      double wb = 0.0;
      for (const char* name : {"faces", "houses"}) {
        const Eigen::Index j = *design.find(name);
        const std::vector<float> row(beta.begin() + j * voxels, beta.begin() + (j + 1) * voxels);
        wb = std::max(wb, worst(row, ref.beta.row(j)));
      }
      const double wt = worst(glm.glm().t().read_all(q), ref.t), wf = worst(glm.glm().f().read_all(q), ref.f);
      std::printf(
          "cumulative rho %.2f after %lld volumes (%lld columns, rank %lld): worst relative t %.2e, F %.2e, "
          "task beta %.2e\n",
          rho, static_cast<long long>(t + 1), static_cast<long long>(design.x.cols()),
          static_cast<long long>(glm.model().rank), wt, wf, wb);
      // The issue: at the last TR equal to the offline GLM within 1e-4 relative; held here at every checkpoint.
      EXPECT_LT(wt, 1e-4) << "t after " << t + 1;
      EXPECT_LT(wf, 1e-4) << "F after " << t + 1;
      EXPECT_LT(wb, 1e-4) << "beta after " << t + 1;
    }
  }
  EXPECT_EQ(glm.volumes(), volumes);
}

TEST(CumulativeGlm, TwoThousandVolumesStayEqualToTheReference) {
  run_cumulative(0.0);
}
TEST(CumulativeGlm, TwoThousandVolumesWithAr1) {
  run_cumulative(0.3);
}

TEST(SlidingGlm, EachWindowEqualsTheReferenceAlsoWithAMissingVolume) {
  const int64_t volumes = 150, voxels = 71, window = 40;
  const DesignMatrix design = block_design(volumes);
  const auto contrasts = contrasts_for(design);
  const Eigen::MatrixXd data = make_data(design, voxels, std::random_device{}(), 0.0);
  DeviceRingBuffer ring(test::test_device(), voxels, 48);
  SlidingGlm glm(test::test_device(), voxels, {design, contrasts, 0.0, std::nullopt}, window, 1);
  auto q = test::test_device().queue();
  const int64_t missing = 117;
  for (int64_t t = 0; t < volumes; ++t) {
    if (t != missing) push(ring, t, data);
    if (t == missing) continue;
    glm.update(ring, t);
    if (t != 5 && t != 60 && t != 130) continue;
    // The reference rebuilds the window design independently: faces, houses, then Legendre P0, P1 over the window.
    const int64_t first = std::max<int64_t>(0, t - window + 1), span = t - first + 1;
    const Eigen::MatrixXd poly = legendre_basis(span, 1);
    std::vector<int64_t> rows;
    for (int64_t i = first; i <= t; ++i) {
      if (i != missing) rows.push_back(i);
    }
    Eigen::MatrixXd x(static_cast<Eigen::Index>(rows.size()), 4), y(static_cast<Eigen::Index>(rows.size()), voxels);
    for (size_t k = 0; k < rows.size(); ++k) {
      const auto r = static_cast<Eigen::Index>(k);
      x(r, 0) = design.x(rows[k], *design.find("faces"));
      x(r, 1) = design.x(rows[k], *design.find("houses"));
      x(r, 2) = poly(rows[k] - first, 0);
      x(r, 3) = poly(rows[k] - first, 1);
      y.row(r) = data.row(rows[k]);
    }
    std::vector<GlmContrast> wc;
    for (const auto& c : contrasts) {
      Eigen::MatrixXd w = Eigen::MatrixXd::Zero(c.weights.rows(), 4);
      w.col(0) = c.weights.col(*design.find("faces"));
      w.col(1) = c.weights.col(*design.find("houses"));
      wc.push_back({c.name, w});
    }
    const auto ref = reference::fit_glm(y, x, wc);
    const double wt = worst(glm.glm().t().read_all(q), ref.t), wf = worst(glm.glm().f().read_all(q), ref.f);
    std::printf("sliding window ending at %lld (%zu volumes): worst relative t %.2e, F %.2e\n",
                static_cast<long long>(t), rows.size(), wt, wf);
    // Tolerance: as the batch GLM (test_device_glm), 1e-5 relative with a floor of 1.
    EXPECT_LT(wt, 1e-5) << "window ending at " << t;
    EXPECT_LT(wf, 1e-5) << "window ending at " << t;
  }
  EXPECT_EQ(glm.column_names().back(), "window_poly_1");
}

// Motion parameters arrive one volume at a time: set_confounds() fills the design's confound rows before each
// update, and the result equals the offline fit with the complete confound columns.
TEST(CumulativeGlm, ConfoundsSetPerVolumeEqualTheOfflineDesign) {
  const int64_t volumes = 90, voxels = 37;
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<double> normal;
  Eigen::MatrixXd motion(volumes, 2);
  for (auto& m : motion.reshaped()) m = normal(rng);
  std::vector<Event> events;
  for (double onset = 10.0; onset < 90.0; onset += 40.0) {
    events.push_back({onset, 20.0, (static_cast<int>(onset) / 40) % 2 == 0 ? "faces" : "houses", std::nullopt});
  }
  DesignOptions options;
  options.tr_s = 1.0;
  options.n_scans = volumes;
  options.confounds = motion;
  options.confound_names = {"trans_x", "rot_x"};
  options.demean_confounds = false;
  const DesignMatrix with_motion = build_design_matrix(events, options);
  DesignMatrix placeholder = with_motion;  // what the live server knows at the start: zeros
  for (size_t j = 0; j < placeholder.columns.size(); ++j) {
    if (placeholder.columns[j].kind == DesignColumn::Kind::kConfound)
      placeholder.x.col(static_cast<Eigen::Index>(j)).setZero();
  }
  const auto contrasts = contrasts_for(with_motion);
  const Eigen::MatrixXd data = make_data(with_motion, voxels, std::random_device{}(), 0.0);
  DeviceRingBuffer ring(test::test_device(), voxels, 4);
  CumulativeGlm glm(test::test_device(), voxels, {placeholder, contrasts, 0.0, std::nullopt});
  for (int64_t t = 0; t < volumes; ++t) {
    push(ring, t, data);
    const std::array<double, 2> row{motion(t, 0), motion(t, 1)};
    glm.set_confounds(t, row);
    glm.update(ring, t);
  }
  const auto ref = reference::fit_glm(data, with_motion.x, contrasts);
  const double wt = worst(glm.glm().t().read_all(test::test_device().queue()), ref.t);
  std::printf("confounds set per volume: worst relative t %.2e\n", wt);
  EXPECT_LT(wt, 1e-5);  // as the batch GLM
  const std::array<double, 1> one{0.0};
  EXPECT_THROW(glm.set_confounds(3, one), std::invalid_argument);
}

TEST(LiveGlm, BadUseIsRefused) {
  const int64_t voxels = 11;
  const DesignMatrix design = block_design(60);
  const auto contrasts = contrasts_for(design);
  DeviceRingBuffer small_ring(test::test_device(), voxels, 8);
  Eigen::MatrixXd data = make_data(design, voxels, 1, 0.0);
  for (int64_t t = 0; t < 3; ++t) push(small_ring, t, data);
  CumulativeGlm cumulative(test::test_device(), voxels, {design, contrasts, 0.0, std::nullopt});
  cumulative.update(small_ring, 2);
  EXPECT_THROW(cumulative.update(small_ring, 1), std::invalid_argument);  // indices must increase
  EXPECT_THROW(cumulative.update(small_ring, 60), std::out_of_range);     // beyond the design
  EXPECT_THROW(cumulative.update(small_ring, 7), std::out_of_range);      // not in the ring
  SlidingGlm sliding(test::test_device(), voxels, {design, contrasts, 0.0, std::nullopt}, 20);
  EXPECT_THROW(sliding.update(small_ring, 2), std::invalid_argument);  // window larger than the ring
  Eigen::MatrixXd on_constant = Eigen::MatrixXd::Zero(1, design.x.cols());
  on_constant(0, *design.find("constant")) = 1.0;
  EXPECT_THROW(SlidingGlm(test::test_device(), voxels, {design, {{"c", on_constant}}, 0.0, std::nullopt}, 5),
               std::invalid_argument);
  EXPECT_THROW(CumulativeGlm(test::test_device(), voxels, {design, contrasts, 1.0, std::nullopt}),
               std::invalid_argument);
}

}  // namespace
}  // namespace rtf
