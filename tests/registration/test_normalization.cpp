// ctest-label: gpu
// ctest-properties: PROCESSORS 2 (PoCL non-linear registrations of whole brains fill every core)
// Normalisation (affine + non-linear, core/registration/normalization.hpp) with known answers: the MNI152 template
// deformed by a random smooth diffeomorphism of up to 8 mm and an affine, stored on a flipped, tilted grid, is
// registered back (displacement error and AAL overlap against the truth); the same on Colin27 from Debian (always
// present); a real T1 (fcon1000) to MNI152 improves the NCC in the template's brain over the affine; the warp is
// invertible (no folded voxel, the inverse's residual small); bad input is refused. Sizes: 2-4 mm templates (PoCL).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/io/data_lookup.hpp"
#include "core/io/nifti_io.hpp"
#include "core/registration/normalization.hpp"
#include "core/registration/resample.hpp"
#include "core/util/quantiles.hpp"
#include "sim/warp_phantom.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

// `image` on a grid of `voxel_mm` voxels covering the same box (smoothed to that resolution first would be kinder;
// trilinear sampling of a 1 mm template at 4 mm is enough for a test image).
Image downsampled(const Image& image, double voxel_mm) {
  ImageHeader g = merged_grid(image.header(), static_cast<int>(std::lround(voxel_mm / image.header().voxel_mm[0])));
  return resample(test::test_device(), image, g, {}, ResampleInterpolation::kLinear);
}

struct KnownWarpOutcome {
  double median_error = 0.0, p95_error = 0.0, dice = 0.0;
  NormalizationResult result;
};

KnownWarpOutcome register_known_warp(const Image& templ, const std::optional<Image>& atlas) {
  Device& device = test::test_device();
  const sim::WarpPhantom phantom =
      sim::make_warp_phantom(device, templ, sim::standard_warp_phantom(templ.header(), 8.0));
  KnownWarpOutcome out;
  out.result = normalize(device, phantom.subject, templ);
  const Quantiles q =
      quantiles(sim::disagreement_in_brain(templ, phantom.template_to_subject(), out.result.template_to_subject()));
  out.median_error = q.median;
  out.p95_error = q.p95;
  if (atlas) {
    const ImageHeader& sg = phantom.subject.header();
    const Image truth = resample(device, *atlas, sg, phantom.subject_to_template(), ResampleInterpolation::kNearest);
    const Image estimate =
        resample(device, *atlas, sg, out.result.subject_to_template(), ResampleInterpolation::kNearest);
    out.dice = sim::label_dice(truth, estimate).first;
  }
  std::printf(
      "known warp: median error %.3f mm, p95 %.3f mm, AAL Dice %.4f; Jacobian %.3f .. %.3f, %lld folded in the "
      "brain; inverse error mean %.4f max %.3f mm\n",
      out.median_error, out.p95_error, out.dice, out.result.jacobian_summary.min, out.result.jacobian_summary.max,
      static_cast<long long>(out.result.jacobian_summary.folded_in_mask), out.result.inverse_error_mean_mm,
      out.result.inverse_error_max_mm);
  return out;
}

void expect_invertible(const NormalizationResult& r) {
  ASSERT_TRUE(r.warp && r.inverse_warp);
  EXPECT_EQ(r.jacobian_summary.folded, 0) << "smallest Jacobian determinant " << r.jacobian_summary.min;
  EXPECT_GT(r.jacobian_summary.min, 0.0);
  // The inverse is exp(-v), the warp exp(v): their composition leaves the discretisation of the two exponentials and
  // of the trilinear fields, hundredths of a millimetre on average.
  EXPECT_LT(r.inverse_error_mean_mm, 0.1);
}

TEST(Normalization, RecoversAKnownWarpOfTheMniTemplate) {
  // The case at 2 mm (the 1 mm case runs on the GPU: bench/bench_normalization --synthetic, performance.md).
  const auto path = test::extra_data("templates/MNI152_T1_2mm_brain.nii.gz");
  if (!path) GTEST_SKIP() << test::missing_extra_data("templates/MNI152_T1_2mm_brain.nii.gz");
  const auto aal = test::installed_data("mricron/aal.nii.gz");
  if (!aal) GTEST_SKIP() << test::missing_installed_data("mricron/aal.nii.gz");
  const KnownWarpOutcome o = register_known_warp(read_nifti(*path), read_nifti(*aal));
  // Bars: the (median < 0.5 mm, mean AAL Dice > 0.9); measured here (PoCL, seed 1): 0.40 mm, 0.945; ANTs SyN
  // (CC) on the same case: 0.32 mm, 0.958 (docs/algorithms/normalization.md).
  EXPECT_LT(o.median_error, 0.5);
  EXPECT_GT(o.dice, 0.9);
  EXPECT_LT(o.p95_error, 2.5);
  expect_invertible(o.result);
}

TEST(Normalization, RecoversAKnownWarpOfColin27) {
  // Debian's Colin27 (always installed by scripts/fetch-data.sh) at 4 mm: a smaller, quicker known answer.
  const auto path = test::installed_data("mricron/ch2bet.nii.gz");
  if (!path) GTEST_SKIP() << test::missing_installed_data("mricron/ch2bet.nii.gz");
  const Image colin = downsampled(read_nifti(*path), 4.0);
  const KnownWarpOutcome o = register_known_warp(colin, std::nullopt);
  // At 4 mm voxels the finest level is 4 mm: a bar of a quarter voxel on the median.
  EXPECT_LT(o.median_error, 1.0);
  expect_invertible(o.result);
}

TEST(Normalization, ImprovesARealT1OverTheAffine) {
  const auto templ = test::extra_data("templates/MNI152_T1_2mm_brain.nii.gz");
  if (!templ) GTEST_SKIP() << test::missing_extra_data("templates/MNI152_T1_2mm_brain.nii.gz");
  const auto t1 = test::extra_data("anat/fcon1000_Beijing_sub00440_T1_brain.nii.gz");
  if (!t1) GTEST_SKIP() << test::missing_extra_data("anat/fcon1000_Beijing_sub00440_T1_brain.nii.gz");
  Device& device = test::test_device();
  const Image t = read_nifti(*templ), subject = read_nifti(*t1);
  const NormalizationResult r = normalize(device, subject, t);
  std::vector<float> brain(t.data().size());
  for (size_t i = 0; i < brain.size(); ++i) brain[i] = t.data()[i] > 0.0f ? 1.0f : 0.0f;
  const Image affine = resample(device, subject, t.header(), {r.affine}, ResampleInterpolation::kLinear);
  const Image warped = resample(device, subject, t.header(), r.template_to_subject(), ResampleInterpolation::kLinear);
  const double before = masked_ncc(affine.data(), t.data(), brain), after = masked_ncc(warped.data(), t.data(), brain);
  std::printf("fcon1000 Beijing sub00440 -> MNI152 2 mm: NCC in the brain %.4f (affine) -> %.4f\n", before, after);
  // Measured (PoCL): 0.646 -> 0.80; the bar asks for a clear gain, not the exact figure.
  EXPECT_GT(after, before + 0.05);
  expect_invertible(r);
  // Affine only: no warp, the same affine.
  NormalizationOptions affine_only;
  affine_only.nonlinear = false;
  const NormalizationResult a = normalize(device, subject, t, affine_only);
  EXPECT_FALSE(a.warp);
  EXPECT_EQ(a.template_to_subject().size(), 1u);
  EXPECT_LT((a.affine - r.affine).cwiseAbs().maxCoeff(), 1e-9);
}

TEST(Normalization, RefusesBadInput) {
  Device& device = test::test_device();
  ImageHeader h;
  h.dims = {12, 12, 12};
  h.voxel_mm = {4.0, 4.0, 4.0};
  h.affine = Eigen::Vector4d(4.0, 4.0, 4.0, 1.0).asDiagonal();
  Image blob(h);
  for (int64_t z = 3; z < 9; ++z) {
    for (int64_t y = 3; y < 9; ++y) {
      for (int64_t x = 3; x < 9; ++x) blob.at(x, y, z) = static_cast<float>(1 + x + 2 * y + 3 * z);
    }
  }
  ImageHeader h4 = h;
  h4.num_volumes = 2;
  EXPECT_THROW(normalize(device, Image(h4), blob), std::invalid_argument);  // 4D subject
  EXPECT_THROW(normalize(device, Image(h), blob), std::invalid_argument);   // empty (constant) subject
  Image singular = blob;
  singular.header().affine(2, 2) = 0.0;
  EXPECT_THROW(normalize(device, singular, blob), std::invalid_argument);
  NormalizationOptions bad;
  bad.warp.levels.clear();
  EXPECT_THROW(normalize(device, blob, blob, bad), std::invalid_argument);
  EXPECT_THROW(resolve_template("/nonexistent/template.nii.gz", {}), std::runtime_error);
  EXPECT_THROW(parse_nonlinear_levels("8:40,4"), std::invalid_argument);
  EXPECT_THROW(parse_nonlinear_levels("0:10"), std::invalid_argument);
  EXPECT_THROW(parse_nonlinear_levels("4:10:-1"), std::invalid_argument);
}

TEST(Normalization, ParsesLevelsAndMergesGrids) {
  const auto levels = parse_nonlinear_levels("8:40,4:30:2.5,2:0");
  ASSERT_EQ(levels.size(), 3u);
  EXPECT_EQ(levels[0].spacing_mm, 8.0);
  EXPECT_EQ(levels[0].iterations, 40);
  EXPECT_LT(levels[0].image_fwhm_mm, 0.0);  // default: the spacing
  EXPECT_EQ(levels[1].image_fwhm_mm, 2.5);
  EXPECT_EQ(levels[2].iterations, 0);
  // A merged grid keeps the world box: voxel i's centre is the centre of fixed voxels f i .. f i + f - 1.
  ImageHeader g;
  g.dims = {91, 109, 91};
  g.voxel_mm = {2.0, 2.0, 2.0};
  g.affine << -2, 0, 0, 90, 0, 2, 0, -126, 0, 0, 2, -72, 0, 0, 0, 1;
  const ImageHeader m = merged_grid(g, 4);
  EXPECT_EQ(m.dims, (std::array<int64_t, 3>{23, 28, 23}));
  EXPECT_EQ(m.voxel_mm[1], 8.0);
  const Eigen::Vector4d centre = m.affine * Eigen::Vector4d(1, 2, 3, 1);
  const Eigen::Vector4d expected = g.affine * Eigen::Vector4d(4 * 1 + 1.5, 4 * 2 + 1.5, 4 * 3 + 1.5, 1);
  EXPECT_LT((centre - expected).norm(), 1e-12);
  EXPECT_TRUE(merged_grid(g, 1).same_grid(g));
}

}  // namespace
}  // namespace rtf
