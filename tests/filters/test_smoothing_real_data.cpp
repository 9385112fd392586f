// Smoothing and brain mask on real BOLD (nitime's fmri1: 10x10x18x40, 2.08x2.08x2.3 mm, int16 from a
// scanner), device against the double-precision references, with and without a mask.
// ctest-label: gpu
#include <gtest/gtest.h>

#include "core/filters/gaussian_smoothing.hpp"
#include "core/filters/gaussian_taps.hpp"
#include "core/io/nifti_io.hpp"
#include "core/mask/brain_mask.hpp"
#include "core/reference/brain_mask_reference.hpp"
#include "core/reference/smoothing_reference.hpp"
#include "tests/support/compare.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

constexpr const char* kBold = "nitime/fmri1.nii.gz";

double max_abs(const Image& image) {
  double m = 0.0;
  for (float v : image.data()) m = std::max(m, static_cast<double>(std::abs(v)));
  return m;
}

TEST(SmoothingRealData, NitimeBoldMatchesReference) {
  const auto path = test::installed_data(kBold);
  if (!path) GTEST_SKIP() << test::missing_installed_data(kBold);
  const Image bold = read_nifti(*path);
  const auto& h = bold.header();
  // Tolerance: 2e-6 of the data's largest magnitude (float32 sums of ~10^3 positive-weighted terms).
  const double tolerance = 2e-6 * max_abs(bold);
  for (SmoothingPath path_choice : {SmoothingPath::kSeparablePasses, SmoothingPath::kFused}) {
    GaussianSmoother smoother(test::test_device(), h.dims, h.voxel_mm,
                              {.fwhm_mm = 5.0, .truncate_sigmas = 4.0, .path = path_choice}, std::nullopt, 8);
    const Image out = smoother.smooth(bold);
    for (int64_t t : {int64_t{0}, int64_t{17}, bold.nt() - 1}) {
      const auto ref = reference::smooth_volume(bold.volume(t), h.dims, smoother.taps());
      const auto d = test::compare(out.volume(t), ref);
      EXPECT_EQ(d.non_finite, 0);
      EXPECT_LT(d.max_abs, tolerance) << "volume " << t << ": " << test::describe(d);
    }
  }
}

TEST(SmoothingRealData, NitimeMaskAndMaskedSmoothingMatchReference) {
  const auto path = test::installed_data(kBold);
  if (!path) GTEST_SKIP() << test::missing_installed_data(kBold);
  const Image bold = read_nifti(*path);
  const auto& h = bold.header();
  const BrainMask mask = compute_brain_mask(test::test_device(), bold, {.fwhm_mm = 4.0, .fraction = 0.9, .volume = 0});
  std::array<std::vector<double>, 3> taps;
  for (int a = 0; a < 3; ++a) taps[a] = gaussian_taps(fwhm_to_sigma(4.0) / h.voxel_mm[a], 4.0);
  const auto ref_mask = reference::brain_mask(bold.extract_volume(0), taps, 0.9);
  int64_t disagreements = 0;
  for (size_t i = 0; i < ref_mask.inside.size(); ++i) {
    if (std::abs(ref_mask.smoothed[i] - ref_mask.threshold) > 1e-4 * ref_mask.threshold) {
      disagreements += mask.inside[i] != ref_mask.inside[i];
    }
  }
  EXPECT_EQ(disagreements, 0);
  ASSERT_GT(mask.count, 0);

  GaussianSmoother smoother(test::test_device(), h.dims, h.voxel_mm, {.fwhm_mm = 6.0, .truncate_sigmas = 4.0},
                            std::span<const uint8_t>(mask.inside), 4);
  const Image out = smoother.smooth(bold);
  const double tolerance = 2e-6 * max_abs(bold);
  for (int64_t t : {int64_t{0}, bold.nt() - 1}) {
    const auto ref =
        reference::smooth_volume(bold.volume(t), h.dims, smoother.taps(), std::span<const uint8_t>(mask.inside));
    const auto d = test::compare(out.volume(t), ref);
    EXPECT_EQ(d.non_finite, 0);
    EXPECT_LT(d.max_abs, tolerance) << "volume " << t << ": " << test::describe(d);
  }
}

}  // namespace
}  // namespace rtf
