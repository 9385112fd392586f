// A permutation test cut into chunks of rearrangements (a layout fixed by the set's size, whatever the number of
// devices and ranks), for `rtfmri randomise` spread over devices and MPI ranks (core/scale/chunk_job.hpp). A chunk
// computes, against the observed statistic, each voxel's count of rearrangements with t* >= t and each rearrangement's
// largest t, cluster extent / mass and TFCE; chunk 0 holds the identity. Counts are integers and maxima exact per
// rearrangement, so the chunks merged in order equal voxel_permutation_test's whole-set result bit for bit on any
// split. docs/algorithms/randomise.md.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/permutation/clusters.hpp"
#include "core/permutation/tfce.hpp"
#include "core/permutation/voxel_permutation.hpp"
#include "core/scale/chunk_bytes.hpp"

namespace rtf {

// Rearrangements per chunk: three quarters of the set in chunks of kPermutationChunkSize, the rest in chunks of
// kPermutationTailChunkSize (the last one shorter), so that the devices run out of work together at the end (20 equal
// chunks of 10,000 rearrangements leave 4 of 8 devices idle for the last one). Fixed by the set's size, not by the
// devices, so the chunk files of a stopped run fit any other split.
constexpr int kPermutationChunkSize = 512;
constexpr int kPermutationTailChunkSize = 128;

// The chunks of a set of `count` rearrangements, and chunk `chunk`'s range [first, first + count): the tapered layout
// above, or, given a chunk_size, equal chunks of that size.
int64_t permutation_chunk_count(int rearrangements, int chunk_size = 0);
struct RearrangementRange {
  int first = 0, count = 0;
};
RearrangementRange permutation_chunk_range(int64_t chunk, int rearrangements, int chunk_size = 0);

// What a chunk computes beyond the voxel counts and maxima (t contrasts only).
struct PermutationChunkOptions {
  double cluster_extent = std::nan("");  // -c: the cluster-forming threshold; NaN: no extent maxima
  double cluster_mass = std::nan("");    // -C: likewise for the mass maxima
  float tfce_dh = 0.0f;                  // -T: the TFCE step; 0: no TFCE maxima
  bool clusters() const { return !std::isnan(cluster_extent) || !std::isnan(cluster_mass); }
  bool tfce() const { return tfce_dh > 0.0f; }
  bool maps() const { return clusters() || tfce(); }
};

// One chunk's results (or, merged, the whole set's): the lists asked for, empty otherwise.
struct PermutationChunkResult {
  int first = 0;                    // the first rearrangement
  std::vector<uint32_t> exceed;     // per voxel, summed over the chunks
  std::vector<float> max_null;      // per rearrangement: the largest t*
  std::vector<int64_t> max_extent;  // per rearrangement: the largest cluster extent (-c)
  std::vector<double> max_mass;     // per rearrangement: the largest cluster mass (-C)
  std::vector<float> max_tfce;      // per rearrangement: the largest TFCE (-T)
};

// Rearrangements [range.first, + range.count) on one device: `blocks` with its observed statistic set, `clusters` /
// `tfce` (on the same device, max_batch >= blocks.launch_block()) where `options` asks for them. Throws
// std::invalid_argument when a needed one is missing or too small.
PermutationChunkResult run_permutation_chunk(VoxelPermutationBlocks& blocks, ClusterStatistics* clusters,
                                             TfceStatistics* tfce, const PermutationChunkOptions& options,
                                             RearrangementRange range);

ChunkBytes to_chunk_bytes(const PermutationChunkResult& result);
// Throws std::runtime_error for bytes that are not a chunk result.
PermutationChunkResult permutation_chunk_from_bytes(const ChunkBytes& bytes);

// Appends `chunk` (the next in order: its first must equal the rearrangements merged so far) to `total`: counts
// summed, maxima concatenated. Throws std::invalid_argument for a chunk out of order or of other sizes.
void merge_permutation_chunk(PermutationChunkResult& total, const PermutationChunkResult& chunk);

}  // namespace rtf
