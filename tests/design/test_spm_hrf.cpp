// SPM canonical HRF: shape (zero at 0, peak near 5 s, undershoot near 15 s), unit sum, length, and agreement with
// the gamma-density formula written out independently with std::tgamma.
// ctest-label: unit
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/design/spm_hrf.hpp"

namespace rtf {
namespace {

TEST(SpmHrf, ShapeAtFineResolution) {
  const double dt = 0.01;
  const auto h = spm_hrf(dt);
  ASSERT_EQ(h.size(), 3201u);  // 0 .. 32 s inclusive
  EXPECT_EQ(h[0], 0.0);
  EXPECT_NEAR(std::accumulate(h.begin(), h.end(), 0.0), 1.0, 1e-12);
  const auto peak = std::max_element(h.begin(), h.end()) - h.begin();
  const auto trough = std::min_element(h.begin(), h.end()) - h.begin();
  EXPECT_NEAR(static_cast<double>(peak) * dt, 5.0, 0.25);
  EXPECT_NEAR(static_cast<double>(trough) * dt, 15.0, 1.0);
  EXPECT_LT(h[static_cast<size_t>(trough)], 0.0);
  // Positive response first, then the undershoot: one sign change between 5 and 15 s.
  int changes = 0;
  for (size_t i = 2; i < h.size(); ++i) changes += (h[i] < 0) != (h[i - 1] < 0);
  EXPECT_EQ(changes, 1);
}

TEST(SpmHrf, MatchesTheGammaDifferenceFormula) {
  for (double dt : {0.1, 0.125, 0.5, 2.0, 2.5}) {
    const auto h = spm_hrf(dt);
    ASSERT_EQ(h.size(), static_cast<size_t>(std::floor(32.0 / dt + 1e-9)) + 1);
    std::vector<double> ref(h.size());
    for (size_t k = 0; k < ref.size(); ++k) {
      const double t = static_cast<double>(k) * dt;
      ref[k] = t <= 0 ? 0.0
                      : std::pow(t, 5) * std::exp(-t) / std::tgamma(6.0) -
                            std::pow(t, 15) * std::exp(-t) / std::tgamma(16.0) / 6.0;
    }
    const double sum = std::accumulate(ref.begin(), ref.end(), 0.0);
    for (size_t k = 0; k < ref.size(); ++k) EXPECT_NEAR(h[k], ref[k] / sum, 1e-12) << "dt " << dt << ", sample " << k;
  }
}

TEST(SpmHrf, ParametersAndErrors) {
  SpmHrfParams late;
  late.onset_s = 2.0;
  const auto shifted = spm_hrf(0.5, late);
  const auto base = spm_hrf(0.5);
  EXPECT_EQ(shifted[4], 0.0);  // t = 2 s = onset
  EXPECT_GT(std::max_element(shifted.begin(), shifted.end()) - shifted.begin(),
            std::max_element(base.begin(), base.end()) - base.begin());
  EXPECT_THROW(spm_hrf(0.0), std::invalid_argument);
  EXPECT_THROW(spm_hrf(-1.0), std::invalid_argument);
  SpmHrfParams bad;
  bad.response_dispersion = 0.0;
  EXPECT_THROW(spm_hrf(0.1, bad), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
