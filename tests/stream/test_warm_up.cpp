// ctest-label: gpu
// The server's warm-up (stream/pipeline/warm_up.hpp): the grid specs it accepts and refuses, and that after warm_up()
// a real run on the same grid, with every stage on, builds no kernel program at all (none compiled, none loaded from
// the disk cache: every one is found in the device's program cache), through more volumes than any window holds.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>

#include "core/io/nifti_io.hpp"
#include "stream/pipeline/run_pipeline.hpp"
#include "stream/pipeline/warm_up.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_device.hpp"

namespace rtf::stream {
namespace {

TEST(WarmGrid, SpecsAndFiles) {
  EXPECT_TRUE(is_grid_spec("64x64x33@3"));
  EXPECT_TRUE(is_grid_spec("104x104x72@2x2x2.5"));
  EXPECT_FALSE(is_grid_spec("64x64@3"));
  EXPECT_FALSE(is_grid_spec("bold.nii.gz"));
  const ImageHeader g = warm_grid("64x62x33@3x3x3.5");
  EXPECT_EQ(g.dims, (std::array<int64_t, 3>{64, 62, 33}));
  EXPECT_EQ(g.voxel_mm, (std::array<double, 3>{3.0, 3.0, 3.5}));
  // Centred on the origin: the middle of the grid is at (0, 0, 0) mm.
  const Eigen::Vector4d centre = g.affine * Eigen::Vector4d(31.5, 30.5, 16.0, 1.0);
  EXPECT_NEAR(centre.head<3>().norm(), 0.0, 1e-12);
  EXPECT_DOUBLE_EQ(g.affine(2, 2), 3.5);
  for (const char* bad : {"64x64x33@0", "1x64x33@3", "no-such-file.nii.gz", "64x64x33@"}) {
    EXPECT_THROW(warm_grid(bad), std::invalid_argument) << bad;
  }
  test::TempDir tmp;
  ImageHeader h;
  h.dims = {9, 8, 7};
  h.num_volumes = 3;
  h.voxel_mm = {2.5, 2.5, 3.0};
  h.affine.diagonal() << 2.5, 2.5, 3.0, 1.0;
  h.affine(0, 3) = -11.0;
  write_nifti(tmp / "bold.nii.gz", Image(h, 1.0f));
  const ImageHeader from_file = warm_grid((tmp / "bold.nii.gz").string());
  EXPECT_EQ(from_file.dims, h.dims);
  EXPECT_EQ(from_file.num_volumes, 1);
  EXPECT_NEAR(from_file.affine(0, 3), -11.0, 1e-6);
  std::ofstream(tmp / "not-nifti.nii") << "hello";
  EXPECT_THROW(warm_grid((tmp / "not-nifti.nii").string()), std::invalid_argument);
}

// Every stage on: motion, smoothing, cumulative and sliding GLM, CCA, atlas ROI x ROI (when AAL is installed), seed
// map, feedback ROI.
PipelineConfig every_stage(const test::TempDir& tmp) {
  PipelineConfig c;
  c.session_dir = tmp.path().string();
  c.ring = 10;
  c.tr_s = 1.0;
  c.volumes = 14;
  c.events = (tmp / "events.tsv").string();
  std::ofstream(c.events) << "onset\tduration\ttrial_type\n0\t3\ttask\n6\t3\ttask\n12\t2\ttask\n";
  c.glm_window = 8;
  c.cca_window = 8;
  c.connectivity_window = 8;
  c.data_dir = test::installed_data_dir();
  if (!test::installed_data("mricron/aal.nii.gz")) c.atlas.clear();
  RoiSpec roi;
  roi.name = "centre";
  roi.sphere_mm = std::array<double, 3>{0.0, 0.0, 0.0};
  roi.radius_mm = 10.0;
  c.feedback_rois = {roi};
  c.seed = roi;
  c.results_pub.clear();
  c.feedback_tcp.clear();
  return c;
}

TEST(WarmUp, ARunOnTheWarmedGridBuildsNoKernel) {
  test::TempDir tmp;
  const PipelineConfig config = every_stage(tmp);
  Device& device = test::test_device();
  const ImageHeader grid = warm_grid("23x27x19@4");
  const WarmUpReport report = warm_up(device, config, grid);
  std::printf("warm-up: %.2f s, %d compiled, %d from the disk cache; stages: %s\n", report.seconds, report.compiled,
              report.from_disk_cache, report.stages.c_str());
  EXPECT_GT(report.compiled + report.from_disk_cache, 0);  // it built the programs (this process started cold)
  for (const char* stage :
       {"motion", "smoothing", "cumulative GLM", "sliding GLM", "CCA", "seed map", "feedback value"}) {
    EXPECT_NE(report.stages.find(stage), std::string::npos) << stage << " not in: " << report.stages;
  }
  if (!config.atlas.empty()) {
    EXPECT_NE(report.stages.find("ROI x ROI"), std::string::npos) << report.stages;
  }
  EXPECT_FALSE(std::filesystem::exists(tmp / "runs"));  // the warm-up wrote nothing into the session

  const ProgramCacheStats before = device.programs().stats();
  {
    ImageHeader g = grid;
    g.tr_s = 1.0;
    RunPipeline run(device, config, g, "run-01", tmp / "runs" / "run-01");
    std::mt19937 rng(5);
    std::normal_distribution<double> noise(0.0, 20.0);
    std::vector<int16_t> volume(static_cast<size_t>(g.voxels_per_volume()));
    for (int64_t t = 0; t < config.volumes; ++t) {
      size_t i = 0;
      for (int64_t z = 0; z < g.dims[2]; ++z) {
        for (int64_t y = 0; y < g.dims[1]; ++y) {
          for (int64_t x = 0; x < g.dims[0]; ++x, ++i) {
            const double r2 = std::pow(x - 11.0, 2) + std::pow(y - 13.0, 2) + std::pow(z - 9.0, 2);
            volume[i] = static_cast<int16_t>(std::lround(800.0 * std::exp(-r2 / 60.0) + 100.0 + noise(rng)));
          }
        }
      }
      std::vector<std::byte> payload(volume.size() * sizeof(int16_t));
      std::memcpy(payload.data(), volume.data(), payload.size());
      run.upload(t, payload, DataType::kInt16);
      TrResult r = run.process(t);
      run.read_maps(r);
      EXPECT_TRUE(r.stage_errors.empty()) << t << ": " << r.stage_errors.front();
    }
    run.finish();
  }
  const ProgramCacheStats after = device.programs().stats();
  EXPECT_EQ(after.compiles, before.compiles) << "the run compiled kernels the warm-up did not build";
  EXPECT_EQ(after.disk_hits, before.disk_hits) << "the run loaded kernels the warm-up did not build";
  EXPECT_GT(after.memory_hits, before.memory_hits);
}

}  // namespace
}  // namespace rtf::stream
