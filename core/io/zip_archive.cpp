// Zip central-directory walk and member extraction (stored or raw deflate through zlib), bounds-checked.
#include "core/io/zip_archive.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>

namespace rtf::io {
namespace {

constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr size_t kEndRecordSize = 22;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kLocalHeaderSize = 30;
constexpr uint16_t kMethodStored = 0;
constexpr uint16_t kMethodDeflate = 8;

class Cursor {
 public:
  Cursor(std::span<const uint8_t> bytes, std::string_view source) : bytes_(bytes), source_(source) {}

  [[noreturn]] void fail(std::string_view what) const {
    throw ArrayFileError(fmt::format("{}: not a readable zip archive: {}", source_, what));
  }
  void need(uint64_t offset, uint64_t size, std::string_view what) const {
    if (offset > bytes_.size() || size > bytes_.size() - offset) fail(fmt::format("{} runs past the end", what));
  }
  uint16_t u16(uint64_t offset) const {
    need(offset, 2, "a field");
    return static_cast<uint16_t>(bytes_[offset] | (bytes_[offset + 1] << 8));
  }
  uint32_t u32(uint64_t offset) const {
    need(offset, 4, "a field");
    return static_cast<uint32_t>(bytes_[offset]) | (static_cast<uint32_t>(bytes_[offset + 1]) << 8) |
           (static_cast<uint32_t>(bytes_[offset + 2]) << 16) | (static_cast<uint32_t>(bytes_[offset + 3]) << 24);
  }
  std::span<const uint8_t> slice(uint64_t offset, uint64_t size, std::string_view what) const {
    need(offset, size, what);
    return bytes_.subspan(offset, size);
  }
  size_t size() const { return bytes_.size(); }
  std::string_view source() const { return source_; }

 private:
  std::span<const uint8_t> bytes_;
  std::string_view source_;
};

// Offset of the end-of-central-directory record: the last signature that leaves room for the record and its
// comment (the comment is at most 65535 bytes).
uint64_t find_end_record(const Cursor& c) {
  if (c.size() < kEndRecordSize) c.fail("shorter than an end-of-central-directory record");
  const uint64_t last = c.size() - kEndRecordSize;
  const uint64_t first = last > 65535 ? last - 65535 : 0;
  for (uint64_t pos = last + 1; pos-- > first;) {
    if (c.u32(pos) == kEndOfCentralDirectory && pos + kEndRecordSize + c.u16(pos + 20) == c.size()) return pos;
  }
  c.fail("no end-of-central-directory record");
}

std::vector<uint8_t> inflate_raw(std::span<const uint8_t> in, uint64_t out_size, const Cursor& c,
                                 const std::string& name) {
  std::vector<uint8_t> out(out_size);
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) c.fail("zlib inflateInit2 failed");
  zs.next_in = const_cast<Bytef*>(in.data());  // zlib's API is not const-correct; it does not write the input
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&zs, Z_FINISH);
  const uint64_t produced = zs.total_out;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END || produced != out_size) {
    c.fail(fmt::format("member '{}' does not inflate to its stated {} bytes (zlib code {})", name, out_size, rc));
  }
  return out;
}

}  // namespace

std::map<std::string, std::vector<uint8_t>> read_zip_members(std::span<const uint8_t> archive,
                                                             std::string_view source) {
  const Cursor c(archive, source);
  const uint64_t end = find_end_record(c);
  if (c.u16(end + 4) != 0 || c.u16(end + 6) != 0) c.fail("multi-disk archives are not supported");
  const uint16_t entries = c.u16(end + 10);
  const uint32_t directory_size = c.u32(end + 12);
  const uint32_t directory_offset = c.u32(end + 16);
  if (entries == 0xffff || directory_size == 0xffffffffu || directory_offset == 0xffffffffu) {
    c.fail("zip64 archives are not supported");
  }
  c.need(directory_offset, directory_size, "the central directory");

  std::map<std::string, std::vector<uint8_t>> members;
  uint64_t pos = directory_offset;
  for (uint32_t i = 0; i < entries; ++i) {
    if (c.u32(pos) != kCentralHeader) c.fail(fmt::format("central directory entry {} has a bad signature", i));
    c.need(pos, kCentralHeaderSize, "a central directory entry");
    const uint16_t flags = c.u16(pos + 8);
    const uint16_t method = c.u16(pos + 10);
    const uint32_t crc = c.u32(pos + 16);
    const uint32_t packed_size = c.u32(pos + 20);
    const uint32_t size = c.u32(pos + 24);
    const uint16_t name_length = c.u16(pos + 28);
    const uint16_t extra_length = c.u16(pos + 30);
    const uint16_t comment_length = c.u16(pos + 32);
    const uint32_t local_offset = c.u32(pos + 42);
    const auto name_bytes = c.slice(pos + kCentralHeaderSize, name_length, "a member name");
    std::string name(name_bytes.begin(), name_bytes.end());
    pos += kCentralHeaderSize + uint64_t{name_length} + extra_length + comment_length;

    if ((flags & 1u) != 0) c.fail(fmt::format("member '{}' is encrypted", name));
    if (packed_size == 0xffffffffu || size == 0xffffffffu || local_offset == 0xffffffffu) {
      c.fail(fmt::format("member '{}' needs zip64, which is not supported", name));
    }
    if (size > kMaxArrayFileBytes) c.fail(fmt::format("member '{}' is larger than {} bytes", name, kMaxArrayFileBytes));
    if (c.u32(local_offset) != kLocalHeader) c.fail(fmt::format("member '{}' has no local header", name));
    c.need(local_offset, kLocalHeaderSize, "a local header");
    const uint64_t data_offset =
        uint64_t{local_offset} + kLocalHeaderSize + c.u16(local_offset + 26) + c.u16(local_offset + 28);
    const auto packed = c.slice(data_offset, packed_size, fmt::format("member '{}'", name));

    std::vector<uint8_t> data;
    if (method == kMethodStored) {
      if (packed_size != size) c.fail(fmt::format("stored member '{}' has two different sizes", name));
      data.assign(packed.begin(), packed.end());
    } else if (method == kMethodDeflate) {
      // Deflate expands at most about 1032:1; a larger claim is corrupt (and would allocate for nothing).
      if (size > uint64_t{packed_size} * 1032 + 64) c.fail(fmt::format("member '{}' claims an impossible size", name));
      data = inflate_raw(packed, size, c, name);
    } else {
      c.fail(
          fmt::format("member '{}' uses compression method {} (only stored and deflate are supported)", name, method));
    }
    const uLong actual_crc = crc32(crc32(0L, Z_NULL, 0), data.data(), static_cast<uInt>(data.size()));
    if (actual_crc != crc) c.fail(fmt::format("member '{}' fails its CRC-32 check", name));
    if (!members.emplace(std::move(name), std::move(data)).second) c.fail("two members have the same name");
  }
  return members;
}

}  // namespace rtf::io
