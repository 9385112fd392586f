// Reading the voxel data of an uncompressed file on several host threads: each thread pread()s its own contiguous
// part of the file in chunks and decodes it to float32 (core/image/voxel_decode.hpp) straight into its part of the
// result, so that a 2 GB run is not read, faulted in and converted on one core. The values are the same, bit for
// bit, as decoding the whole data at once, however the parts are cut. Used by the NIfTI reader for .nii / .img.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "core/image/voxel_decode.hpp"

namespace rtf::io {

struct ParallelReadOptions {
  size_t threads = 0;                    // 0: the host's cores, fewer for small data (kMinPartBytes a thread)
  size_t chunk_bytes = size_t{1} << 20;  // raw bytes per pread() and decode: stays in the core's cache
  static constexpr size_t kMinPartBytes = size_t{8} << 20;
  static constexpr size_t kPopulateBytes = size_t{256} << 20;  // results this large are faulted in on threads first
};

// Decodes out.size() voxels of `type`, stored from byte `offset` of the plain (not compressed) file `path`, into
// `out`. Returns the number of data bytes present from `offset` on (out.size() * bytes_per_voxel(type) when the file
// holds them all; fewer when it ends early: the values past that point are then unspecified). Throws
// std::runtime_error with the system's reason when the file cannot be opened or read.
uint64_t read_voxels_parallel(const std::filesystem::path& path, uint64_t offset, DataType type,
                              const VoxelDecoding& how, std::span<float> out, const ParallelReadOptions& options = {});

// The same into a new vector of `count` values, allocated as allocate_floats does, each part read as soon as it is
// zeroed; `present` as returned above.
std::vector<float> read_voxels_parallel(const std::filesystem::path& path, uint64_t offset, DataType type,
                                        const VoxelDecoding& how, size_t count, uint64_t& present,
                                        const ParallelReadOptions& options = {});

// A vector of n zeros whose pages are faulted in on `threads` threads first (0: up to 8) when it holds at least
// kPopulateBytes: a fresh 2 GB allocation costs more in page faults on one core than reading it from the page cache.
// The same as std::vector<float>(n) otherwise.
std::vector<float> allocate_floats(size_t n, size_t threads = 0);

}  // namespace rtf::io
