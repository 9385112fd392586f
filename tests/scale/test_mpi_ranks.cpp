// ctest-label: unit
// Ranks and Workers across MPI ranks. Run alone it checks the one-process job; ctest also runs it under
// `mpirun --oversubscribe -np 3` (scale.mpi_ranks_3), where it checks the collectives (sum, any, broadcast), rank 0's
// inputs copied to the ranks that do not see them (a file and a folder, byte for byte) and read in place by those that
// do, a job whose chunks are dealt to every rank returning every result in chunk order on rank 0 only, each chunk
// computed once over the job, rank 0's values, flag and digest on every rank (core/scale/broadcast.hpp), and connectome
// node series prepared on every rank made equal to rank 0's (sent only when one differs).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "core/connectome/connectome_chunks.hpp"
#include "core/scale/broadcast.hpp"
#include "core/scale/chunk_job.hpp"
#include "core/scale/device_list.hpp"
#include "core/scale/ranks.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf {
namespace {

class MpiEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { Ranks::init(nullptr, nullptr); }
  void TearDown() override { Ranks::finalize(); }
};
const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new MpiEnvironment);

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Rank 0's string on every rank.
std::string from_root(const std::string& text) {
  ChunkBytes bytes(text.begin(), text.end());
  Ranks::world().broadcast(bytes);
  return {bytes.begin(), bytes.end()};
}

TEST(MpiRanks, Collectives) {
  const Ranks& r = Ranks::world();
  ASSERT_GE(r.size(), 1);
  ASSERT_LT(r.rank(), r.size());
  EXPECT_EQ(r.sum(r.rank() + 1), static_cast<int64_t>(r.size()) * (r.size() + 1) / 2);
  EXPECT_TRUE(r.any(r.rank() == r.size() - 1));
  EXPECT_FALSE(r.any(false));
  EXPECT_EQ(from_root(r.root() ? "rank zero's text" : "other"), "rank zero's text");
  if (r.size() > 1) {
    EXPECT_TRUE(r.mpi());
  }
  EXPECT_FALSE(r.host().empty());
}

// core/scale/broadcast.hpp: what rank 0 alone computed or decided (an observed statistic, a pass to repeat) reaches
// every rank, and a rank whose own inputs differ from rank 0's learns it.
TEST(MpiRanks, RankZerosValuesFlagAndDigestReachEveryRank) {
  const Ranks& r = Ranks::world();
  std::vector<double> values(static_cast<size_t>(r.rank() + 1), 0.5 * r.rank());  // rank 0's: one value, 0
  broadcast_values(r, values);
  EXPECT_EQ(values, std::vector<double>{0.0});
  EXPECT_TRUE(broadcast_flag(r, r.root()));
  EXPECT_FALSE(broadcast_flag(r, !r.root()));
  EXPECT_FALSE(differs_from_root(r, "the same digest"));
  EXPECT_EQ(differs_from_root(r, r.rank() == r.size() - 1 ? "another digest" : "rank 0's digest"),
            r.size() > 1 && r.rank() == r.size() - 1);
}

TEST(MpiRanks, InputsComeFromRankZero) {
  const Ranks& r = Ranks::world();
  std::string content;
  for (int k = 0; k < 5000; ++k) content += static_cast<char>((k * 37 + 11) % 256);
  // Each rank works in its own folder, so a relative path names rank 0's file on rank 0 only: the others get copies.
  test::TempDir own("rtf-mpi-input");
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(own.path());
  if (r.root()) {
    std::filesystem::create_directories("bedpost_dir");
    std::ofstream("bedpost_dir/data.bin", std::ios::binary) << content;
    std::ofstream("bedpost_dir/bvals") << "0 1000 1000\n";
  }
  const std::string file = r.local_input("bedpost_dir/data.bin");
  EXPECT_EQ(read_all(file), content);
  if (!r.root()) {
    EXPECT_NE(file, "bedpost_dir/data.bin");
  }
  const std::string copy = r.local_input("bedpost_dir/");
  if (r.root()) {
    EXPECT_EQ(copy, "bedpost_dir/");
  } else {
    EXPECT_EQ(std::filesystem::path(copy).filename(), "bedpost_dir");  // the name kept: outputs are named from it
  }
  EXPECT_EQ(read_all(copy + "/data.bin"), content);
  EXPECT_EQ(read_all(copy + "/bvals"), "0 1000 1000\n");
  // Rank 0's file by its absolute path: every rank of this host sees it, and reads it there.
  const std::string absolute = from_root(std::filesystem::absolute("bedpost_dir/data.bin").string());
  EXPECT_EQ(r.local_input(absolute), absolute);
  r.barrier();  // rank 0's folder stays until every rank has looked
  std::filesystem::current_path(cwd);
}

TEST(MpiRanks, ChunksOfOneJobOverEveryRank) {
  const Ranks& r = Ranks::world();
  Workers workers(open_devices("cpu"), r);
  EXPECT_EQ(workers.total_devices(), r.size() * workers.device_count());
  ChunkJob job;
  job.name = "mpi test job";
  job.chunks = 17;
  job.key = "k";
  job.compute = [&](Device&, int, int64_t chunk) {
    ChunkWriter w;
    w.value(chunk).values(std::vector<int32_t>(static_cast<size_t>(chunk) * 1000, static_cast<int32_t>(chunk)));
    return w.take();
  };
  ChunkJobStats stats;
  const std::vector<ChunkBytes> results = workers.run(job, {}, &stats);
  int64_t mine = 0;
  for (int64_t n : stats.device_chunks) mine += n;
  EXPECT_EQ(r.sum(mine), 17);
  if (r.size() > 1) {
    // Three quarters (12) dealt in turn: every rank has its share; the other 5 handed out by rank 0 on request.
    EXPECT_GE(mine, 12 / r.size());
  }
  if (!r.root()) {
    EXPECT_TRUE(results.empty());
    return;
  }
  ASSERT_EQ(results.size(), 17u);
  for (int64_t c = 0; c < 17; ++c) {
    ChunkReader reader(results[static_cast<size_t>(c)]);
    EXPECT_EQ(reader.value<int64_t>(), c);
    const auto values = reader.values<int32_t>();
    EXPECT_EQ(values.size(), static_cast<size_t>(c) * 1000);
    for (int32_t v : values) ASSERT_EQ(v, c);
  }
}

TEST(MpiRanks, FewerChunksThanRanksAndThePool) {
  // 1, 2 and 5 chunks over the ranks: some ranks have no dealt chunk and wait for the pool (or its end); every chunk
  // runs once and the job ends on every rank (a rank never told that the pool is empty would hang here).
  const Ranks& r = Ranks::world();
  Workers workers(open_devices("cpu"), r);
  for (int64_t chunks : {int64_t{1}, int64_t{2}, int64_t{5}}) {
    ChunkJob job;
    job.name = fmt::format("pool test {}", chunks);
    job.chunks = chunks;
    job.key = "pool";
    job.compute = [](Device&, int, int64_t chunk) {
      ChunkWriter w;
      w.value(chunk * 7);
      return w.take();
    };
    ChunkJobStats stats;
    const std::vector<ChunkBytes> results = workers.run(job, {}, &stats);
    int64_t mine = 0;
    for (int64_t n : stats.device_chunks) mine += n;
    EXPECT_EQ(r.sum(mine), chunks);
    if (!r.root()) continue;
    ASSERT_EQ(static_cast<int64_t>(results.size()), chunks);
    for (int64_t c = 0; c < chunks; ++c) {
      ChunkReader reader(results[static_cast<size_t>(c)]);
      EXPECT_EQ(reader.value<int64_t>(), c * 7);
    }
  }
}

TEST(MpiRanks, AsManyChunksAsRanksGiveEveryRankOne) {
  // One chunk per rank: the dealt ones, and the pooled rest to the ranks that have none. Each chunk waits (at most
  // 60 s) until every rank has started one, so a rank that took a second chunk before another rank had one would
  // hold the job until then and fail below, however fast or busy the machine.
  const Ranks& r = Ranks::world();
  if (r.size() < 2) GTEST_SKIP() << "needs mpirun";
  Workers workers(open_devices("cpu"), r);
  std::optional<test::TempDir> root_dir;  // rank 0's; removed at the end
  if (r.root()) root_dir.emplace("rtf-mpi-one-each");
  const std::string dir = from_root(r.root() ? root_dir->path().string() : std::string());
  const auto started = [&] {
    int n = 0;
    for (int k = 0; k < r.size(); ++k) n += std::filesystem::exists(fmt::format("{}/rank{}", dir, k)) ? 1 : 0;
    return n;
  };
  ChunkJob job;
  job.name = "one chunk each";
  job.chunks = r.size();
  job.key = "one each";
  job.compute = [&](Device&, int, int64_t chunk) {
    std::ofstream(fmt::format("{}/rank{}", dir, r.rank())) << chunk;
    for (int wait = 0; wait < 6000 && started() < r.size(); ++wait) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ChunkWriter w;
    w.value(chunk);
    return w.take();
  };
  ChunkJobStats stats;
  workers.run(job, {}, &stats);
  int64_t mine = 0;
  for (int64_t n : stats.device_chunks) mine += n;
  EXPECT_EQ(mine, 1) << "rank " << r.rank();
  EXPECT_EQ(r.sum(mine), r.size());
  r.sum(0);  // every rank is done with the files before rank 0 removes them
}

// A small node series whose floats depend on `salt` (rank 0's: salt 0).
NodeSeries small_series(float salt) {
  NodeSeries s;
  s.normalised = true;
  s.length = 5;
  s.padded = 16;
  s.voxels = {3, 7, 8, 20};
  s.valid = {1, 1, 0, 1};
  s.z.assign(s.voxels.size() * 16, 0.0f);
  for (size_t k = 0; k < s.z.size(); ++k) s.z[k] = static_cast<float>(k % 16 < 5 ? 0.1 * static_cast<double>(k) : 0.0);
  s.z[1] += salt;
  return s;
}

TEST(MpiRanks, ConnectomeSeriesAlikeOnEveryRankAreNotSent) {
  const Ranks& r = Ranks::world();
  NodeSeries series = small_series(0.0f);
  bool sent = true;
  const std::string key = share_series(r, series, &sent);
  EXPECT_FALSE(sent);
  EXPECT_EQ(key, series_key(small_series(0.0f)));
  EXPECT_EQ(from_root(key), key);
}

TEST(MpiRanks, ConnectomeSeriesThatDifferOnARankBecomeRankZeros) {
  const Ranks& r = Ranks::world();
  if (r.size() == 1) GTEST_SKIP() << "needs mpirun -np 2 or more";
  // The last rank rounded one float otherwise; another rank masked one voxel more (same floats, other voxels).
  NodeSeries series = small_series(r.rank() == r.size() - 1 ? 1e-7f : 0.0f);
  if (r.size() > 2 && r.rank() == 1) series.voxels[3] = 21;
  bool sent = false;
  const std::string key = share_series(r, series, &sent);
  EXPECT_TRUE(sent);
  const NodeSeries expected = small_series(0.0f);
  EXPECT_EQ(series.voxels, expected.voxels);
  EXPECT_EQ(series.z, expected.z);
  EXPECT_EQ(series.valid, expected.valid);
  EXPECT_EQ(series.length, expected.length);
  EXPECT_EQ(key, series_key(expected));
}

}  // namespace
}  // namespace rtf
