// Writing NumPy .npz archives (what np.savez and scipy.sparse.save_npz write, uncompressed): each member a .npy file
// (format version 1.0, little-endian dtypes), stored in a zip archive with CRC-32. The archive goes to
// "<path>.partial" and is renamed over `path` only when complete, so an interrupted run never leaves a file that looks
// whole. Archives that could pass 4 GiB are written as zip64 (APPNOTE 4.5.3), which Python's zipfile (np.load,
// scipy.sparse.load_npz) reads. Large members are never copied: a member may reference the caller's bytes or produce
// them block by block (e.g. int32 widened to int64); CRC-32s are computed over fixed blocks on all the host's threads.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace rtf::io {

// Writes bytes [offset, offset + out.size()) of a member's data into `out`; called from several threads at once.
// `offset` and out.size() are multiples of 8 (or out ends the data).
using NpyBlockProducer = std::function<void(uint64_t offset, std::span<uint8_t> out)>;

// A member's data come from exactly one of `data`, `view` or `produce`.
struct NpyMember {
  std::string name;                 // without ".npy"
  std::string descr;                // NumPy dtype string: "<f4", "<f8", "<i4", "<i8", "|S3", ...
  std::vector<int64_t> shape;       // empty: a 0-d array
  std::vector<uint8_t> data;        // owned bytes, C order, shape's product x the dtype's size
  std::span<const uint8_t> view{};  // or the caller's bytes, not copied: they must outlive write_npz
  NpyBlockProducer produce{};       // or bytes made on demand ...
  uint64_t produced_bytes = 0;      // ... this many
  uint64_t data_bytes() const;      // the data's size, whichever way they come
};

// The .npy bytes of one array (materialised: for small arrays and tests). Throws std::invalid_argument when the
// data's size disagrees with the shape and dtype.
std::vector<uint8_t> encode_npy(const NpyMember& member);

struct NpzWriteOptions {
  bool force_zip64 = false;                   // zip64 records even for a small archive (tests)
  uint64_t block_bytes = uint64_t{64} << 20;  // CRC and write block (a multiple of 8): the result does not depend on it
  size_t workers = 0;                         // 0: the host's threads
};

// Throws std::runtime_error naming the file when it cannot be written (e.g. the disk is full); "<path>.partial" is
// removed then and `path` left as it was. Throws std::invalid_argument for a member whose size disagrees with its
// shape and dtype.
void write_npz(const std::filesystem::path& path, const std::vector<NpyMember>& members,
               const NpzWriteOptions& options);
void write_npz(const std::filesystem::path& path, const std::vector<NpyMember>& members, bool force_zip64 = false);

// A member's name, dtype and shape; the data still to be given.
inline NpyMember npy_without_data(std::string name, std::string descr, std::vector<int64_t> shape) {
  NpyMember m;
  m.name = std::move(name);
  m.descr = std::move(descr);
  m.shape = std::move(shape);
  return m;
}

// Helpers for typed arrays. npy_member copies the values (small arrays, temporaries); npy_view references them.
template <typename T>
NpyMember npy_member(std::string name, std::string descr, std::vector<int64_t> shape, std::span<const T> values) {
  NpyMember m = npy_without_data(std::move(name), std::move(descr), std::move(shape));
  const auto* bytes = reinterpret_cast<const uint8_t*>(values.data());
  m.data.assign(bytes, bytes + values.size_bytes());
  return m;
}

template <typename T>
NpyMember npy_view(std::string name, std::string descr, std::vector<int64_t> shape, std::span<const T> values) {
  NpyMember m = npy_without_data(std::move(name), std::move(descr), std::move(shape));
  m.view = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(values.data()), values.size_bytes());
  return m;
}

// `values` converted to To (e.g. int32 indices widened to int64) block by block as they are written; `values` must
// outlive write_npz.
template <typename To, typename From>
NpyMember npy_converted(std::string name, std::string descr, std::vector<int64_t> shape, std::span<const From> values) {
  NpyMember m = npy_without_data(std::move(name), std::move(descr), std::move(shape));
  m.produced_bytes = values.size() * sizeof(To);
  m.produce = [values](uint64_t offset, std::span<uint8_t> out) {
    const auto first = static_cast<size_t>(offset / sizeof(To));
    const size_t count = out.size() / sizeof(To);
    for (size_t k = 0; k < count; ++k) {
      const auto value = static_cast<To>(values[first + k]);
      std::memcpy(out.data() + k * sizeof(To), &value, sizeof(To));
    }
  };
  return m;
}

}  // namespace rtf::io
