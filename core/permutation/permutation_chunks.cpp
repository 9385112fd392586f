// Chunks of a permutation test (permutation_chunks.hpp): a chunk's launches with their t maps handed to the cluster
// and TFCE statistics, its results as bytes, and the in-order merge.
#include "core/permutation/permutation_chunks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/scale/chunk_job.hpp"

namespace rtf {

namespace {

// The chunks of kPermutationChunkSize that open the tapered layout: three quarters of the set, rounded down.
int64_t large_permutation_chunks(int rearrangements) {
  return (static_cast<int64_t>(rearrangements) * 3 / 4) / kPermutationChunkSize;
}

}  // namespace

int64_t permutation_chunk_count(int rearrangements, int chunk_size) {
  if (rearrangements < 1 || chunk_size < 0) {
    throw std::invalid_argument(
        fmt::format("permutation chunks: {} rearrangements in chunks of {}", rearrangements, chunk_size));
  }
  if (chunk_size > 0) return (static_cast<int64_t>(rearrangements) + chunk_size - 1) / chunk_size;
  const int64_t large = large_permutation_chunks(rearrangements);
  const int64_t tail = rearrangements - large * kPermutationChunkSize;
  return large + (tail + kPermutationTailChunkSize - 1) / kPermutationTailChunkSize;
}

RearrangementRange permutation_chunk_range(int64_t chunk, int rearrangements, int chunk_size) {
  const int64_t chunks = permutation_chunk_count(rearrangements, chunk_size);
  if (chunk < 0 || chunk >= chunks) {
    throw std::invalid_argument(fmt::format("permutation chunks: chunk {} of {}", chunk, chunks));
  }
  int64_t first = 0, size = chunk_size;
  if (chunk_size > 0) {
    first = chunk * chunk_size;
  } else if (const int64_t large = large_permutation_chunks(rearrangements); chunk < large) {
    first = chunk * kPermutationChunkSize;
    size = kPermutationChunkSize;
  } else {
    first = large * kPermutationChunkSize + (chunk - large) * kPermutationTailChunkSize;
    size = kPermutationTailChunkSize;
  }
  return {static_cast<int>(first), static_cast<int>(std::min<int64_t>(size, rearrangements - first))};
}

PermutationChunkResult run_permutation_chunk(VoxelPermutationBlocks& blocks, ClusterStatistics* clusters,
                                             TfceStatistics* tfce, const PermutationChunkOptions& options,
                                             RearrangementRange range) {
  const int launch = blocks.launch_block();
  if (options.clusters() && (clusters == nullptr || clusters->max_batch() < launch)) {
    throw std::invalid_argument(fmt::format("permutation chunk: cluster statistics for batches of {} needed", launch));
  }
  if (options.tfce() && (tfce == nullptr || tfce->max_batch() < launch)) {
    throw std::invalid_argument(fmt::format("permutation chunk: TFCE statistics for batches of {} needed", launch));
  }
  PermutationChunkResult result;
  const bool extent = !std::isnan(options.cluster_extent), mass = !std::isnan(options.cluster_mass);
  const auto count = static_cast<size_t>(range.count);
  if (extent) result.max_extent.assign(count, 0);
  if (mass) result.max_mass.assign(count, 0.0);
  if (options.tfce()) result.max_tfce.assign(count, 0.0f);
  PermutationMaps consume;
  if (options.maps()) {
    consume = [&](const DeviceBuffer<float>& maps, int first, int n) {
      const auto at = static_cast<size_t>(first - range.first);
      if (extent) {
        const ClusterMaxima m = clusters->maxima(maps, n, static_cast<float>(options.cluster_extent));
        std::copy(m.extent.begin(), m.extent.end(), result.max_extent.begin() + static_cast<std::ptrdiff_t>(at));
      }
      if (mass) {
        const ClusterMaxima m = clusters->maxima(maps, n, static_cast<float>(options.cluster_mass));
        std::copy(m.mass.begin(), m.mass.end(), result.max_mass.begin() + static_cast<std::ptrdiff_t>(at));
      }
      if (options.tfce()) {
        const std::vector<float> m = tfce->maxima(maps, n, options.tfce_dh);
        std::copy(m.begin(), m.end(), result.max_tfce.begin() + static_cast<std::ptrdiff_t>(at));
      }
    };
  }
  // Between launches: stop when a backup copy of this chunk on another device has finished it (core/scale).
  VoxelPermutationBlock block =
      blocks.run(range.first, range.count, consume, [](int, int) { throw_if_chunk_cancelled(); });
  result.first = block.first;
  result.exceed = std::move(block.exceed);
  result.max_null = std::move(block.max_null);
  return result;
}

namespace {

constexpr uint32_t kMagic = 0x52505443;  // "RPTC": a permutation chunk

}  // namespace

ChunkBytes to_chunk_bytes(const PermutationChunkResult& result) {
  ChunkWriter w;
  w.value(kMagic).value(result.first);
  w.values(result.exceed).values(result.max_null).values(result.max_extent).values(result.max_mass);
  w.values(result.max_tfce);
  return w.take();
}

PermutationChunkResult permutation_chunk_from_bytes(const ChunkBytes& bytes) {
  ChunkReader r(bytes);
  if (r.value<uint32_t>() != kMagic) throw std::runtime_error("permutation chunk: not a permutation chunk's result");
  PermutationChunkResult result;
  result.first = r.value<int>();
  result.exceed = r.values<uint32_t>();
  result.max_null = r.values<float>();
  result.max_extent = r.values<int64_t>();
  result.max_mass = r.values<double>();
  result.max_tfce = r.values<float>();
  if (!r.done()) throw std::runtime_error("permutation chunk: bytes left after the result");
  return result;
}

void merge_permutation_chunk(PermutationChunkResult& total, const PermutationChunkResult& chunk) {
  const size_t merged = total.max_null.size(), count = chunk.max_null.size();
  // A list is either absent from every chunk or one value per rearrangement of each.
  const auto fits = [&](size_t total_size, size_t chunk_size) {
    return (chunk_size == 0 || chunk_size == count) && (merged == 0 || (total_size == 0) == (chunk_size == 0));
  };
  if (static_cast<size_t>(chunk.first) != merged || count == 0 ||
      (merged > 0 && chunk.exceed.size() != total.exceed.size()) ||
      !fits(total.max_extent.size(), chunk.max_extent.size()) || !fits(total.max_mass.size(), chunk.max_mass.size()) ||
      !fits(total.max_tfce.size(), chunk.max_tfce.size())) {
    throw std::invalid_argument(
        fmt::format("permutation chunks: a chunk of {} rearrangements from {} does not follow the {} merged", count,
                    chunk.first, merged));
  }
  if (merged == 0) {
    total = chunk;
    return;
  }
  for (size_t v = 0; v < total.exceed.size(); ++v) total.exceed[v] += chunk.exceed[v];
  total.max_null.insert(total.max_null.end(), chunk.max_null.begin(), chunk.max_null.end());
  total.max_extent.insert(total.max_extent.end(), chunk.max_extent.begin(), chunk.max_extent.end());
  total.max_mass.insert(total.max_mass.end(), chunk.max_mass.begin(), chunk.max_mass.end());
  total.max_tfce.insert(total.max_tfce.end(), chunk.max_tfce.begin(), chunk.max_tfce.end());
}

}  // namespace rtf
