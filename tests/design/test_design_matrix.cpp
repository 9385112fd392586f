// Design matrix against analytic answers: an impulse samples the HRF at (i T + T0 - 1) dt after its onset, scaled
// by 1/dt; a long block plateaus at the basis' sum (1); derivative and modulator columns are orthogonal to the
// main effect and the design is linear in the events; drift, confounds, constant, names and option errors.
// Tolerances: 1e-12 absolute (regressor values are at most ~1.2) unless stated.
// ctest-label: unit
#include <gtest/gtest.h>

#include <cmath>

#include "core/design/design_matrix.hpp"
#include "core/design/stimulus.hpp"

namespace rtf {
namespace {

constexpr double kTol = 1e-12;

Event event(double onset, double duration, const std::string& type, std::optional<double> modulation = {}) {
  return {onset, duration, type, modulation};
}

DesignOptions options(double tr, int64_t scans) {
  DesignOptions o;
  o.tr_s = tr;
  o.n_scans = scans;
  o.drift = DriftModel::kNone;
  o.add_constant = false;
  return o;
}

TEST(DesignMatrix, ImpulseSamplesTheHrfAtTheMicrotimeOnset) {
  const double tr = 2.0, onset = 10.0;
  for (const int t0 : {1, 8, 16}) {
    DesignOptions o = options(tr, 40);
    o.microtime_onset = t0;
    const DesignMatrix d = build_design_matrix({event(onset, 0.0, "go")}, o);
    ASSERT_EQ(d.x.cols(), 1);
    const double dt = tr / 16;
    double sum = 0.0;  // spm_hrf's normalisation: the samples at k dt, k = 0..256, sum to 1
    for (int k = 0; k <= 256; ++k) sum += spm_hrf_unnormalised(k * dt);
    for (int64_t i = 0; i < 40; ++i) {
      // Sample time (i T + T0 - 1) dt; the impulse sits at bin round(onset / dt) = 80.
      const int64_t lag_bins = i * 16 + t0 - 1 - 80;
      const double expected =
          lag_bins < 0 || lag_bins > 256 ? 0.0 : spm_hrf_unnormalised(static_cast<double>(lag_bins) * dt) / sum / dt;
      EXPECT_NEAR(d.x(i, 0), expected, kTol) << "T0 " << t0 << ", scan " << i;
    }
  }
}

TEST(DesignMatrix, LongBlockPlateausAtOneAndShortBlocksAreBoxcarSums) {
  DesignOptions o = options(2.0, 120);
  const DesignMatrix d = build_design_matrix({event(20.0, 150.0, "block")}, o);
  for (int64_t i = 40; i < 85; ++i) EXPECT_NEAR(d.x(i, 0), 1.0, kTol) << i;  // whole 32 s kernel inside the block
  EXPECT_EQ(d.x(5, 0), 0.0);                                                 // before the block

  // A 3 s block: boxcar of round(3 / dt) + 1 = 25 bins of height 1 convolved with the unit-sum HRF.
  const DesignMatrix s = build_design_matrix({event(20.0, 3.0, "short")}, o);
  const auto h = spm_hrf(0.125);
  for (int64_t i = 0; i < 120; ++i) {
    const int64_t lag = i * 16 + 8 - 1 - 160;  // sample bin minus the block's first bin
    double expected = 0.0;
    for (int64_t b = 0; b < 25; ++b) {
      const int64_t k = lag - b;
      if (k >= 0 && k < static_cast<int64_t>(h.size())) expected += h[static_cast<size_t>(k)];
    }
    EXPECT_NEAR(s.x(i, 0), expected, kTol) << i;
  }
}

TEST(DesignMatrix, MixedDurationsInATypeAreNotRescaled) {
  // SPM divides by dt only when every event of the trial type is an impulse.
  DesignOptions o = options(2.0, 60);
  const DesignMatrix impulses = build_design_matrix({event(10, 0, "a"), event(50, 0, "a")}, o);
  const DesignMatrix mixed = build_design_matrix({event(10, 0, "a"), event(50, 1e-9, "a")}, o);
  // round(1e-9 / dt) = 0: the same single bins, but height 1 instead of 1/dt.
  EXPECT_LT((impulses.x * (2.0 / 16) - mixed.x).cwiseAbs().maxCoeff(), kTol);
}

TEST(DesignMatrix, DerivativesAreOrthogonalToTheMainEffect) {
  const std::vector<Event> events = {event(8, 0, "faces"), event(31, 0, "faces"), event(47.5, 2, "faces"),
                                     event(15, 0, "houses"), event(60, 0, "houses")};
  DesignOptions o = options(2.5, 50);
  const DesignMatrix plain = build_design_matrix(events, o);
  o.derivatives = HrfDerivatives::kTemporalDispersion;
  const DesignMatrix d = build_design_matrix(events, o);
  EXPECT_EQ(d.names(), (std::vector<std::string>{"faces", "faces_derivative", "faces_dispersion", "houses",
                                                 "houses_derivative", "houses_dispersion"}));
  EXPECT_EQ(d.columns[1].basis, 1);
  EXPECT_EQ(d.columns[5].condition, "houses");
  for (const Eigen::Index first : {0, 3}) {
    const auto main = d.x.col(first);
    EXPECT_LT((main - plain.x.col(first / 3)).cwiseAbs().maxCoeff(), kTol);  // main effect unchanged
    for (const Eigen::Index k : {first + 1, first + 2}) {
      EXPECT_LT(std::abs(main.dot(d.x.col(k))), 1e-12 * main.norm() * d.x.col(k).norm()) << k;
      EXPECT_GT(d.x.col(k).norm(), 0.05 * main.norm()) << k;
    }
    EXPECT_LT(std::abs(d.x.col(first + 1).dot(d.x.col(first + 2))),
              1e-12 * d.x.col(first + 1).norm() * d.x.col(first + 2).norm());
  }
}

TEST(DesignMatrix, ParametricModulationIsTheCentredWeightedSumOrthogonalised) {
  const std::vector<double> onsets = {6, 22, 41, 63}, values = {1, 4, 2, 5};
  std::vector<Event> events;
  for (size_t e = 0; e < onsets.size(); ++e) events.push_back(event(onsets[e], 0, "trial", values[e]));
  const DesignOptions o = options(2.0, 45);
  const DesignMatrix d = build_design_matrix(events, o);
  ASSERT_EQ(d.names(), (std::vector<std::string>{"trial", "trial_x_modulation"}));
  EXPECT_TRUE(d.columns[1].modulated);

  // Linearity: single-event regressors r_e; main = sum r_e; modulator = sum (v_e - mean v) r_e, minus its
  // projection on main.
  Eigen::VectorXd main = Eigen::VectorXd::Zero(45), modulated = Eigen::VectorXd::Zero(45);
  const double mean = 3.0;
  for (size_t e = 0; e < onsets.size(); ++e) {
    const Eigen::VectorXd r = build_design_matrix({event(onsets[e], 0, "trial")}, o).x.col(0);
    main += r;
    modulated += (values[e] - mean) * r;
  }
  modulated -= modulated.dot(main) / main.squaredNorm() * main;
  EXPECT_LT((d.x.col(0) - main).cwiseAbs().maxCoeff(), kTol);
  EXPECT_LT((d.x.col(1) - modulated).cwiseAbs().maxCoeff(), kTol);

  DesignOptions amplitude = o;
  amplitude.modulation = ModulationModel::kAmplitude;
  Eigen::VectorXd weighted = Eigen::VectorXd::Zero(45);
  for (size_t e = 0; e < onsets.size(); ++e) {
    weighted += values[e] * build_design_matrix({event(onsets[e], 0, "trial")}, o).x.col(0);
  }
  const DesignMatrix a = build_design_matrix(events, amplitude);
  ASSERT_EQ(a.x.cols(), 1);
  EXPECT_LT((a.x.col(0) - weighted).cwiseAbs().maxCoeff(), kTol);

  DesignOptions ignore = o;
  ignore.modulation = ModulationModel::kIgnore;
  EXPECT_LT((build_design_matrix(events, ignore).x.col(0) - main).cwiseAbs().maxCoeff(), kTol);

  DesignOptions raw = o;  // SPM with orthogonalisation off: the modulator as given, not centred
  raw.orthogonalise = false;
  Eigen::VectorXd uncentred = Eigen::VectorXd::Zero(45);
  for (size_t e = 0; e < onsets.size(); ++e) {
    uncentred += values[e] * build_design_matrix({event(onsets[e], 0, "trial")}, o).x.col(0);
  }
  EXPECT_LT((build_design_matrix(events, raw).x.col(1) - uncentred).cwiseAbs().maxCoeff(), kTol);
}

TEST(DesignMatrix, ModulationErrors) {
  const DesignOptions o = options(2.0, 30);
  EXPECT_THROW(build_design_matrix({event(5, 0, "a", 1.0), event(15, 0, "a")}, o), std::invalid_argument);
  EXPECT_THROW(build_design_matrix({event(5, 0, "a", 2.0), event(15, 0, "a", 2.0)}, o), std::invalid_argument);
  // A type without any modulation value has no modulator column; n/a everywhere is the same.
  EXPECT_EQ(build_design_matrix({event(5, 0, "a", 1.0), event(15, 0, "a", 3.0), event(9, 0, "b")}, o).names(),
            (std::vector<std::string>{"a", "a_x_modulation", "b"}));
}

TEST(DesignMatrix, DriftConfoundsConstantAndNames) {
  DesignOptions o;
  o.tr_s = 2.0;
  o.n_scans = 100;
  Eigen::MatrixXd motion(100, 6);
  for (Eigen::Index i = 0; i < motion.size(); ++i) motion(i) = std::sin(0.37 * static_cast<double>(i)) + 3.0;
  o.confounds = motion;
  o.confound_names = motion_confound_names();
  const DesignMatrix d = build_design_matrix({event(10, 0, "faces"), event(40, 20, "houses")}, o);
  // K = floor(2 * 100 * 2 / 128 + 1) = 4: three cosines.
  EXPECT_EQ(d.names(), (std::vector<std::string>{"faces", "houses", "trans_x", "trans_y", "trans_z", "rot_x", "rot_y",
                                                 "rot_z", "drift_1", "drift_2", "drift_3", "constant"}));
  EXPECT_EQ(d.columns[2].kind, DesignColumn::Kind::kConfound);
  EXPECT_EQ(d.columns[8].kind, DesignColumn::Kind::kDrift);
  EXPECT_EQ(d.columns[11].kind, DesignColumn::Kind::kConstant);
  EXPECT_EQ(d.find("rot_x"), 5);
  EXPECT_FALSE(d.find("cars").has_value());
  // Confounds mean-corrected as SPM does, otherwise unchanged.
  for (Eigen::Index j = 0; j < 6; ++j) {
    EXPECT_LT((d.x.col(2 + j) - (motion.col(j).array() - motion.col(j).mean()).matrix()).cwiseAbs().maxCoeff(), kTol);
  }
  // spm_dctmtx columns: orthonormal, orthogonal to the constant, cosine k at t = 0 is sqrt(2/n) cos(pi k / 2n).
  const Eigen::MatrixXd dct = d.x.middleCols(8, 3);
  EXPECT_LT((dct.transpose() * dct - Eigen::MatrixXd::Identity(3, 3)).cwiseAbs().maxCoeff(), kTol);
  EXPECT_LT(dct.colwise().sum().cwiseAbs().maxCoeff(), kTol);
  EXPECT_NEAR(dct(0, 1), std::sqrt(0.02) * std::cos(M_PI * 2.0 / 200.0), kTol);
  EXPECT_TRUE(d.x.col(11).isOnes(0.0));

  o.drift = DriftModel::kPolynomial;
  o.polynomial_order = 3;
  o.demean_confounds = false;
  o.confound_names.clear();
  const DesignMatrix p = build_design_matrix({event(10, 0, "faces")}, o);
  EXPECT_EQ(p.names()[1], "confound_1");
  EXPECT_LT((p.x.col(1) - motion.col(0)).cwiseAbs().maxCoeff(), kTol);
  const Eigen::Index p1 = *p.find("drift_1");
  EXPECT_NEAR(p.x(0, p1), -1.0, kTol);  // P1 = x from -1 to 1
  EXPECT_NEAR(p.x(99, p1), 1.0, kTol);
  EXPECT_NEAR(p.x(99, p1 + 2), 1.0, kTol);  // P3(1) = 1
  EXPECT_NEAR(p.x(0, p1 + 2), -1.0, kTol);  // P3(-1) = -1
}

TEST(DesignMatrix, ConditionOrderAndEventsOutsideTheRun) {
  DesignOptions o = options(2.0, 30);
  o.conditions = {"houses", "faces"};
  const std::vector<Event> events = {event(4, 0, "faces"), event(8, 0, "houses"), event(12, 0, "cars"),
                                     event(500, 0, "faces"), event(-300, 0, "faces")};
  const DesignMatrix d = build_design_matrix(events, o);
  EXPECT_EQ(d.names(), (std::vector<std::string>{"houses", "faces"}));
  // The events long before and after the run contribute nothing (SPM clips them off the grid).
  const DesignMatrix only = build_design_matrix({event(4, 0, "faces")}, options(2.0, 30));
  EXPECT_LT((d.x.col(1) - only.x.col(0)).cwiseAbs().maxCoeff(), kTol);
  // Default: every trial type, sorted.
  EXPECT_EQ(build_design_matrix(events, options(2.0, 30)).names(),
            (std::vector<std::string>{"cars", "faces", "houses"}));
}

TEST(DesignMatrix, InvalidOptionsAreRejected) {
  const std::vector<Event> events = {event(4, 0, "faces")};
  const auto rejects = [&](auto edit) {
    DesignOptions o = options(2.0, 30);
    edit(o);
    EXPECT_THROW(build_design_matrix(events, o), std::invalid_argument);
  };
  rejects([](DesignOptions& o) { o.tr_s = 0.0; });
  rejects([](DesignOptions& o) { o.tr_s = NAN; });
  rejects([](DesignOptions& o) { o.n_scans = 0; });
  rejects([](DesignOptions& o) { o.microtime_resolution = 0; });
  rejects([](DesignOptions& o) { o.microtime_onset = 0; });
  rejects([](DesignOptions& o) { o.microtime_onset = 17; });
  rejects([](DesignOptions& o) { o.conditions = {"faces", "cars"}; });  // cars has no events
  rejects([](DesignOptions& o) { o.confounds = Eigen::MatrixXd::Ones(29, 2); });
  rejects([](DesignOptions& o) {
    o.confounds = Eigen::MatrixXd::Ones(30, 2);
    o.confound_names = {"a"};
  });
  rejects([](DesignOptions& o) {
    o.confounds = Eigen::MatrixXd::Zero(30, 1);
    o.confounds(3, 0) = NAN;
  });
  rejects([](DesignOptions& o) {
    o.drift = DriftModel::kCosine;
    o.highpass_cutoff_s = -1;
  });
  rejects([](DesignOptions& o) {
    o.drift = DriftModel::kPolynomial;
    o.polynomial_order = 11;
  });
  // A trial type named like a generated column.
  DesignOptions o = options(2.0, 30);
  o.add_constant = true;
  EXPECT_THROW(build_design_matrix({event(4, 0, "constant")}, o), std::invalid_argument);
  // Timing extremes are handled, not crashed on: T0 = T, one scan, T = 1.
  o.microtime_onset = 16;
  EXPECT_NO_THROW(build_design_matrix(events, o));
  EXPECT_EQ(build_design_matrix(events, options(2.0, 1)).x.rows(), 1);
  DesignOptions coarse = options(2.0, 30);
  coarse.microtime_resolution = 1;
  coarse.microtime_onset = 1;
  EXPECT_NO_THROW(build_design_matrix(events, coarse));
}

TEST(Stimulus, GridIndexing) {
  const MicrotimeGrid grid{2.0, 10, 16, 8};
  EXPECT_DOUBLE_EQ(grid.dt_s(), 0.125);
  EXPECT_EQ(grid.bins(), 192);
  // An onset of 1 s is bin 8 + 32; a 0.5 s duration covers 5 bins; a negative onset before the grid starts at bin 0.
  Eigen::MatrixXd u(2, 1);
  u << 2.0, 3.0;
  const Eigen::MatrixXd sf = spm_stimulus_functions({1.0, -10.0}, {0.5, 5.0}, u, grid);
  for (Eigen::Index b = 0; b < sf.rows(); ++b) {
    const double block = b >= 40 && b <= 44 ? 2.0 : 0.0;
    // -10 s is bin -48: clipped to 0; it ends at bin -48 + 40 + 1 = -7, also clipped: nothing left.
    EXPECT_EQ(sf(b, 0), block) << b;
  }
  EXPECT_THROW(spm_stimulus_functions({1.0}, {-1.0}, Eigen::MatrixXd::Ones(1, 1), grid), std::invalid_argument);
  EXPECT_THROW(spm_stimulus_functions({1.0, 2.0}, {0.0}, Eigen::MatrixXd::Ones(2, 1), grid), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
