// NIfTI file reading and writing: locating the header and data files, size checks against the file, the voxel data
// of plain files read and converted to float32 on the host's cores, compressed ones streamed through a bounded
// buffer; writing converts from float32 the same way.
#include "core/io/nifti_io.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <system_error>
#include <type_traits>

#include "core/image/voxel_decode.hpp"
#include "core/io/byte_stream.hpp"
#include "core/io/checked_file.hpp"
#include "core/io/nifti_header.hpp"
#include "core/io/parallel_convert.hpp"

namespace rtf {

NiftiError::NiftiError(const std::filesystem::path& file, const std::string& problem)
    : std::runtime_error(fmt::format("{}: {}", file.string(), problem)), file_(file) {}

namespace {

namespace fs = std::filesystem;
using nifti_detail::DecodedHeader;

constexpr size_t kChunkVoxels = size_t{1} << 20;  // voxels converted per buffer fill (<= 8 MiB of bytes)

struct Files {
  fs::path header;
  bool header_gz = false;
  fs::path data;  // empty until known (pair whose .img is missing)
  bool data_gz = false;
  bool pair = false;  // .hdr + .img
};

std::string lower_name(const fs::path& path) {
  std::string name = path.filename().string();
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return name;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void require_regular_file(const fs::path& path, const fs::path& reported) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) {
    throw NiftiError(reported,
                     path == reported ? "file not found" : fmt::format("data file {} not found", path.string()));
  }
  if (!fs::is_regular_file(status)) throw NiftiError(reported, fmt::format("{} is not a regular file", path.string()));
}

Files locate(const fs::path& path) {
  const std::string name = lower_name(path);
  Files f;
  f.header = path;
  if (ends_with(name, ".nii") || ends_with(name, ".nii.gz")) {
    f.header_gz = ends_with(name, ".gz");
    f.data = path;
    f.data_gz = f.header_gz;
  } else if (ends_with(name, ".hdr") || ends_with(name, ".hdr.gz")) {
    f.pair = true;
    f.header_gz = ends_with(name, ".gz");
    const std::string stem = path.filename().string().substr(0, name.size() - (f.header_gz ? 7 : 4));
    for (const char* ext : {".img", ".img.gz"}) {
      const fs::path candidate = path.parent_path() / (stem + ext);
      std::error_code ec;
      if (fs::exists(candidate, ec)) {
        f.data = candidate;
        f.data_gz = ends_with(std::string(ext), ".gz");
        break;
      }
    }
  } else if (ends_with(name, ".img") || ends_with(name, ".img.gz")) {
    throw NiftiError(path, "this is the data half of a .hdr/.img pair; open the .hdr file");
  } else {
    throw NiftiError(path, "unsupported file name extension (expected .nii, .nii.gz or .hdr)");
  }
  return f;
}

// Reads and validates the header; checks the data file's presence and (uncompressed) size.
DecodedHeader read_header(const fs::path& path, const NiftiReadLimits& limits, Files& files) {
  require_regular_file(path, path);
  files = locate(path);
  std::vector<uint8_t> bytes(nifti_detail::kMaxHeaderSize);
  try {
    io::ByteReader reader(files.header, files.header_gz);
    bytes.resize(reader.read(bytes.data(), bytes.size()));
  } catch (const std::runtime_error& e) {
    throw NiftiError(path, fmt::format("cannot read header: {}", e.what()));
  }
  if (!files.header_gz && bytes.size() >= 2 && bytes[0] == 0x1F && bytes[1] == 0x8B) {
    throw NiftiError(path, "file content is gzip-compressed but the name does not end in .gz");
  }
  DecodedHeader h = nifti_detail::decode_nifti_header(bytes, path, limits);
  if (files.pair == h.single_file) {
    throw NiftiError(path, files.pair ? "magic says single-file NIfTI (n+), but the file is a .hdr"
                                      : "magic says .hdr/.img pair (ni1/ni2), but the file is a single .nii");
  }
  if (files.data.empty()) throw NiftiError(path, "no .img or .img.gz data file beside the .hdr");
  require_regular_file(files.data, path);
  if (!files.data_gz) {
    std::error_code ec;
    const uintmax_t size = fs::file_size(files.data, ec);
    if (ec) throw NiftiError(path, fmt::format("cannot get the size of {}: {}", files.data.string(), ec.message()));
    if (size < h.data_offset + h.data_bytes) {
      throw NiftiError(path, fmt::format("file is truncated: {} is {} bytes, but the header needs {} (vox_offset {} + "
                                         "{} bytes of voxel data)",
                                         files.data.filename().string(), size, h.data_offset + h.data_bytes,
                                         h.data_offset, h.data_bytes));
    }
  }
  return h;
}

void decode_chunk(const uint8_t* src, size_t count, const DecodedHeader& h, float* dst) {
  decode_voxels(h.image.source_type,
                std::span<const std::byte>(reinterpret_cast<const std::byte*>(src),
                                           count * static_cast<size_t>(h.bytes_per_voxel)),
                std::span<float>(dst, count), {.byte_swapped = h.swapped, .slope = h.scl_slope, .inter = h.scl_inter});
}

// Uncompressed data were size-checked against the file: the result is allocated whole and filled on the host's
// cores, each reading and decoding its own part of the file (core/io/parallel_convert.hpp).
std::vector<float> read_plain_voxels(const fs::path& path, const Files& files, const DecodedHeader& h) {
  std::vector<float> values;
  uint64_t present = 0;
  try {
    values = io::read_voxels_parallel(files.data, h.data_offset, h.image.source_type,
                                      {.byte_swapped = h.swapped, .slope = h.scl_slope, .inter = h.scl_inter},
                                      static_cast<size_t>(h.voxel_count), present);
  } catch (const std::runtime_error& e) {
    throw NiftiError(path, fmt::format("reading voxel data failed: {}", e.what()));
  }
  if (present < h.data_bytes) {  // the file shrank after its size was checked
    throw NiftiError(path, fmt::format("voxel data truncated: {} of {} bytes present", present, h.data_bytes));
  }
  return values;
}

// Compressed data cannot be checked up front. A file that could hold them (deflate expands at most 1032 times) gets
// its result allocated whole at once; otherwise the result grows (geometrically) as data actually arrive, so that a
// tiny hostile .nii.gz claiming gigabytes costs no more memory than what it really decompresses to.
std::vector<float> read_voxels(const fs::path& path, const Files& files, const DecodedHeader& h) {
  if (!files.data_gz) return read_plain_voxels(path, files, h);
  const auto total = static_cast<size_t>(h.voxel_count);
  const auto bpv = static_cast<size_t>(h.bytes_per_voxel);
  constexpr uint64_t kMaxInflateRatio = 1032;
  std::error_code ec;
  const uintmax_t compressed = fs::file_size(files.data, ec);
  const bool whole = !ec && h.data_offset + h.data_bytes <= compressed * kMaxInflateRatio;
  std::vector<float> values;
  if (whole) {
    values = io::allocate_floats(total);
  } else {
    values.reserve(std::min(total, 4 * kChunkVoxels));
  }
  size_t filled = 0;  // values decoded (values.size() grows with them unless allocated whole)
  std::vector<uint8_t> buffer(std::min(total, kChunkVoxels) * bpv);
  try {
    io::ByteReader reader(files.data, files.data_gz);
    const uint64_t skipped = reader.skip(h.data_offset);
    if (skipped < h.data_offset) {
      throw NiftiError(path, fmt::format("data ends after {} bytes, before the voxel data at vox_offset {}", skipped,
                                         h.data_offset));
    }
    while (filled < total) {
      const size_t done = filled;
      const size_t count = std::min(total - done, kChunkVoxels);
      const size_t got = reader.read(buffer.data(), count * bpv);
      if (got < count * bpv) {
        throw NiftiError(path,
                         fmt::format("voxel data truncated: {} of {} bytes present", done * bpv + got, h.data_bytes));
      }
      if (!whole) {
        if (done + count > values.capacity()) values.reserve(std::min(total, 2 * values.capacity()));
        values.resize(done + count);
      }
      decode_chunk(buffer.data(), count, h, values.data() + done);
      filled = done + count;
    }
    char tail[64];
    (void)reader.read(tail, sizeof(tail));  // reaches the gzip trailer: checks the CRC of what was read
  } catch (const NiftiError&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw NiftiError(path, fmt::format("reading voxel data failed: {}", e.what()));
  }
  return values;
}

template <typename T>
T to_integer(float v) {
  if (std::isnan(v)) return 0;
  const double r = std::nearbyint(static_cast<double>(v));
  constexpr auto kLo = static_cast<double>(std::numeric_limits<T>::lowest());
  constexpr auto kHi = static_cast<double>(std::numeric_limits<T>::max());  // 2^63 / 2^64 for 64-bit types
  if (r <= kLo) return std::numeric_limits<T>::lowest();
  if (r >= kHi) return std::numeric_limits<T>::max();
  return static_cast<T>(r);
}

template <typename T>
void encode_voxels(const float* src, size_t count, uint8_t* dst) {
  for (size_t i = 0; i < count; ++i) {
    T v;
    if constexpr (std::is_floating_point_v<T>) {
      v = static_cast<T>(src[i]);
    } else {
      v = to_integer<T>(src[i]);
    }
    std::memcpy(dst + i * sizeof(T), &v, sizeof(T));
  }
}

void encode_chunk(const float* src, size_t count, DataType out, uint8_t* dst) {
  switch (out) {
    case DataType::kUint8:
      return encode_voxels<uint8_t>(src, count, dst);
    case DataType::kInt8:
      return encode_voxels<int8_t>(src, count, dst);
    case DataType::kInt16:
      return encode_voxels<int16_t>(src, count, dst);
    case DataType::kUint16:
      return encode_voxels<uint16_t>(src, count, dst);
    case DataType::kInt32:
      return encode_voxels<int32_t>(src, count, dst);
    case DataType::kUint32:
      return encode_voxels<uint32_t>(src, count, dst);
    case DataType::kInt64:
      return encode_voxels<int64_t>(src, count, dst);
    case DataType::kUint64:
      return encode_voxels<uint64_t>(src, count, dst);
    case DataType::kFloat32:
      return encode_voxels<float>(src, count, dst);
    case DataType::kFloat64:
      return encode_voxels<double>(src, count, dst);
  }
}

fs::path temporary_sibling(const fs::path& path) {
  static std::atomic<uint64_t> counter{0};
  return path.parent_path() / fmt::format(".{}.tmp-{}-{}", path.filename().string(), ::getpid(), counter++);
}

}  // namespace

ImageHeader read_nifti_header(const std::filesystem::path& path, const NiftiReadLimits& limits) {
  Files files;
  return read_header(path, limits, files).image;
}

ImageHeader read_complete_nifti_header(const std::filesystem::path& path, const NiftiReadLimits& limits) {
  Files files;
  const DecodedHeader h = read_header(path, limits, files);  // uncompressed: the size checked there
  if (!files.data_gz) return h.image;
  const uint64_t needed = h.data_offset + h.data_bytes;
  try {
    io::ByteReader reader(files.data, true);
    const uint64_t present = reader.skip(needed);
    if (present < needed) {
      throw NiftiError(path, fmt::format("file is truncated: {} decompresses to {} bytes, but the header needs {} "
                                         "(vox_offset {} + {} bytes of voxel data)",
                                         files.data.filename().string(), present, needed, h.data_offset, h.data_bytes));
    }
    char tail[64];
    (void)reader.read(tail, sizeof(tail));  // reaches the gzip trailer: checks the CRC of what was read
  } catch (const NiftiError&) {
    throw;
  } catch (const std::runtime_error& e) {  // zlib: "unexpected end of file", "incorrect data check", ...
    throw NiftiError(path, fmt::format("file is truncated or corrupt: the compressed data of {} cannot be read to "
                                       "their end ({})",
                                       files.data.filename().string(), e.what()));
  }
  return h.image;
}

Image read_nifti(const std::filesystem::path& path, const NiftiReadLimits& limits) {
  Files files;
  const DecodedHeader h = read_header(path, limits, files);
  return Image(h.image, read_voxels(path, files, h));
}

void write_nifti(const std::filesystem::path& path, const Image& image, DataType out, int nifti_version) {
  const std::string name = lower_name(path);
  const bool gz = ends_with(name, ".nii.gz");
  if (!gz && !ends_with(name, ".nii")) throw NiftiError(path, "can only write .nii or .nii.gz files");
  const ImageHeader& header = image.header();
  if (image.data().size() != static_cast<size_t>(header.total_voxels())) {
    throw NiftiError(path, fmt::format("image holds {} values but its header describes {}", image.data().size(),
                                       header.total_voxels()));
  }
  const std::vector<uint8_t> header_bytes = nifti_detail::encode_nifti_header(header, out, nifti_version, path);

  const fs::path temporary = temporary_sibling(path);
  try {
    io::ByteWriter writer(temporary, gz);
    writer.write(header_bytes.data(), header_bytes.size());
    const auto bpv = static_cast<size_t>(bytes_per_voxel(out));
    const std::vector<float>& values = image.data();
    std::vector<uint8_t> buffer(std::min(values.size(), kChunkVoxels) * bpv);
    for (size_t done = 0; done < values.size();) {
      const size_t count = std::min(values.size() - done, kChunkVoxels);
      encode_chunk(values.data() + done, count, out, buffer.data());
      writer.write(buffer.data(), count * bpv);
      done += count;
    }
    writer.close();  // fsynced
    fs::rename(temporary, path);
    io::fsync_directory(path.parent_path());
  } catch (const std::exception& e) {
    std::error_code ec;
    fs::remove(temporary, ec);
    throw NiftiError(path, fmt::format("writing failed: {}", e.what()));
  }
}

}  // namespace rtf
