// ctest-label: gpu
// ctest-properties: PROCESSORS 2  (registration and normalisation on PoCL fill both cores)
// Subject-space ROIs (SubjectSpaceSetup, core/registration/subject_space): known answers. The EPI is a Colin27 phantom
// whose affine is moved away from MNI by a known rigid transform R (so it lies in "scanner space": the truth maps an
// EPI world point p to the template point R^-1 p); the T1 is Colin27 at 2 mm moved by another known transform. The
// set-up registers the EPI to the T1 (rigid, MI), the T1 to the template (affine + non-linear, or a precomputed
// result), or the EPI to the template directly (no T1), then pulls AAL and a template-space sphere onto the EPI grid.
// Checked against AAL resampled through the truth: labels at voxels away from region boundaries, Dice per region, and
// the sphere voxel by voxel outside a band of the registration's tolerance. Bad inputs give clear errors.
// Known answers on PoCL (2 cores, 2026-11-25): printed by each test.
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <Eigen/LU>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "core/connectivity/atlas.hpp"
#include "core/io/nifti_io.hpp"
#include "core/registration/itk_transform.hpp"
#include "core/registration/resample.hpp"
#include "core/registration/subject_space.hpp"
#include "sim/phantom/phantom.hpp"
#include "stream/pipeline/live_outputs.hpp"
#include "stream/pipeline/live_stage.hpp"
#include "stream/pipeline/subject_space_setup.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/registration_fixtures.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_device.hpp"

namespace rtf::stream {
namespace {

// The feedback ROI of the tests: left M1, in template mm.
const Eigen::Vector3d kSphereCentre(-38.0, -24.0, 56.0);
constexpr double kSphereRadius = 10.0;

Eigen::Matrix4d rigid(double degrees, const Eigen::Vector3d& axis, const Eigen::Vector3d& translation) {
  Eigen::Matrix4d m = Eigen::Matrix4d::Identity();
  m.topLeftCorner<3, 3>() = test::rotation_about(degrees * M_PI / 180.0, axis);
  m.topRightCorner<3, 1>() = translation;
  return m;
}

// The EPI's scanner placement: world (scanner) = R * template.
const Eigen::Matrix4d kEpiMove = rigid(7.0, {0.3, 1.0, 0.2}, {12.0, -18.0, 25.0});
// The T1's: its world = S * template.
const Eigen::Matrix4d kT1Move = rigid(9.0, {1.0, -0.4, 0.5}, {-22.0, 14.0, 31.0});

// A 4 mm Colin27 phantom on a 40x48x30 grid (in MNI space).
sim::PhantomSpec small_phantom(int64_t volumes) {
  sim::PhantomSpec spec;
  spec.template_path = *test::installed_data("mricron/ch2bet.nii.gz");
  spec.grid = {40, 48, 30};
  spec.voxel_mm = {4.0, 4.0, 4.0};
  spec.volumes = volumes;
  spec.tr_s = 1.0;
  return spec;
}

// An 8x8x8 image of three volumes: not a T1.
std::filesystem::path write_4d_image(const std::filesystem::path& path) {
  ImageHeader h;
  h.dims = {8, 8, 8};
  h.num_volumes = 3;
  write_nifti(path, Image(h, 1.0f));
  return path;
}

struct Data {
  std::filesystem::path template_2mm, t1;  // files in the temp dir
  Image template_image;
  Image epi;  // volume 0 of a phantom, its affine moved by kEpiMove
};

// Colin27 on a 2 mm MNI grid (the template), the same image moved by kT1Move (the T1), and a 4 mm phantom EPI.
Data make_data(const std::filesystem::path& dir) {
  Data d;
  const Image colin = read_nifti(*test::installed_data("mricron/ch2bet.nii.gz"));
  ImageHeader grid;
  grid.dims = {91, 109, 91};
  grid.voxel_mm = {2.0, 2.0, 2.0};
  grid.affine << 2, 0, 0, -90, 0, 2, 0, -126, 0, 0, 2, -72, 0, 0, 0, 1;
  grid.xform_code = 4;
  d.template_image = resample(test::test_device(), colin, grid, {}, ResampleInterpolation::kLinear);
  d.template_2mm = dir / "colin27_2mm.nii.gz";
  write_nifti(d.template_2mm, d.template_image);
  Image t1 = d.template_image;
  t1.header().affine = kT1Move * t1.header().affine;
  t1.header().xform_code = 1;
  d.t1 = dir / "t1.nii.gz";
  write_nifti(d.t1, t1);
  sim::PhantomSpec spec = small_phantom(1);
  spec.motion = sim::MotionKind::kNone;
  spec.seed = 11;
  d.epi = sim::make_phantom(spec).bold.extract_volume(0);
  d.epi.header().affine = kEpiMove * d.epi.header().affine;
  return d;
}

PipelineConfig base_config(const std::filesystem::path& session) {
  PipelineConfig c;
  c.session_dir = session.string();
  c.data_dir = test::installed_data_dir();
  c.atlas = "aal";
  RoiSpec m1;
  m1.name = "M1_L";
  m1.sphere_mm = std::array<double, 3>{kSphereCentre[0], kSphereCentre[1], kSphereCentre[2]};
  m1.radius_mm = kSphereRadius;
  c.feedback_rois = {m1};
  c.normalization_levels = "8:10,4:10";  // a short non-linear step (the T1 is the template, moved)
  return c;
}

std::shared_ptr<const SubjectSpaceResult> set_up(const PipelineConfig& config, const Image& epi,
                                                 const std::filesystem::path& run_dir) {
  SubjectSpaceSetup setup(test::test_device(), config, config.session_dir);
  setup.request("run-01", epi, 0, run_dir);
  return setup.wait("run-01");
}

// Compares the set-up's ROIs with the truth: AAL and the sphere pulled through `epi_to_template`.
void expect_matches_truth(const SubjectSpaceResult& result, const ImageHeader& grid,
                          const Eigen::Matrix4d& epi_to_template, const char* what) {
  ASSERT_TRUE(result.failure.empty()) << result.failure;
  const PlacedRois& rois = result.rois;
  ASSERT_TRUE(rois.atlas.has_value()) << rois.atlas_error;
  const LabelAtlas aal = read_aal(test::installed_data_dir());
  const Image truth = resample_labels_nearest(aal.labels, grid, epi_to_template);
  const std::vector<float>& got = rois.atlas_labels.data();
  ASSERT_EQ(got.size(), truth.data().size());
  // Labels away from the boundaries: the truth's label and its six neighbours' agree.
  int64_t interior = 0, agree = 0;
  const auto [nx, ny, nz] = grid.dims;
  for (int64_t z = 1; z + 1 < nz; ++z) {
    for (int64_t y = 1; y + 1 < ny; ++y) {
      for (int64_t x = 1; x + 1 < nx; ++x) {
        const float l = truth.at(x, y, z);
        if (l <= 0.0f || truth.at(x - 1, y, z) != l || truth.at(x + 1, y, z) != l || truth.at(x, y - 1, z) != l ||
            truth.at(x, y + 1, z) != l || truth.at(x, y, z - 1) != l || truth.at(x, y, z + 1) != l) {
          continue;
        }
        ++interior;
        if (got[static_cast<size_t>(x + nx * (y + ny * z))] == l) ++agree;
      }
    }
  }
  // Dice per region (regions with at least 20 voxels in the truth).
  std::map<int32_t, std::array<int64_t, 3>> counts;  // truth, got, both
  for (size_t v = 0; v < got.size(); ++v) {
    const auto t = static_cast<int32_t>(truth.data()[v]), g = static_cast<int32_t>(got[v]);
    if (t > 0) ++counts[t][0];
    if (g > 0) ++counts[g][1];
    if (t > 0 && t == g) ++counts[t][2];
  }
  double dice_sum = 0.0, dice_min = 1.0;
  int regions = 0;
  for (const auto& [label, c] : counts) {
    if (c[0] < 20) continue;
    const double dice = 2.0 * static_cast<double>(c[2]) / static_cast<double>(c[0] + c[1]);
    dice_sum += dice;
    dice_min = std::min(dice_min, dice);
    ++regions;
  }
  ASSERT_GT(interior, 1000);
  ASSERT_GT(regions, 50);
  const double interior_agreement = static_cast<double>(agree) / static_cast<double>(interior);
  // The sphere, exactly: voxels whose true template position is within r - 2 mm must be in it, beyond r + 2 mm out
  // (2 mm: the band the registration's error may move across; a 4 mm voxel's centre moves by the error, not more).
  ASSERT_EQ(rois.feedback.size(), 1u) << rois.feedback_error;
  std::vector<uint8_t> in(got.size(), 0);
  for (int32_t v : rois.feedback[0]) in[static_cast<size_t>(v)] = 1;
  int64_t inner = 0, inner_missing = 0, outer_wrong = 0;
  for (int64_t v = 0; v < static_cast<int64_t>(got.size()); ++v) {
    const Eigen::Vector4d p =
        grid.affine * Eigen::Vector4d(static_cast<double>(v % nx), static_cast<double>((v / nx) % ny),
                                      static_cast<double>(v / (nx * ny)), 1.0);
    const double d = ((epi_to_template * p).head<3>() - kSphereCentre).norm();
    if (d < kSphereRadius - 2.0) {
      ++inner;
      if (!in[static_cast<size_t>(v)]) ++inner_missing;
    } else if (d > kSphereRadius + 2.0 && in[static_cast<size_t>(v)]) {
      ++outer_wrong;
    }
  }
  std::printf(
      "%s: labels at %lld interior voxels agree %.2f%%; Dice over %d regions mean %.3f, min %.3f; sphere: %zu "
      "voxels, %lld of %lld inner ones missing, %lld outer ones in; set-up %.2f s (%s)\n",
      what, static_cast<long long>(interior), 100.0 * interior_agreement, regions, dice_sum / regions, dice_min,
      rois.feedback[0].size(), static_cast<long long>(inner_missing), static_cast<long long>(inner),
      static_cast<long long>(outer_wrong), result.seconds, result.report["steps"].dump().c_str());
  EXPECT_GE(interior_agreement, 0.98);
  EXPECT_GE(dice_sum / regions, 0.85);
  EXPECT_GT(inner, 0);
  EXPECT_EQ(inner_missing, 0);
  EXPECT_EQ(outer_wrong, 0);
}

#define SKIP_WITHOUT_DATA()                                                                          \
  if (!test::installed_data("mricron/ch2bet.nii.gz") || !test::installed_data("mricron/aal.nii.gz")) \
  GTEST_SKIP() << test::missing_installed_data("mricron/ch2bet.nii.gz and aal.nii.gz")

TEST(SubjectSpace, WithAT1TheAtlasAndASphereLandWhereTheTruthPutsThem) {
  SKIP_WITHOUT_DATA();
  test::TempDir tmp;
  const Data d = make_data(tmp.path());
  PipelineConfig c = base_config(tmp.path() / "session");
  c.t1 = d.t1.string();
  c.template_name = d.template_2mm.string();
  const auto run_dir = tmp.path() / "session" / "runs" / "run-01";
  SubjectSpaceSetup setup(test::test_device(), c, c.session_dir);
  setup.request("run-01", d.epi, 0, run_dir);
  const auto result = setup.wait("run-01");
  ASSERT_TRUE(result);
  expect_matches_truth(*result, d.epi.header(), kEpiMove.inverse(), "EPI -> T1 -> template");
  // The session's T1 -> template result, in `rtfmri normalize`'s layout (written once the worker is idle): a later
  // session can name it as [registration] normalization.
  const std::string prefix = (tmp.path() / "session" / "subject_space" / "t1_to_template").string();
  EXPECT_TRUE(test::eventually(
      [&] { return std::filesystem::exists(tmp.path() / "session" / "subject_space" / "normalization.json"); }));
  EXPECT_NO_THROW(check_normalization(prefix));
  const NormalizationResult n = read_normalization(prefix);
  ASSERT_TRUE(n.inverse_warp);
  const auto [affine_worst, affine_mean] = test::errors_in_brain(d.template_image, kT1Move, n.affine);
  std::printf("T1 -> template affine (12 dof, NCC): mean %.3f mm, max %.3f mm over the brain\n", affine_mean,
              affine_worst);
  EXPECT_LT(affine_worst, 1.0);
  // The run's files: the EPI -> T1 transform (T1 world -> EPI world, as `rtfmri register EPI T1` writes it), the
  // atlas and the ROIs on the EPI grid, the timing report; the session's T1 -> template result, reusable.
  for (const char* f :
       {"epi_to_t1_affine.txt", "atlas_in_epi.nii.gz", "rois_in_epi.nii.gz", "rois_in_epi.tsv", "subject_space.json"}) {
    EXPECT_TRUE(std::filesystem::exists(run_dir / f)) << f;
  }
  // The EPI -> T1 transform is the truth's: T1 world -> template (S^-1) -> EPI world (R).
  const Eigen::Matrix4d epi_to_t1 = read_itk_affine(run_dir / "epi_to_t1_affine.txt");
  const auto [worst, mean] =
      test::errors_in_brain(d.epi, (kEpiMove * kT1Move.inverse()).inverse(), epi_to_t1.inverse());
  std::printf("EPI -> T1 (rigid, MI): mean %.3f mm, max %.3f mm over the brain\n", mean, worst);
  EXPECT_LT(worst, 1.0);
  const Image rois = read_nifti(run_dir / "rois_in_epi.nii.gz");
  EXPECT_EQ(rois.nt(), 1);
}

TEST(SubjectSpace, APrecomputedNormalizationIsUsedWithItsInverseWarp) {
  SKIP_WITHOUT_DATA();
  test::TempDir tmp;
  const Data d = make_data(tmp.path());
  // `rtfmri normalize`'s result, made up: the affine S and a constant inverse warp d on the template's grid. A T1
  // point y then reaches the template at S^-1 y + d, so the T1 is the template moved by S after a shift by -d.
  const Eigen::Vector3d shift(4.0, -3.0, 5.0);
  Eigen::Matrix4d minus_shift = Eigen::Matrix4d::Identity();
  minus_shift.topRightCorner<3, 1>() = -shift;
  Image t1 = d.template_image;
  t1.header().affine = kT1Move * minus_shift * t1.header().affine;
  write_nifti(d.t1, t1);
  ImageHeader field_header = d.template_image.header();
  field_header.num_volumes = 3;
  field_header.vector_components = true;
  Image field(field_header, 0.0f);
  for (int64_t c = 0; c < 3; ++c) {
    for (float& v : field.volume(c)) v = static_cast<float>(shift[static_cast<Eigen::Index>(c)]);
  }
  NormalizationResult n;
  n.affine = kT1Move;
  n.warp = std::make_shared<const Image>(field);  // (its negation would be the forward warp; only its presence counts)
  n.inverse_warp = std::make_shared<const Image>(field);
  const std::string prefix = (tmp.path() / "t1_to_mni").string();
  write_normalization(prefix, n);
  PipelineConfig c = base_config(tmp.path() / "session");
  c.t1 = d.t1.string();
  c.normalization = prefix;  // no template needed: nothing is normalised
  const auto result = set_up(c, d.epi, tmp.path() / "session" / "runs" / "run-01");
  ASSERT_TRUE(result);
  expect_matches_truth(*result, d.epi.header(), kEpiMove.inverse(), "precomputed normalization");
  for (const auto& s : result->report["steps"]) EXPECT_NE(s["step"], "t1_to_template") << "nothing is normalised";
}

TEST(SubjectSpace, WithoutAT1TheEpiIsRegisteredToTheTemplate) {
  SKIP_WITHOUT_DATA();
  test::TempDir tmp;
  const Data d = make_data(tmp.path());
  PipelineConfig c = base_config(tmp.path() / "session");
  c.template_name = d.template_2mm.string();
  const auto run_dir = tmp.path() / "session" / "runs" / "run-01";
  const auto result = set_up(c, d.epi, run_dir);
  ASSERT_TRUE(result);
  expect_matches_truth(*result, d.epi.header(), kEpiMove.inverse(), "EPI -> template (12 dof)");
  EXPECT_TRUE(std::filesystem::exists(run_dir / "epi_to_template_affine.txt"));
  EXPECT_EQ(result->report["registration"]["dof"], 12);
}

// Inputs that cannot work: refused before a scan with a message naming the key and the file, and, when the set-up
// meets them anyway, reported as the run's failure (never thrown into the live thread).
TEST(SubjectSpace, BadInputsGiveClearErrors) {
  SKIP_WITHOUT_DATA();
  test::TempDir tmp;
  write_4d_image(tmp.path() / "t1_4d.nii.gz");
  ImageHeader h;
  h.dims = {8, 8, 8};
  write_nifti(tmp.path() / "t1_3d.nii.gz", Image(h, 1.0f));
  const Image epi(h, 1.0f);
  const auto error_of = [](const PipelineConfig& c) -> std::string {
    try {
      check_registration_inputs(c);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  PipelineConfig missing_t1 = base_config(tmp.path() / "s1");
  missing_t1.t1 = (tmp.path() / "no_such_t1.nii.gz").string();
  EXPECT_NE(error_of(missing_t1).find("[registration] t1: T1 " + missing_t1.t1 + ": no such file"), std::string::npos)
      << error_of(missing_t1);
  PipelineConfig four_d = base_config(tmp.path() / "s2");
  four_d.t1 = (tmp.path() / "t1_4d.nii.gz").string();
  EXPECT_NE(error_of(four_d).find("a 3D image is needed, this one has 3 volumes"), std::string::npos)
      << error_of(four_d);
  PipelineConfig no_template = base_config(tmp.path() / "s3");
  no_template.template_name = (tmp.path() / "no_such_template.nii.gz").string();
  EXPECT_NE(error_of(no_template).find("[registration] template"), std::string::npos) << error_of(no_template);
  EXPECT_NE(error_of(no_template).find("no_such_template.nii.gz"), std::string::npos) << error_of(no_template);
  PipelineConfig no_prefix = base_config(tmp.path() / "s4");
  no_prefix.t1 = (tmp.path() / "t1_3d.nii.gz").string();
  no_prefix.normalization = (tmp.path() / "nothing").string();
  EXPECT_NE(error_of(no_prefix).find("nothing_affine.txt: no such file"), std::string::npos) << error_of(no_prefix);
  PipelineConfig fine = base_config(tmp.path() / "s5");
  EXPECT_EQ(error_of(fine), "");  // no [registration]: nothing to check

  // The set-up itself (a server started without the checks, or a file gone since): the run's result says why.
  for (const PipelineConfig* c : {&missing_t1, &four_d, &no_template}) {
    const auto result = set_up(*c, epi, tmp.path() / "runs" / "run-01");
    ASSERT_TRUE(result);
    EXPECT_FALSE(result->failure.empty());
    EXPECT_EQ(result->report["status"], "failed");
    std::printf("set-up failure: %s\n", result->failure.c_str());
  }
}

// A live run whose registration fails (a 4D "T1": the server was started without the checks) goes on: every volume
// is analysed (motion and the other stages), the lines say "rois-pending", then "rois-failed" with the reason, and no
// ROI output ever starts. Paced by the set-up's result, not by the clock.
TEST(SubjectSpace, ALiveRunWhoseRegistrationFailsGoesOnWithoutRoiOutputs) {
  SKIP_WITHOUT_DATA();
  test::TempDir tmp;
  const Image bold = sim::make_phantom(small_phantom(4)).bold;
  PipelineConfig c = base_config(tmp.path() / "session");
  c.t1 = write_4d_image(tmp.path() / "t1_4d.nii.gz").string();
  c.smoothing_fwhm_mm = 0.0;
  c.glm_cumulative = false;
  c.glm_window = 0;
  c.cca = false;
  c.results_pub.clear();
  c.feedback_tcp.clear();
  DropOldestQueue<AcceptedVolume> queue(4);
  LatencyLog latency("");
  std::vector<TrResult> results;
  LiveStage stage(test::test_device(), c, queue, latency, tmp.path() / "session", nullptr,
                  [&](const TrResult& r) { results.push_back(r); });
  ASSERT_NE(stage.subject_space(), nullptr);
  ImageHeader grid = bold.header();
  grid.num_volumes = 1;
  for (int64_t t = 0; t < bold.nt(); ++t) {
    std::vector<int16_t> samples;
    for (float v : bold.volume(t)) samples.push_back(static_cast<int16_t>(std::lround(v)));
    LiveVolume v;
    v.run = "run-01";
    v.index = t;
    v.grid = grid;
    v.payload = std::as_bytes(std::span<const int16_t>(samples));
    stage.handle(v, true);
    if (t == 0) {
      EXPECT_TRUE(test::eventually([&] { return stage.subject_space()->result("run-01") != nullptr; }));
    }
  }
  stage.finish_run();
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0].roi_status, "pending");
  for (const TrResult& r : results) {
    SCOPED_TRACE(r.index);
    EXPECT_TRUE(r.motion.has_value());  // the run goes on
    EXPECT_TRUE(r.roi_means.empty());
    EXPECT_TRUE(r.seed_map.empty() && r.connectivity.empty());
    EXPECT_TRUE(r.feedback_waits_for_rois);
    if (r.index == 0) continue;
    EXPECT_EQ(r.roi_status, "failed");
    EXPECT_NE(r.roi_reason.find("a 3D image is needed, this one has 3 volumes"), std::string::npos) << r.roi_reason;
    const nlohmann::json line = feedback_json(r, IngestLatency{}, 0);
    EXPECT_EQ(line["status"], "rois-failed");
    EXPECT_EQ(line["roi_status"], "failed");
    EXPECT_TRUE(line["feedback"].is_null());
  }
  std::ifstream report_file(tmp.path() / "session" / "runs" / "run-01" / "subject_space.json");
  EXPECT_EQ(nlohmann::json::parse(report_file)["status"], "failed");
}

}  // namespace
}  // namespace rtf::stream
