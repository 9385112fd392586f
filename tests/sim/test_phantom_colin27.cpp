// The phantom from the real Colin27 template (mricron-data, installed by scripts/fetch-data.sh) on a small grid:
// measured grey-matter tSNR, activation that correlates with the design only where the ground truth says, every
// output file parsing with the right sizes, and byte-identical output for the same seed.
// ctest-label: unit
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/io/nifti_io.hpp"
#include "core/motion/motion_files.hpp"
#include "sim/phantom/design.hpp"
#include "sim/phantom/ground_truth_writers.hpp"
#include "sim/phantom/motion_trajectory.hpp"
#include "sim/phantom/phantom.hpp"
#include "sim/phantom/phantom_writer.hpp"
#include "tests/sim/phantom_fixtures.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/nifti_bytes.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf::sim {
namespace {

constexpr const char* kTemplate = "mricron/ch2bet.nii.gz";

// The template, read once per process; nullptr when it is not installed.
const Image* colin27() {
  static const std::optional<Image> image = []() -> std::optional<Image> {
    const auto path = test::installed_data(kTemplate);
    if (!path) return std::nullopt;
    return read_nifti(*path);
  }();
  return image ? &*image : nullptr;
}

#define REQUIRE_COLIN27()                                                            \
  if (colin27() == nullptr) GTEST_SKIP() << test::missing_installed_data(kTemplate); \
  const Image& t1 = *colin27()

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

TEST(PhantomColin27, MeasuredGreyMatterTsnrIsTheRequestedOne) {
  REQUIRE_COLIN27();
  PhantomSpec s = test::small_spec();
  s.motion = MotionKind::kNone;
  s.psc = 0;
  s.drift_percent = 0;
  s.tsnr = 80;
  const PhantomResult r = make_phantom(s, t1);
  const int64_t nv = r.grid.voxels();
  std::vector<double> tsnr;
  for (int64_t v = 0; v < nv; ++v) {
    if (r.tissue_fractions.data()[static_cast<size_t>(kGm * nv + v)] >= 0.5f)
      tsnr.push_back(test::detrended_tsnr(r.bold, v));
  }
  ASSERT_GT(tsnr.size(), 200u);
  const double measured = test::median(tsnr);
  EXPECT_NEAR(measured, 80.0, 8.0) << "over " << tsnr.size() << " grey-matter voxels";
  EXPECT_NEAR(r.tsnr_gm.median, measured, 0.05 * measured);  // what phantom.json reports
  // CSF is noisier (stronger physiological noise), white matter about as quiet as grey matter.
  EXPECT_LT(r.tsnr_csf.median, r.tsnr_gm.median);
}

TEST(PhantomColin27, ActiveVoxelsFollowTheDesignAndOthersDoNot) {
  REQUIRE_COLIN27();
  PhantomSpec s = test::small_spec();
  s.motion = MotionKind::kNone;
  s.tsnr = 1000;  // high tSNR: even voxels a fifth activated correlate clearly
  s.volumes = 48;
  const PhantomResult r = make_phantom(s, t1);
  const int64_t nv = r.grid.voxels();
  // Correlations after removing a quadratic trend from both (the default 1% drift stays in the data).
  std::vector<double> design;
  for (const auto& row : r.design.sampled()) design.push_back(row[0]);
  design = test::detrended(design);
  std::vector<double> active_r, inactive_r;
  for (int64_t v = 0; v < nv; ++v) {
    const auto i = static_cast<size_t>(v);
    if (r.brain_mask.data()[i] == 0) continue;
    const double corr = test::correlation(test::detrended(test::series(r.bold, v)), design);
    if (r.activation_mask.data()[i] > 0) active_r.push_back(corr);
    if (r.activation_fraction.data()[i] == 0.0f) inactive_r.push_back(corr);
  }
  ASSERT_GT(active_r.size(), 3u) << "the default regions should give activated voxels on the test grid";
  double inactive_mean = 0;
  for (double c : inactive_r) inactive_mean += c / static_cast<double>(inactive_r.size());
  // Measured: 29 active voxels, median r 0.93; inactive mean r 0.056 (the drift left after detrending).
  for (double c : active_r) EXPECT_GT(c, 0.5) << "median over active voxels " << test::median(active_r);
  EXPECT_LT(std::abs(inactive_mean), 0.1);
  // Every activated voxel is in the brain, in a region's neighbourhood, mostly grey matter.
  for (int64_t v = 0; v < nv; ++v) {
    if (r.activation_mask.data()[static_cast<size_t>(v)] > 0) {
      EXPECT_GT(r.brain_mask.data()[static_cast<size_t>(v)], 0);
    }
  }
}

TEST(PhantomColin27, WrittenFilesParseWithTheRightSizes) {
  REQUIRE_COLIN27();
  test::TempDir dir("rtf-phantom");
  const std::filesystem::path events = dir / "in_events.tsv";
  write_text_file(events, "onset\tduration\ttrial_type\n4\t8\tleft\n20\t8\tright\n36\t8\tleft\n52\t0\tright\n");
  PhantomSpec s = test::small_spec();
  s.design = "events";
  s.events = read_events_tsv(events);
  s.regions = {parse_region("-38,-24,56,10,left"), parse_region("38,-24,56,10,right,3")};
  s.template_path = *test::installed_data(kTemplate);
  const PhantomResult r = make_phantom(s, t1);
  write_phantom(r, dir.path() / "out");
  const auto out = dir.path() / "out";

  const Image bold = read_nifti(out / "bold.nii.gz");
  EXPECT_EQ(bold.header().dims, s.grid);
  EXPECT_EQ(bold.nt(), s.volumes);
  EXPECT_NEAR(bold.header().tr_s, 2.0, 1e-6);
  EXPECT_EQ(bold.header().source_type, DataType::kInt16);
  EXPECT_TRUE(bold.header().same_grid(r.grid.header(1, 0)));
  for (size_t i = 0; i < bold.data().size(); i += 97) EXPECT_NEAR(bold.data()[i], r.bold.data()[i], 0.5 + 1e-3);
  for (const char* name :
       {"brain_mask.nii.gz", "tissue.nii.gz", "activation_mask.nii.gz", "activation_fraction.nii.gz"}) {
    const Image m = read_nifti(out / name);
    EXPECT_EQ(m.nt(), 1) << name;
    EXPECT_TRUE(m.header().same_grid(bold.header())) << name;
  }
  const Image labels = read_nifti(out / "tissue.nii.gz");
  for (float v : labels.data()) EXPECT_TRUE(v == 0 || v == 1 || v == 2 || v == 3);
  EXPECT_EQ(read_nifti(out / "tissue_fractions.nii.gz").nt(), 3);
  EXPECT_EQ(read_nifti(out / "activation_psc.nii.gz").nt(), 2);

  const auto ev = lines(read_text(out / "events.tsv"));
  ASSERT_EQ(ev.size(), 5u);
  EXPECT_EQ(ev[0], "onset\tduration\ttrial_type");
  EXPECT_EQ(parse_events_tsv(read_text(out / "events.tsv")).size(), 4u);
  const auto design = lines(read_text(out / "design.tsv"));
  ASSERT_EQ(design.size(), static_cast<size_t>(s.volumes + 1));
  EXPECT_EQ(design[0], "left\tright");
  EXPECT_EQ(std::count(design[5].begin(), design[5].end(), '\t'), 1);
  const auto motion = lines(read_text(out / "motion.tsv"));
  ASSERT_EQ(motion.size(), static_cast<size_t>(s.volumes + 1));
  EXPECT_EQ(motion[0], "volume\ttrans_x_mm\ttrans_y_mm\ttrans_z_mm\trot_x_deg\trot_y_deg\trot_z_deg");
  EXPECT_EQ(parse_motion_tsv(read_text(out / "motion.tsv")).size(), static_cast<size_t>(s.volumes));
  EXPECT_EQ(parse_fsl_par(read_text(out / "motion.par")).size(), static_cast<size_t>(s.volumes));

  const auto json = nlohmann::json::parse(read_text(out / "phantom.json"));
  EXPECT_EQ(json["seed"], s.seed);
  EXPECT_EQ(json["grid"]["dims"], nlohmann::json(s.grid));
  EXPECT_EQ(json["activation"]["conditions"], nlohmann::json({"left", "right"}));
  EXPECT_EQ(json["activation"]["regions"].size(), 2u);
  EXPECT_EQ(json["activation"]["regions"][1]["psc"], 3.0);
  EXPECT_GT(json["activation"]["regions"][0]["gm_volume_mm3"].get<double>(), 300.0);
  EXPECT_GT(json["achieved_tsnr"]["gm"]["median"].get<double>(), 60.0);
  EXPECT_TRUE(json["motion"].contains("convention"));
  const auto sidecar = nlohmann::json::parse(read_text(out / "bold.json"));
  EXPECT_EQ(sidecar["RepetitionTime"], 2.0);
}

TEST(PhantomColin27, SameSeedGivesIdenticalBytes) {
  REQUIRE_COLIN27();
  test::TempDir dir("rtf-phantom-seed");
  PhantomSpec s = test::small_spec();
  s.threads = 1;
  write_phantom(make_phantom(s, t1), dir.path() / "a");
  s.threads = 2;
  write_phantom(make_phantom(s, t1), dir.path() / "b");
  s.seed += 1;
  write_phantom(make_phantom(s, t1), dir.path() / "c");
  for (const char* name : {"bold.nii.gz", "brain_mask.nii.gz", "tissue.nii.gz", "tissue_fractions.nii.gz",
                           "activation_mask.nii.gz", "activation_fraction.nii.gz", "activation_psc.nii.gz",
                           "motion.tsv", "motion.par", "events.tsv", "design.tsv", "bold.json"}) {
    EXPECT_EQ(test::read_bytes(dir / "a" / name), test::read_bytes(dir / "b" / name)) << name;
  }
  auto without_runtime = [&](const char* sub) {
    auto j = nlohmann::json::parse(read_text(dir.path() / sub / "phantom.json"));
    j.erase("runtime");
    return j;
  };
  EXPECT_EQ(without_runtime("a"), without_runtime("b"));
  EXPECT_NE(test::read_bytes(dir / "a" / "bold.nii.gz"), test::read_bytes(dir / "c" / "bold.nii.gz"));
  EXPECT_NE(read_text(dir.path() / "a" / "motion.tsv"), read_text(dir.path() / "c" / "motion.tsv"));
}

}  // namespace
}  // namespace rtf::sim
