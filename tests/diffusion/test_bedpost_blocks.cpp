// ctest-label: unit
// bedpost's blocks of mask voxels (core/diffusion/bedpost_blocks.hpp) on the host: their size from the devices (one
// block per device while a device's share is small, up to four of at least 65,536 voxels for larger shares, never
// below 1024, or as asked), and blocks' results packed as chunk bytes and joined into one run equal to the whole run
// the blocks were cut from (fresh random draws of odd sizes), with a block of the wrong size refused.
#include <gtest/gtest.h>

#include <random>

#include "core/diffusion/bedpost_blocks.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

TEST(BedpostBlocks, SizedFromTheDevices) {
  EXPECT_EQ(bedpost_blocks(100000, 0, 2).per_block, 50000);  // shares below 131,072: one block per device
  EXPECT_EQ(bedpost_blocks(100000, 0, 2).count(), 2);
  EXPECT_EQ(bedpost_blocks(600000, 0, 2).count(), 8);     // 300,000 a device: 4 blocks each
  EXPECT_EQ(bedpost_blocks(200000, 0, 1).count(), 3);     // 200,000: 3 blocks of 66,667
  EXPECT_EQ(bedpost_blocks(3000, 0, 8).per_block, 1024);  // the minimum
  EXPECT_EQ(bedpost_blocks(3000, 500, 8).count(), 6);     // as asked
}

// A run of `voxels` voxels with random draws and means (what ball_stick_mcmc returns for a block).
BallStickRun random_run(std::mt19937_64& rng, int voxels, int samples, int fibres) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  BallStickRun run;
  run.voxels = voxels;
  run.samples = samples;
  run.fibres = fibres;
  run.draws.resize(3 * static_cast<size_t>(fibres) * static_cast<size_t>(samples) * static_cast<size_t>(voxels));
  for (float& x : run.draws) x = static_cast<float>(u(rng));
  for (auto* means : {&run.mean_s0, &run.mean_d, &run.mean_d_std, &run.mean_tau}) {
    means->resize(static_cast<size_t>(voxels));
    for (double& x : *means) x = u(rng);
  }
  for (size_t k = 0; k < run.accepted.size(); ++k) {
    run.accepted[k] = std::floor(100 * u(rng));
    run.rejected[k] = std::floor(100 * u(rng));
  }
  return run;
}

// Voxels [begin, end) of `whole`, as a block run alone would hold them (acceptance counts split evenly).
BallStickRun block_of(const BallStickRun& whole, int begin, int end, bool first) {
  BallStickRun b = whole;
  b.voxels = end - begin;
  const auto rows = static_cast<size_t>(3 * whole.fibres * whole.samples);
  b.draws.clear();
  for (size_t row = 0; row < rows; ++row) {
    const auto* from = whole.draws.data() + row * static_cast<size_t>(whole.voxels);
    b.draws.insert(b.draws.end(), from + begin, from + end);
  }
  for (auto [to, from] : {std::pair{&b.mean_s0, &whole.mean_s0}, std::pair{&b.mean_d, &whole.mean_d},
                          std::pair{&b.mean_d_std, &whole.mean_d_std}, std::pair{&b.mean_tau, &whole.mean_tau}}) {
    to->assign(from->begin() + begin, from->begin() + end);
  }
  for (size_t k = 0; k < b.accepted.size(); ++k) {
    b.accepted[k] = first ? whole.accepted[k] : 0.0;
    b.rejected[k] = first ? whole.rejected[k] : 0.0;
  }
  return b;
}

TEST(BedpostBlocks, PackedBlocksJoinIntoTheWholeRun) {
  const uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  const BallStickRun whole = random_run(rng, 37, 5, 2);
  const VoxelBlocks blocks{37, 15};  // 15, 15, 7
  std::vector<ChunkBytes> packed;
  for (int64_t k = 0; k < blocks.count(); ++k) {
    packed.push_back(pack_bedpost_block(
        block_of(whole, static_cast<int>(blocks.begin(k)), static_cast<int>(blocks.end(k)), k == 0), k + 1));
  }
  int64_t unfitted = 0;
  const BallStickRun joined = join_bedpost_blocks(packed, blocks, unfitted);
  EXPECT_EQ(unfitted, 1 + 2 + 3) << "seed " << seed;
  EXPECT_EQ(joined.voxels, whole.voxels);
  EXPECT_EQ(joined.samples, whole.samples);
  EXPECT_EQ(joined.fibres, whole.fibres);
  EXPECT_EQ(joined.draws, whole.draws) << "seed " << seed;
  EXPECT_EQ(joined.mean_s0, whole.mean_s0);
  EXPECT_EQ(joined.mean_d, whole.mean_d);
  EXPECT_EQ(joined.mean_d_std, whole.mean_d_std);
  EXPECT_EQ(joined.mean_tau, whole.mean_tau);
  EXPECT_EQ(joined.accepted, whole.accepted);
  EXPECT_EQ(joined.rejected, whole.rejected);
  // A block that holds other voxels than its place says is refused.
  EXPECT_THROW(join_bedpost_blocks(packed, VoxelBlocks{37, 16}, unfitted), std::runtime_error);
}

}  // namespace
}  // namespace rtf
