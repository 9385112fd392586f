// The phantom's parts without a template: k-means and tissue fractions, block and event designs and their
// regressors, events.tsv parsing, regions, motion trajectories and motion files, noise calibration, random numbers,
// parameter validation and the missing-template error.
// ctest-label: unit
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <numbers>
#include <numeric>
#include <random>

#include "core/io/data_lookup.hpp"
#include "core/motion/motion_files.hpp"
#include "sim/phantom/activation.hpp"
#include "sim/phantom/design.hpp"
#include "sim/phantom/ground_truth_writers.hpp"
#include "sim/phantom/motion_trajectory.hpp"
#include "sim/phantom/noise_model.hpp"
#include "sim/phantom/phantom.hpp"
#include "sim/phantom/random.hpp"
#include "sim/phantom/tissue_model.hpp"

namespace rtf::sim {
namespace {

TEST(PhantomTissue, KMeansFindsThreeClusters) {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> csf(40, 4), gm(90, 5), wm(130, 5);
  std::vector<float> v;
  for (int i = 0; i < 3000; ++i) v.push_back(csf(rng));
  for (int i = 0; i < 9000; ++i) v.push_back(gm(rng));
  for (int i = 0; i < 8000; ++i) v.push_back(wm(rng));
  const auto c = kmeans3(v);
  EXPECT_NEAR(c[0], 40, 1.5);
  EXPECT_NEAR(c[1], 90, 1.5);
  EXPECT_NEAR(c[2], 130, 1.5);
  EXPECT_THROW(kmeans3(std::vector<float>(10, 5.0f)), std::invalid_argument);
}

TEST(PhantomTissue, FractionsArePartitionsAndPickTheNearestCentre) {
  const std::array<double, 3> c{40, 90, 130};
  for (double t1 = 0; t1 < 200; t1 += 0.7) {
    const auto f = tissue_fractions(t1, c);
    EXPECT_NEAR(f[0] + f[1] + f[2], 1.0, 1e-6);
    int nearest = 0;
    for (int k = 1; k < 3; ++k) {
      if (std::abs(t1 - c[static_cast<size_t>(k)]) < std::abs(t1 - c[static_cast<size_t>(nearest)])) nearest = k;
    }
    EXPECT_EQ(std::max_element(f.begin(), f.end()) - f.begin(), nearest) << "t1 " << t1;
  }
  EXPECT_EQ(tissue_fractions(90, c)[kGm], 1.0f);
  EXPECT_FLOAT_EQ(tissue_fractions(65, c)[kGm], 0.5f);
}

TEST(PhantomDesign, BlockEventsStartWithRest) {
  const auto e = block_events(20, 10, 100);
  ASSERT_EQ(e.size(), 3u);  // onsets 10, 40, 70; 100 is outside the run
  EXPECT_EQ(e[0].onset_s, 10);
  EXPECT_EQ(e[2].onset_s, 70);
  EXPECT_EQ(e[1].duration_s, 20);
  EXPECT_EQ(e[0].trial_type, "task");
}

TEST(PhantomDesign, BlockRegressorIsHrfShapedWithPeakOne) {
  const Design d(block_events(30, 30, 240), 120, 2.0, 16);
  ASSERT_EQ(d.conditions().size(), 1u);
  EXPECT_DOUBLE_EQ(d.microtime_s(), 0.125);
  const auto x = d.sampled();
  ASSERT_EQ(x.size(), 120u);
  double peak = 0;
  for (const auto& row : x) peak = std::max(peak, row[0]);
  EXPECT_LE(peak, 1.0 + 1e-12);
  EXPECT_GT(peak, 0.99);
  for (int t = 0; t < 15; ++t) EXPECT_EQ(x[static_cast<size_t>(t)][0], 0.0) << t;  // rest until 30 s
  // A 30 s block nearly reaches the plateau; the HRF's delay puts the rise ~2-6 s after onset.
  EXPECT_LT(d.value(0, 31.0), 0.05);
  EXPECT_GT(d.value(0, 45.0), 0.95);
  EXPECT_GT(d.value(0, 62.0), 0.5);  // still high 2 s after the block ends
  EXPECT_LT(d.value(0, 80.0), 0.0);  // undershoot
  // A sustained block of height 1 would plateau at the HRF's sum, 1; the step response overshoots that by ~14%
  // (its running sum peaks where the HRF turns negative), so the regressor is divided by ~1.144.
  EXPECT_NEAR(d.peak(0), 1.144, 0.005);
}

TEST(PhantomDesign, EventsAreSticksOrBoxcarsPerCondition) {
  const std::vector<Event> events{{10, 0, "a"}, {30, 2, "b"}, {50, 0, "a"}, {70, 2, "b"}};
  const Design d(events, 50, 2.0, 16);
  ASSERT_EQ(d.conditions(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(d.condition_index("b"), 1);
  EXPECT_EQ(d.condition_index("c"), -1);
  // Condition a peaks ~5 s after each stick, b ~6 s after each 2 s boxcar.
  double best_t = 0, best = -1;
  for (double t = 10; t < 25; t += 0.125) {
    if (d.value(0, t) > best) best = d.value(0, t), best_t = t;
  }
  EXPECT_NEAR(best_t, 15.0, 0.5);
  EXPECT_NEAR(best, 1.0, 1e-9);
  EXPECT_EQ(d.value(1, 29.0), 0.0);
  EXPECT_NEAR(d.value(0, 55.0), d.value(0, 15.0), 1e-9);  // same response to the same stick
}

TEST(PhantomDesign, EventsTsvParsing) {
  const auto e = parse_events_tsv("trial_type\tonset\tduration\textra\nleft\t1.5\t2\tx\nright\t4\tn/a\ty\n\n");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].trial_type, "left");
  EXPECT_EQ(e[0].onset_s, 1.5);
  EXPECT_EQ(e[1].duration_s, 0.0);
  const auto plain = parse_events_tsv("onset\tduration\n0\t1\n");
  EXPECT_EQ(plain[0].trial_type, "task");
  EXPECT_THROW(parse_events_tsv("onset\ttrial_type\n1\ta\n"), std::invalid_argument);  // no duration
  EXPECT_THROW(parse_events_tsv("onset\tduration\nx\t1\n"), std::invalid_argument);
  EXPECT_THROW(parse_events_tsv("onset\tduration\n1\t-2\n"), std::invalid_argument);
  EXPECT_THROW(parse_events_tsv("onset\tduration\n"), std::invalid_argument);
  EXPECT_THROW(parse_events_tsv("onset\tduration\n1\n"), std::invalid_argument);
  // What events_tsv writes parses back.
  const std::vector<Event> written{{2.5, 1, "a"}, {7, 0, "b"}};
  const auto back = parse_events_tsv(events_tsv(written));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].trial_type, "b");
  EXPECT_EQ(back[0].onset_s, 2.5);
}

TEST(PhantomRegions, ParseAndResolve) {
  const auto r = parse_region("-38,-24,56,8");
  EXPECT_EQ(r.centre_mm, (std::array<double, 3>{-38, -24, 56}));
  EXPECT_EQ(r.radius_mm, 8);
  EXPECT_TRUE(r.trial_type.empty());
  const auto typed = parse_region("1,2,3,4,left,3.5");
  EXPECT_EQ(typed.trial_type, "left");
  EXPECT_EQ(typed.psc, 3.5);
  EXPECT_THROW(parse_region("1,2,3"), std::invalid_argument);
  EXPECT_THROW(parse_region("1,2,3,x"), std::invalid_argument);
  EXPECT_THROW(parse_region("1,2,3,0"), std::invalid_argument);
  const Design d({{0, 1, "left"}, {5, 1, "right"}}, 10, 2.0, 4);
  const auto resolved = resolve_regions({r, typed}, d, 2.0);
  EXPECT_EQ(resolved[0].conditions, (std::vector<int>{0, 1}));
  EXPECT_EQ(resolved[0].psc, 2.0);
  EXPECT_EQ(resolved[1].conditions, (std::vector<int>{0}));
  EXPECT_EQ(resolved[1].psc, 3.5);
  EXPECT_TRUE(resolved[1].contains({1, 2, 7}));
  EXPECT_FALSE(resolved[1].contains({1, 2, 7.01}));
  EXPECT_THROW(resolve_regions({parse_region("0,0,0,5,up")}, d, 2.0), std::invalid_argument);
}

TEST(PhantomMotion, GeneratedTrajectoriesAreBoundedAndStartAtRest) {
  for (MotionKind kind : {MotionKind::kDrift, MotionKind::kRealistic}) {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      const auto m = make_motion(kind, 150, 2.0, 1.5, 1.2, seed);
      ASSERT_EQ(m.size(), 150u);
      for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(m[0].translation_mm[i], 0.0);
        EXPECT_EQ(m[0].rotation_deg[i], 0.0);
      }
      double peak_t = 0, peak_r = 0;
      for (const auto& p : m) {
        for (size_t i = 0; i < 3; ++i) {
          peak_t = std::max(peak_t, std::abs(p.translation_mm[i]));
          peak_r = std::max(peak_r, std::abs(p.rotation_deg[i]));
        }
      }
      EXPECT_LE(peak_t, 1.5 + 1e-12);
      EXPECT_LE(peak_r, 1.2 + 1e-12);
      EXPECT_GT(peak_t, 0.1);  // it does move
    }
  }
  const auto none = make_motion(MotionKind::kNone, 10, 2.0, 1.5, 1.5, 1);
  for (const auto& p : none) EXPECT_EQ(framewise_displacement(RigidParams{}, p), 0.0);
  // Same seed, same trajectory; realistic motion has abrupt movements that drift lacks.
  const auto a = make_motion(MotionKind::kRealistic, 200, 2.0, 1.5, 1.5, 9);
  const auto b = make_motion(MotionKind::kRealistic, 200, 2.0, 1.5, 1.5, 9);
  const auto drift = make_motion(MotionKind::kDrift, 200, 2.0, 1.5, 1.5, 9);
  double max_fd_a = 0, max_fd_drift = 0;
  for (size_t t = 1; t < a.size(); ++t) {
    EXPECT_EQ(a[t].translation_mm, b[t].translation_mm);
    max_fd_a = std::max(max_fd_a, framewise_displacement(a[t - 1], a[t]));
    max_fd_drift = std::max(max_fd_drift, framewise_displacement(drift[t - 1], drift[t]));
  }
  EXPECT_GT(max_fd_a, 0.3);
  EXPECT_LT(max_fd_drift, 0.2);
}

TEST(PhantomMotion, MotionFilesRoundTrip) {
  const auto m = make_motion(MotionKind::kRealistic, 30, 2.0, 1.5, 1.5, 3);
  const auto tsv = parse_motion_tsv(motion_tsv(m));
  const auto par = parse_fsl_par(motion_par(m));
  ASSERT_EQ(tsv.size(), m.size());
  ASSERT_EQ(par.size(), m.size());
  for (size_t t = 0; t < m.size(); ++t) {
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_NEAR(tsv[t].translation_mm[i], m[t].translation_mm[i], 1e-6);
      EXPECT_NEAR(tsv[t].rotation_deg[i], m[t].rotation_deg[i], 1e-6);
      EXPECT_NEAR(par[t].translation_mm[i], m[t].translation_mm[i], 1e-6);
      EXPECT_NEAR(par[t].rotation_deg[i], m[t].rotation_deg[i], 1e-5);  // 1e-8 rad
    }
  }
  EXPECT_THROW(parse_motion_tsv("volume\ttrans_x_mm\n0\t1\n"), std::invalid_argument);
  EXPECT_THROW(parse_fsl_par("0 0 0 0 0\n"), std::invalid_argument);
  EXPECT_THROW(parse_fsl_par("0 0 0 0 0 zero\n"), std::invalid_argument);
}

TEST(PhantomNoise, LevelsAndCalibration) {
  PhantomSpec s;
  s.tsnr = 50;
  s.physio_share = 0.36;
  const NoiseLevels n = noise_levels(s);
  EXPECT_NEAR(n.thermal_sd, 0.8 * 10000 / 50, 1e-9);
  // Pure grey matter: physiological variance a^2 W^2 = 0.36 (B / tSNR)^2 with W = B * weight_GM.
  EXPECT_NEAR(n.physio_amplitude * 10000 * s.physio_weight[kGm], 0.6 * 10000 / 50, 1e-9);
  // Calibration on pure GM voxels changes nothing; on weaker voxels it lowers the noise until their median
  // predicted tSNR is the target.
  const auto same = calibrate_noise(n, std::vector<float>(5, 10000.f), std::vector<float>(5, 10000.f), 50);
  EXPECT_NEAR(same.calibration, 1.0, 1e-6);
  const std::vector<float> base{9000, 9500, 8000, 9900, 7000}, weight{9000, 12000, 8000, 9900, 7000};
  const auto lower = calibrate_noise(n, base, weight, 50);
  EXPECT_LT(lower.calibration, 1.0);
  EXPECT_NEAR(lower.thermal_sd / n.thermal_sd, lower.calibration, 1e-12);
  EXPECT_NEAR(lower.physio_amplitude / n.physio_amplitude, lower.calibration, 1e-12);
  std::vector<double> predicted;
  for (size_t i = 0; i < base.size(); ++i) {
    predicted.push_back(base[i] / std::hypot(lower.thermal_sd, lower.physio_amplitude * weight[i]));
  }
  std::sort(predicted.begin(), predicted.end());
  EXPECT_NEAR(predicted[2], 50.0, 1e-3);
  s.tsnr = 0;
  EXPECT_EQ(noise_levels(s).thermal_sd, 0.0);
  EXPECT_EQ(noise_levels(s).physio_amplitude, 0.0);
}

TEST(PhantomNoise, DriftShapeAndRhythm) {
  EXPECT_EQ(drift_shape(0, 100), 0.0);
  double peak = 0;
  for (double t = 0; t <= 100; t += 0.01) peak = std::max(peak, drift_shape(t, 100));
  EXPECT_NEAR(peak, 1.0, 1e-6);
  Rng rng(1, 99);
  const PhysioRhythm heart(1.1, 0.05, rng);
  // Mean rate over a long time is the nominal rate (the variation integrates to a bounded wander).
  EXPECT_NEAR((heart.phase(1000.0) - heart.phase(0.0)) / (2 * std::numbers::pi * 1000.0), 1.1, 0.01);
}

TEST(PhantomRandom, ReproducibleAndNormal) {
  Rng a(5, kStreamThermal, 3), b(5, kStreamThermal, 3), c(5, kStreamThermal, 4);
  double sum = 0, sum2 = 0;
  bool differs = false;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double x = a.normal();
    EXPECT_EQ(x, b.normal());
    differs = differs || x != c.normal();
    sum += x;
    sum2 += x * x;
  }
  EXPECT_TRUE(differs);
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sum2 / n, 1.0, 0.01);
}

TEST(PhantomSpecs, ValidationNamesTheParameter) {
  PhantomSpec s;
  EXPECT_NO_THROW(validate(s));
  auto bad = [](auto change) {
    PhantomSpec x;
    change(x);
    return x;
  };
  EXPECT_THROW(validate(bad([](PhantomSpec& x) { x.grid[1] = 0; })), std::invalid_argument);
  EXPECT_THROW(validate(bad([](PhantomSpec& x) { x.tr_s = -1; })), std::invalid_argument);
  EXPECT_THROW(validate(bad([](PhantomSpec& x) { x.slice_order = "sideways"; })), std::invalid_argument);
  EXPECT_THROW(validate(bad([](PhantomSpec& x) { x.tsnr = -3; })), std::invalid_argument);
  EXPECT_THROW(validate(bad([](PhantomSpec& x) { x.design = "events"; })), std::invalid_argument);
  EXPECT_THROW(validate(bad([](PhantomSpec& x) { x.motion_override.resize(3); })), std::invalid_argument);
  EXPECT_THROW(parse_motion_kind("wobbly"), std::invalid_argument);
}

TEST(PhantomTemplate, MissingTemplateGivesAClearError) {
  PhantomSpec s;
  s.template_path = "/nonexistent/ch2bet.nii.gz";
  try {
    make_phantom(s);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("/nonexistent/ch2bet.nii.gz"), std::string::npos) << what;
    EXPECT_NE(what.find("scripts/fetch-data.sh"), std::string::npos) << what;
  }
  ::setenv("RTFMRI_DATA_DIR", "/nonexistent-data", 1);
  try {
    find_installed_data("mricron/not-a-template.nii.gz", "/nonexistent-bin");
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("/nonexistent-data/mricron/not-a-template.nii.gz"), std::string::npos) << what;
    EXPECT_NE(what.find("scripts/fetch-data.sh"), std::string::npos) << what;
  }
  ::unsetenv("RTFMRI_DATA_DIR");
  const auto paths = data_search_paths("mricron/ch2bet.nii.gz", "/opt/rtfmri/bin");
  ASSERT_GE(paths.size(), 2u);
  EXPECT_EQ(paths[0], std::filesystem::path("/opt/rtfmri/data/mricron/ch2bet.nii.gz"));
  EXPECT_EQ(paths.back(), std::filesystem::path("/usr/share/mricron/templates/ch2bet.nii.gz"));
}

}  // namespace
}  // namespace rtf::sim
