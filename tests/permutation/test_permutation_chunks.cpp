// ctest-label: gpu
// Chunks of a permutation test (core/permutation/permutation_chunks.hpp) against the whole-set function: on an odd grid
// with a random mask and fresh random data with an effect blob (seed printed; RTF_TEST_SEED replays it), the set's
// chunks run one after another on one device, in chunks of a size that splits launches (200), and as a ChunkJob on
// Workers of two devices (two Device objects, one thread each), merged in chunk order, give the whole-set function's
// exceed counts, max_null and the cluster extent / mass and TFCE maxima bit for bit: Freedman-Lane with a covariate
// (1100 random permutations: three chunks of 512, the last short) and a one-sample test (700 sign flips). Also the
// chunk ranges, the bytes round trip, and merges out of order refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>

#include "core/permutation/clusters.hpp"
#include "core/permutation/permutation_chunks.hpp"
#include "core/permutation/permutation_set.hpp"
#include "core/permutation/t_contrast_model.hpp"
#include "core/permutation/tfce.hpp"
#include "core/permutation/voxel_permutation.hpp"
#include "core/scale/chunk_job.hpp"
#include "core/scale/ranks.hpp"
#include "tests/support/test_device.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

using test::test_seed;

constexpr std::array<int64_t, 3> kDims{11, 9, 7};
constexpr int kBatch = 64;  // rearrangements per launch, as `rtfmri randomise` with cluster inference

struct Problem {
  std::vector<uint8_t> mask;  // over the grid
  size_t voxels = 0;          // in the mask
  TContrastModel model;
  PermutationSet set;
  std::vector<float> residuals;  // N x V
};

// Smooth noise per subject (a 3-voxel box average) plus `effect` in a blob on subjects whose regressor is 1.
Problem make_problem(uint32_t seed, bool one_sample, int rearrangements) {
  std::mt19937 rng(seed);
  Problem p;
  const int64_t nx = kDims[0], ny = kDims[1], nz = kDims[2], grid = nx * ny * nz;
  std::bernoulli_distribution inside(0.8);
  p.mask.resize(static_cast<size_t>(grid));
  for (auto& m : p.mask) m = inside(rng) ? 1 : 0;
  std::vector<int64_t> masked;
  for (int64_t v = 0; v < grid; ++v) {
    if (p.mask[static_cast<size_t>(v)] != 0) masked.push_back(v);
  }
  p.voxels = masked.size();
  const int n = one_sample ? 10 : 13;
  Eigen::MatrixXd design;
  Eigen::RowVectorXd contrast;
  std::normal_distribution<double> normal(0.0, 1.0);
  if (one_sample) {
    design = Eigen::MatrixXd::Ones(n, 1);
    contrast = Eigen::RowVectorXd::Ones(1);
  } else {
    design.resize(n, 3);
    for (int i = 0; i < n; ++i) {
      design(i, 0) = i < 6 ? 1.0 : 0.0;
      design(i, 1) = i < 6 ? 0.0 : 1.0;
      design(i, 2) = normal(rng);
    }
    contrast.resize(3);
    contrast << 1.0, -1.0, 0.0;
  }
  p.model = make_t_contrast_model(design, contrast);
  p.set = make_permutation_set(one_sample ? PermutationKind::kSignFlip : PermutationKind::kPermute, n, rearrangements,
                               seed, {}, &design);
  std::vector<float> data(static_cast<size_t>(n) * p.voxels);
  std::vector<double> noise(static_cast<size_t>(grid));
  for (int i = 0; i < n; ++i) {
    for (double& x : noise) x = normal(rng);
    const bool effect = one_sample || design(i, 0) > 0.0;
    for (size_t k = 0; k < p.voxels; ++k) {
      const int64_t v = masked[k], x = v % nx, y = (v / nx) % ny, z = v / (nx * ny);
      double sum = 0.0;
      int count = 0;
      for (int64_t dz = -1; dz <= 1; ++dz) {
        for (int64_t dy = -1; dy <= 1; ++dy) {
          for (int64_t dx = -1; dx <= 1; ++dx) {
            const int64_t xx = x + dx, yy = y + dy, zz = z + dz;
            if (xx < 0 || yy < 0 || zz < 0 || xx >= nx || yy >= ny || zz >= nz) continue;
            sum += noise[static_cast<size_t>(xx + nx * (yy + ny * zz))];
            ++count;
          }
        }
      }
      const double blob = (x - 3) * (x - 3) + (y - 4) * (y - 4) + (z - 3) * (z - 3) <= 5 ? 1.2 : 0.0;
      data[static_cast<size_t>(i) * p.voxels + k] =
          static_cast<float>(sum / count + (effect ? blob : 0.0) + (one_sample ? 0.1 : 2.0));
    }
  }
  p.residuals = data;
  remove_nuisance(p.model, p.residuals, p.voxels);
  return p;
}

// The whole set on one device with the cluster and TFCE maxima taken from each launch's maps, as `rtfmri randomise`
// computed them before the chunks.
PermutationChunkResult whole_set(Device& device, const Problem& p, const PermutationChunkOptions& options,
                                 std::vector<float>* observed) {
  ClusterStatistics clusters(device, kDims, p.mask, 26, kBatch);
  TfceStatistics tfce(device, kDims, p.mask, 26, kBatch);
  PermutationChunkResult r;
  const auto count = static_cast<size_t>(p.set.count);
  r.max_extent.assign(count, -1);
  r.max_mass.assign(count, -1.0);
  r.max_tfce.assign(count, -1.0f);
  const PermutationMaps consume = [&](const DeviceBuffer<float>& maps, int first, int n) {
    const ClusterMaxima e = clusters.maxima(maps, n, static_cast<float>(options.cluster_extent));
    std::copy(e.extent.begin(), e.extent.end(), r.max_extent.begin() + first);
    const ClusterMaxima m = clusters.maxima(maps, n, static_cast<float>(options.cluster_mass));
    std::copy(m.mass.begin(), m.mass.end(), r.max_mass.begin() + first);
    const std::vector<float> t = tfce.maxima(maps, n, options.tfce_dh);
    std::copy(t.begin(), t.end(), r.max_tfce.begin() + first);
  };
  const VoxelPermutationResult all =
      voxel_permutation_test(device, p.model, p.set, p.residuals, p.voxels, {}, consume, kBatch);
  r.exceed = all.exceed;
  r.max_null = all.max_null;
  *observed = all.t;
  return r;
}

// Per device: the blocks against the observed t and the cluster / TFCE statistics.
struct Slot {
  std::unique_ptr<VoxelPermutationBlocks> blocks;
  std::unique_ptr<ClusterStatistics> clusters;
  std::unique_ptr<TfceStatistics> tfce;
};

Slot make_slot(Device& device, const Problem& p, const std::vector<double>& observed) {
  Slot s;
  s.blocks = std::make_unique<VoxelPermutationBlocks>(device, p.model, p.set, p.residuals, p.voxels, kBatch);
  s.blocks->set_observed(observed);
  s.clusters = std::make_unique<ClusterStatistics>(device, kDims, p.mask, 26, kBatch);
  s.tfce = std::make_unique<TfceStatistics>(device, kDims, p.mask, 26, kBatch);
  return s;
}

PermutationChunkResult chunks_on_one_device(Device& device, const Problem& p, const PermutationChunkOptions& options,
                                            int chunk_size, const std::vector<double>& observed) {
  Slot s = make_slot(device, p, observed);
  PermutationChunkResult total;
  const int64_t chunks = permutation_chunk_count(p.set.count, chunk_size);
  for (int64_t c = 0; c < chunks; ++c) {
    const auto range = permutation_chunk_range(c, p.set.count, chunk_size);
    merge_permutation_chunk(total, run_permutation_chunk(*s.blocks, s.clusters.get(), s.tfce.get(), options, range));
  }
  return total;
}

PermutationChunkResult chunks_on_workers(const Problem& p, const PermutationChunkOptions& options,
                                         const std::vector<double>& observed, ChunkJobStats* stats) {
  const char* spec = std::getenv("RTFMRI_DEVICE");
  std::vector<std::unique_ptr<Device>> devices;
  devices.push_back(Device::open(spec ? spec : ""));
  devices.push_back(Device::open(spec ? spec : ""));
  Workers workers(std::move(devices), Ranks::world());
  std::vector<Slot> slots(static_cast<size_t>(workers.device_count()));
  ChunkJob job;
  job.name = "test permutation chunks";
  job.chunks = permutation_chunk_count(p.set.count);
  job.key = "test";
  job.compute = [&](Device& device, int slot, int64_t chunk) {
    Slot& s = slots[static_cast<size_t>(slot)];
    if (!s.blocks) s = make_slot(device, p, observed);
    return to_chunk_bytes(run_permutation_chunk(*s.blocks, s.clusters.get(), s.tfce.get(), options,
                                                permutation_chunk_range(chunk, p.set.count)));
  };
  const std::vector<ChunkBytes> results = workers.run(job, {}, stats);
  PermutationChunkResult total;
  for (const ChunkBytes& bytes : results) merge_permutation_chunk(total, permutation_chunk_from_bytes(bytes));
  for (int slot = 0; slot < workers.device_count(); ++slot) workers.device(slot).finish();
  return total;
}

void expect_identical(const PermutationChunkResult& a, const PermutationChunkResult& b, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(a.first, b.first);
  EXPECT_EQ(a.exceed, b.exceed);
  ASSERT_EQ(a.max_null.size(), b.max_null.size());
  for (size_t k = 0; k < a.max_null.size(); ++k) {
    ASSERT_EQ(std::bit_cast<uint32_t>(a.max_null[k]), std::bit_cast<uint32_t>(b.max_null[k])) << k;
  }
  EXPECT_EQ(a.max_extent, b.max_extent);
  ASSERT_EQ(a.max_mass.size(), b.max_mass.size());
  for (size_t k = 0; k < a.max_mass.size(); ++k) {
    ASSERT_EQ(std::bit_cast<uint64_t>(a.max_mass[k]), std::bit_cast<uint64_t>(b.max_mass[k])) << k;
  }
  ASSERT_EQ(a.max_tfce.size(), b.max_tfce.size());
  for (size_t k = 0; k < a.max_tfce.size(); ++k) {
    ASSERT_EQ(std::bit_cast<uint32_t>(a.max_tfce[k]), std::bit_cast<uint32_t>(b.max_tfce[k])) << k;
  }
}

void check_splits(bool one_sample, int rearrangements) {
  const uint32_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  const Problem p = make_problem(seed, one_sample, rearrangements);
  ASSERT_EQ(p.set.count, rearrangements);
  Device& device = test::test_device();
  // The TFCE step as randomise -T takes it: the observed map's maximum / 100.
  VoxelPermutationBlocks probe(device, p.model, p.set, p.residuals, p.voxels, kBatch);
  const std::vector<double> observed = probe.observe();
  PermutationChunkOptions options;
  options.cluster_extent = 2.0;
  options.cluster_mass = 1.5;
  options.tfce_dh = static_cast<float>(std::max(*std::max_element(observed.begin(), observed.end()), 1.0) / 100.0);

  std::vector<float> t;
  const PermutationChunkResult whole = whole_set(device, p, options, &t);
  ASSERT_EQ(t.size(), observed.size());
  for (size_t v = 0; v < t.size(); ++v) ASSERT_EQ(t[v], static_cast<float>(observed[v])) << v;
  // The data mean something: clusters above the thresholds in the observed map, and the identity counts itself.
  ASSERT_GT(whole.max_extent[0], 1);
  ASSERT_GT(whole.max_tfce[0], 0.0f);
  for (uint32_t e : whole.exceed) ASSERT_GE(e, 1U);

  expect_identical(chunks_on_one_device(device, p, options, 0, observed), whole, "the tapered chunks on one device");
  expect_identical(chunks_on_one_device(device, p, options, 200, observed), whole, "chunks of 200 on one device");
  ChunkJobStats stats;
  expect_identical(chunks_on_workers(p, options, observed, &stats), whole, "a ChunkJob on two devices");
  ASSERT_EQ(stats.device_chunks.size(), 2U);
  EXPECT_EQ(stats.device_chunks[0] + stats.device_chunks[1], permutation_chunk_count(rearrangements));
}

TEST(PermutationChunks, FreedmanLaneChunksOnAnySplitEqualTheWholeSet) {
  check_splits(false, 1100);
}

TEST(PermutationChunks, SignFlipChunksOnAnySplitEqualTheWholeSet) {
  check_splits(true, 700);
}

TEST(PermutationChunks, RangesCoverTheSetOnceIdentityInChunkZero) {
  // Tapered: floor(3/4 R / 512) chunks of 512, then chunks of 128, the last one shorter.
  EXPECT_EQ(permutation_chunk_count(1), 1);
  EXPECT_EQ(permutation_chunk_count(128), 1);
  EXPECT_EQ(permutation_chunk_count(512), 4);     // 384 < 512: no large chunk
  EXPECT_EQ(permutation_chunk_count(1100), 6);    // 825 / 512 -> 1 large, then 588 in 5
  EXPECT_EQ(permutation_chunk_count(10000), 37);  // 14 large (7,168), then 2,832 in 23
  const auto first = permutation_chunk_range(0, 1100);
  EXPECT_EQ(first.first, 0);
  EXPECT_EQ(first.count, 512);
  const auto second = permutation_chunk_range(1, 1100);
  EXPECT_EQ(second.first, 512);
  EXPECT_EQ(second.count, 128);
  const auto last = permutation_chunk_range(5, 1100);
  EXPECT_EQ(last.first, 1024);
  EXPECT_EQ(last.count, 76);
  EXPECT_THROW(permutation_chunk_range(6, 1100), std::invalid_argument);
  EXPECT_THROW(permutation_chunk_range(-1, 1100), std::invalid_argument);
  EXPECT_THROW(permutation_chunk_count(0), std::invalid_argument);
  EXPECT_THROW(permutation_chunk_count(10, -1), std::invalid_argument);
  // Equal chunks on request (the split tests above).
  EXPECT_EQ(permutation_chunk_count(1100, 200), 6);
  EXPECT_EQ(permutation_chunk_range(5, 1100, 200).count, 100);
  // Every layout covers the set once, in order, from the identity.
  for (const int r : {1, 127, 128, 129, 511, 512, 683, 684, 1100, 4096, 9999, 10000, 100000}) {
    for (const int size : {0, 1, 200, 512}) {
      int next = 0;
      for (int64_t c = 0; c < permutation_chunk_count(r, size); ++c) {
        const auto range = permutation_chunk_range(c, r, size);
        ASSERT_EQ(range.first, next) << r << " " << size << " " << c;
        ASSERT_GT(range.count, 0);
        next += range.count;
      }
      EXPECT_EQ(next, r) << r << " " << size;
    }
  }
}

TEST(PermutationChunks, BytesRoundTripAndMergesOutOfOrderAreRefused) {
  PermutationChunkResult a;
  a.first = 0;
  a.exceed = {1, 2, 3};
  a.max_null = {1.5f, -0.25f};
  a.max_tfce = {7.0f, 8.0f};
  const PermutationChunkResult back = permutation_chunk_from_bytes(to_chunk_bytes(a));
  expect_identical(back, a, "round trip");
  ChunkBytes cut = to_chunk_bytes(a);
  cut.pop_back();
  EXPECT_THROW(permutation_chunk_from_bytes(cut), std::runtime_error);
  ChunkBytes other = to_chunk_bytes(a);
  other[0] ^= 0xff;
  EXPECT_THROW(permutation_chunk_from_bytes(other), std::runtime_error);

  PermutationChunkResult b = a;
  b.first = 2;
  b.exceed = {10, 20, 30};
  PermutationChunkResult total;
  EXPECT_THROW(merge_permutation_chunk(total, b), std::invalid_argument);  // not first
  merge_permutation_chunk(total, a);
  EXPECT_THROW(merge_permutation_chunk(total, a), std::invalid_argument);  // again from 0
  PermutationChunkResult no_tfce = b;
  no_tfce.max_tfce.clear();
  EXPECT_THROW(merge_permutation_chunk(total, no_tfce), std::invalid_argument);  // lists differ
  merge_permutation_chunk(total, b);
  EXPECT_EQ(total.exceed, (std::vector<uint32_t>{11, 22, 33}));
  EXPECT_EQ(total.max_null, (std::vector<float>{1.5f, -0.25f, 1.5f, -0.25f}));
  EXPECT_EQ(total.max_tfce.size(), 4U);
}

}  // namespace
}  // namespace rtf
