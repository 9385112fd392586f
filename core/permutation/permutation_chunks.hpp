// A permutation test cut into chunks of a fixed number of rearrangements (kPermutationChunkSize, whatever the number
// of devices and ranks), for `rtfmri randomise` spread over devices and MPI ranks (core/scale/chunk_job.hpp). A chunk
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

// Rearrangements per chunk: a multiple of every launch block (32 .. 128), so a chunk's launches are those of the
// whole set.
constexpr int kPermutationChunkSize = 512;

// The chunks of a set of `count` rearrangements, and chunk `chunk`'s range [first, first + count).
int64_t permutation_chunk_count(int rearrangements, int chunk_size = kPermutationChunkSize);
struct RearrangementRange {
  int first = 0, count = 0;
};
RearrangementRange permutation_chunk_range(int64_t chunk, int rearrangements, int chunk_size = kPermutationChunkSize);

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
