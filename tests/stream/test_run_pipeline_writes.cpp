// ctest-label: gpu
// A run's files when the disk fails them: motion.tsv and feedback.tsv pointing at /dev/full (every write ENOSPC) and a
// final map whose name is taken by a folder. Every volume is still analysed with its motion and feedback value (the
// live path never waits or stops for a file), every lost row is counted and reported with the path and the errno text,
// the map that could not be written is reported by name and the others are written all the same. The same run on a
// healthy folder writes every file and reports nothing (the control).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "core/io/nifti_io.hpp"
#include "stream/output/output_failures.hpp"
#include "stream/pipeline/run_pipeline.hpp"
#include "tests/support/synthetic_volumes.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_device.hpp"

namespace rtf::stream {
namespace {

constexpr int64_t kVolumes = 12;

// Motion, cumulative GLM of a block design, CCA, a seed map and the feedback value of a sphere at the grid's centre.
PipelineConfig config_in(const std::filesystem::path& dir) {
  {
    std::ofstream events(dir / "events.tsv");
    events << "onset\tduration\ttrial_type\n0\t3\ttask\n6\t3\ttask\n";
  }
  PipelineConfig c = upload_only_config(dir / "session", 12);
  c.motion = true;
  c.tr_s = 1.0;
  c.volumes = kVolumes;
  c.events = (dir / "events.tsv").string();
  c.glm_cumulative = true;
  c.cca = true;
  c.cca_window = 8;
  c.cca_period_s = 6.0;
  c.connectivity_window = 8;
  RoiSpec centre;
  centre.name = "centre";
  centre.sphere_mm = std::array<double, 3>{0.0, 0.0, 0.0};
  centre.radius_mm = 10.0;
  c.seed = centre;
  c.feedback = true;
  c.feedback_rois = {centre};
  return c;
}

struct RunOutcome {
  int64_t with_motion = 0, with_feedback = 0;
};

// One run of kVolumes blob volumes (float32, a little task signal) through a RunPipeline, then its final maps.
RunOutcome run_through(const PipelineConfig& c, const std::filesystem::path& run_dir) {
  ImageHeader grid = test::oblique_header({20, 22, 16});
  grid.num_volumes = 1;
  grid.source_type = DataType::kFloat32;
  grid.tr_s = 1.0;
  const std::vector<float> base = test::blobs(grid, 11);
  RunOutcome out;
  RunPipeline pipeline(test::test_device(), c, grid, "r1", run_dir);
  for (int64_t t = 0; t < kVolumes; ++t) {
    std::vector<float> v = base;
    const float gain = (t % 6) < 3 ? 1.02f : 1.0f;
    for (float& x : v) x *= gain;
    pipeline.upload(t, std::as_bytes(std::span<const float>(v)), DataType::kFloat32);
    const TrResult r = pipeline.process(t);
    EXPECT_TRUE(r.stage_errors.empty()) << ::testing::PrintToString(r.stage_errors);
    out.with_motion += r.motion.has_value() ? 1 : 0;
    out.with_feedback += r.feedback.has_value() ? 1 : 0;
  }
  pipeline.finish();
  return out;
}

int64_t lines_in(const std::filesystem::path& p) {
  std::ifstream in(p);
  int64_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

const LostOutput* find(const std::vector<LostOutput>& lost, const std::string& name) {
  for (const LostOutput& l : lost) {
    if (l.path.filename() == name) return &l;
  }
  return nullptr;
}

TEST(RunPipelineWrites, AHealthyFolderGetsEveryFileAndNothingIsReported) {
  test::TempDir tmp("rtf-run-writes");
  const PipelineConfig c = config_in(tmp.path());
  const std::filesystem::path run_dir = tmp / "session" / "runs" / "r1";
  const RunOutcome r = run_through(c, run_dir);
  EXPECT_EQ(r.with_motion, kVolumes);
  EXPECT_EQ(r.with_feedback, kVolumes);
  EXPECT_TRUE(output_failures().lost(run_dir).empty()) << ::testing::PrintToString(output_failures().lines(run_dir));
  EXPECT_EQ(lines_in(run_dir / "motion.tsv"), 1 + kVolumes);
  EXPECT_EQ(lines_in(run_dir / "feedback.tsv"), 1 + kVolumes);
  for (const char* map : {"glm_cumulative_task_t.nii.gz", "cca.nii.gz", "seed_cumulative_z.nii.gz"}) {
    EXPECT_NO_THROW(read_nifti_header(run_dir / map)) << map;
  }
}

TEST(RunPipelineWrites, RowsAndMapsThatCannotBeWrittenAreReportedAndTheRunGoesOn) {
  test::TempDir tmp("rtf-run-writes");
  const PipelineConfig c = config_in(tmp.path());
  const std::filesystem::path run_dir = tmp / "session" / "runs" / "r1";
  std::filesystem::create_directories(run_dir / "cca.nii.gz" / "taken");  // the map's name is a non-empty folder
  std::filesystem::create_symlink("/dev/full", run_dir / "motion.tsv");
  std::filesystem::create_symlink("/dev/full", run_dir / "feedback.tsv");

  const RunOutcome r = run_through(c, run_dir);
  EXPECT_EQ(r.with_motion, kVolumes);  // analysis and feedback went on
  EXPECT_EQ(r.with_feedback, kVolumes);

  const std::vector<LostOutput> lost = output_failures().lost(run_dir);
  EXPECT_EQ(lost.size(), 3u) << ::testing::PrintToString(output_failures().lines(run_dir));
  for (const char* rows : {"motion.tsv", "feedback.tsv"}) {
    const LostOutput* l = find(lost, rows);
    ASSERT_NE(l, nullptr) << rows;
    EXPECT_EQ(l->rows_lost, kVolumes) << rows;
    EXPECT_NE(l->error.find((run_dir / rows).string()), std::string::npos) << l->error;
    EXPECT_NE(l->error.find(std::strerror(ENOSPC)), std::string::npos) << l->error;
  }
  const LostOutput* cca = find(lost, "cca.nii.gz");
  ASSERT_NE(cca, nullptr);
  EXPECT_TRUE(cca->file_lost);
  EXPECT_NE(cca->error.find("cca.nii.gz"), std::string::npos) << cca->error;
  // The maps after the failed one were still written.
  EXPECT_NO_THROW(read_nifti_header(run_dir / "glm_cumulative_task_t.nii.gz"));
  EXPECT_NO_THROW(read_nifti_header(run_dir / "seed_cumulative_z.nii.gz"));
  EXPECT_NO_THROW(read_nifti_header(run_dir / "seed_sliding_z.nii.gz"));
}

}  // namespace
}  // namespace rtf::stream
