// Writing NumPy .npz archives (what np.savez and scipy.sparse.save_npz write, uncompressed): each member a .npy file
// (format version 1.0, little-endian dtypes), stored in a zip archive with CRC-32. The archive goes to
// "<path>.partial" and is renamed over `path` only when complete, so an interrupted run never leaves a file that looks
// whole. Archives that could pass 4 GiB are written as zip64 (APPNOTE 4.5.3), which Python's zipfile (np.load,
// scipy.sparse.load_npz) reads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace rtf::io {

struct NpyMember {
  std::string name;            // without ".npy"
  std::string descr;           // NumPy dtype string: "<f4", "<f8", "<i4", "<i8", "|S3", ...
  std::vector<int64_t> shape;  // empty: a 0-d array
  std::vector<uint8_t> data;   // C order, shape's product x the dtype's size
};

// The .npy bytes of one array. Throws std::invalid_argument when the data's size disagrees with the shape and dtype.
std::vector<uint8_t> encode_npy(const NpyMember& member);

// `force_zip64` writes zip64 records even for a small archive (tests). Throws std::runtime_error naming the file when
// it cannot be written.
void write_npz(const std::filesystem::path& path, const std::vector<NpyMember>& members, bool force_zip64 = false);

// Helpers for typed arrays.
template <typename T>
NpyMember npy_member(std::string name, std::string descr, std::vector<int64_t> shape, std::span<const T> values) {
  NpyMember m{std::move(name), std::move(descr), std::move(shape), {}};
  const auto* bytes = reinterpret_cast<const uint8_t*>(values.data());
  m.data.assign(bytes, bytes + values.size_bytes());
  return m;
}

}  // namespace rtf::io
