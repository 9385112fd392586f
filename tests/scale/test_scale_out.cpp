// ctest-label: unit
// The scale-out glue every spread command shares (core/scale/): job keys as one hash of the settings line and the
// inputs' bytes (what chunk files of an earlier run are matched by), voxel blocks covering the mask once, rank 0's
// values on every rank in a one-process job, and ScaleOut on two PoCL sub-devices: the devices opened in the
// background (an opening error rethrown where they are needed), a job run with its statistics kept and reported, a
// second run restoring every chunk from its files, and the commit that removes the chunk files after the outputs.
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <filesystem>
#include <fstream>

#include "core/io/atomic_file.hpp"
#include "core/scale/broadcast.hpp"
#include "core/scale/chunk_files.hpp"
#include "core/scale/job_key.hpp"
#include "core/scale/scale_out.hpp"
#include "core/scale/voxel_blocks.hpp"
#include "core/util/hash.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf {
namespace {

TEST(JobKey, HashesTheSettingsThenEachPartAsTheCommandsAlwaysHave) {
  const std::vector<float> data{1.0f, -2.5f, 3.0f};
  const std::vector<int8_t> signs{1, -1};
  const std::string_view data_bytes(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float));
  const std::string_view sign_bytes(reinterpret_cast<const char*>(signs.data()), signs.size());
  // The chunk files of runs before core/scale/job_key.hpp were keyed by hash_hex({settings, parts...}).
  EXPECT_EQ(job_key("settings v1", {bytes_of(data), bytes_of(signs)}),
            hash_hex({"settings v1", data_bytes, sign_bytes}));
  EXPECT_EQ(job_key("only settings"), hash_hex({"only settings"}));
  EXPECT_NE(job_key("settings v1", {bytes_of(data)}), job_key("settings v2", {bytes_of(data)}));
  EXPECT_NE(job_key("a", {"bc"}), job_key("ab", {"c"}));
  // Eigen matrices and vectors: their coefficients in storage order, as a std::vector of them.
  Eigen::MatrixXd m(2, 3);
  m << 1, 2, 3, 4, 5, 6;
  const std::vector<double> column_major{1, 4, 2, 5, 3, 6};
  EXPECT_EQ(bytes_of(m), bytes_of(column_major));
  const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> row_major = m;
  const std::vector<double> rows{1, 2, 3, 4, 5, 6};
  EXPECT_EQ(bytes_of(row_major), bytes_of(rows));
  const Eigen::VectorXd v = m.col(1);
  EXPECT_EQ(bytes_of(v), bytes_of(std::vector<double>{2, 5}));
  const int64_t x = 42;
  EXPECT_EQ(bytes_of_value(x), std::string_view(reinterpret_cast<const char*>(&x), sizeof x));
}

TEST(VoxelBlocks, SizedFromTheDevicesOrAsAskedAndCoverEveryVoxelOnce) {
  // 4 blocks per device on 3 devices, at least 256 voxels: 10,000 voxels in blocks of ceil(10000 / 12) = 834.
  const VoxelBlocks b = voxel_blocks(10000, 0, 3, 4, 256);
  EXPECT_EQ(b.per_block, 834);
  EXPECT_EQ(b.count(), 12);
  int64_t next = 0;
  for (int64_t k = 0; k < b.count(); ++k) {
    EXPECT_EQ(b.begin(k), next);
    EXPECT_GT(b.size(k), 0);
    next = b.end(k);
  }
  EXPECT_EQ(next, 10000);
  EXPECT_EQ(b.size(11), 10000 - 11 * 834);
  EXPECT_EQ(voxel_blocks(1000, 0, 3, 4, 256).per_block, 256);  // the minimum
  EXPECT_EQ(voxel_blocks(1000, 300, 3, 4, 256).count(), 4);    // as asked: 300, 300, 300, 100
  EXPECT_EQ(voxel_blocks(1000, 300, 3, 4, 256).size(3), 100);
  EXPECT_EQ(voxel_blocks(0, 0, 1, 4, 256).count(), 0);
  EXPECT_THROW(voxel_blocks(10, 0, 0, 4, 256), std::invalid_argument);
}

TEST(Broadcast, OneProcessKeepsItsOwnValues) {
  const Ranks& ranks = Ranks::world();
  ASSERT_EQ(ranks.size(), 1);
  std::vector<double> values{1.5, -2.0};
  broadcast_values(ranks, values);
  EXPECT_EQ(values, (std::vector<double>{1.5, -2.0}));
  EXPECT_TRUE(broadcast_flag(ranks, true));
  EXPECT_FALSE(broadcast_flag(ranks, false));
  EXPECT_FALSE(differs_from_root(ranks, "any digest"));
}

// A chunk's result: its index and a value derived from it.
ChunkBytes chunk_result(int64_t chunk) {
  ChunkWriter w;
  w.value(chunk).value(static_cast<double>(chunk) * 0.5);
  return w.take();
}

ChunkJob numbered_job(const std::filesystem::path& chunk_dir) {
  ChunkJob job;
  job.name = "scale-out test";
  job.chunks = 7;
  job.key = job_key("scale-out test v1", {"inputs"});
  job.chunk_dir = chunk_dir;
  job.compute = [](Device&, int, int64_t chunk) { return chunk_result(chunk); };
  return job;
}

TEST(ScaleOut, RunsJobsReportsWhereAndRemovesTheChunkFilesOnCommit) {
  test::TempDir dir("scale-out");
  ScaleOut scale({.device = "", .devices = "cpu/2"});
  EXPECT_TRUE(scale.root());
  EXPECT_EQ(scale.input(""), "");  // an option not given stays empty
  EXPECT_EQ(scale.input("some/file.nii"), "some/file.nii");
  const std::filesystem::path chunks = dir / "out_chunks";
  const std::vector<ChunkBytes> results = scale.run(numbered_job(chunks));
  ASSERT_EQ(results.size(), 7u);
  for (int64_t k = 0; k < 7; ++k) EXPECT_EQ(results[static_cast<size_t>(k)], chunk_result(k)) << k;
  EXPECT_EQ(scale.stats().restored, 0);
  nlohmann::json report = scale.devices_report(7, 123);
  EXPECT_EQ(report["total"], 2);
  EXPECT_EQ(report["ranks"], 1);
  EXPECT_EQ(report["chunks"], 7);
  EXPECT_EQ(report["chunk_voxels"], 123);
  EXPECT_EQ(report["restored_chunks"], 0);
  ASSERT_EQ(report["chunks_per_device"].size(), 1u);  // one rank, two device slots
  ASSERT_EQ(report["chunks_per_device"][0].size(), 2u);
  EXPECT_EQ(report["chunks_per_device"][0][0].get<int64_t>() + report["chunks_per_device"][0][1].get<int64_t>(), 7);
  EXPECT_NE(report["rank0"].get<std::string>().find("2 device(s)"), std::string::npos) << report["rank0"];
  // The same job again over its chunk files: every chunk restored, the same results.
  EXPECT_EQ(scale.run(numbered_job(chunks)), results);
  EXPECT_EQ(scale.stats().restored, 7);
  EXPECT_EQ(scale.devices_report(7, 123)["restored_chunks"], 7);
  // The commit: the outputs under their names, then the command's own chunk folder gone.
  io::OutputSet outputs;
  write_text_atomically(outputs.add(dir / "out_result.txt"), "done\n");
  scale.commit(outputs, chunks);
  EXPECT_TRUE(std::filesystem::exists(dir / "out_result.txt"));
  EXPECT_FALSE(std::filesystem::exists(chunks));
}

TEST(ScaleOut, AFolderTheUserNamedKeepsItsOtherFiles) {
  test::TempDir dir("scale-out");
  ScaleOut scale({.device = "", .devices = "cpu/2"});
  const std::filesystem::path chunks = dir / "scratch";
  std::filesystem::create_directories(chunks);
  write_text_atomically(chunks / "notes.txt", "the user's\n");
  scale.run(numbered_job(chunks));
  EXPECT_TRUE(std::filesystem::exists(chunk_file_path(chunks, 0)));
  io::OutputSet outputs;
  write_text_atomically(outputs.add(dir / "out_result.txt"), "done\n");
  scale.commit(outputs, chunks, true);
  EXPECT_TRUE(std::filesystem::exists(chunks / "notes.txt"));
  EXPECT_FALSE(std::filesystem::exists(chunk_file_path(chunks, 0)));
}

TEST(ScaleOut, AnOpeningErrorComesWhereTheDevicesAreNeeded) {
  ScaleOut scale({.device = "", .devices = "banana"});
  EXPECT_EQ(scale.input(""), "");  // the inputs are read before the devices are needed
  EXPECT_THROW(scale.workers(), std::runtime_error);
}

}  // namespace
}  // namespace rtf
