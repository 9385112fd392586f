// .npy encoding and a stored (uncompressed) zip writer for .npz archives.
#include "core/io/npz_writer.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <fstream>
#include <limits>
#include <stdexcept>

namespace rtf::io {
namespace {

constexpr uint64_t kZipLimit = std::numeric_limits<uint32_t>::max();

size_t dtype_size(const std::string& descr) {
  if (descr.size() < 3) throw std::invalid_argument("npy: dtype " + descr);
  return static_cast<size_t>(std::stoul(descr.substr(2)));
}

void put16(std::vector<uint8_t>& out, uint32_t v) {
  out.push_back(static_cast<uint8_t>(v & 0xFF));
  out.push_back(static_cast<uint8_t>((v >> 8) & 0xFF));
}
void put32(std::vector<uint8_t>& out, uint32_t v) {
  put16(out, v & 0xFFFF);
  put16(out, v >> 16);
}
void put64(std::vector<uint8_t>& out, uint64_t v) {
  put32(out, static_cast<uint32_t>(v & 0xFFFFFFFFU));
  put32(out, static_cast<uint32_t>(v >> 32));
}

}  // namespace

std::vector<uint8_t> encode_npy(const NpyMember& m) {
  uint64_t count = 1;
  for (int64_t d : m.shape) {
    if (d < 0) throw std::invalid_argument("npy: negative dimension");
    count *= static_cast<uint64_t>(d);
  }
  if (count * dtype_size(m.descr) != m.data.size()) {
    throw std::invalid_argument(
        fmt::format("npy {}: {} bytes for {} values of {}", m.name, m.data.size(), count, m.descr));
  }
  std::string shape = "(";
  for (size_t i = 0; i < m.shape.size(); ++i)
    shape += fmt::format("{}{}", m.shape[i], i + 1 < m.shape.size() ? ", " : "");
  if (m.shape.size() == 1) shape += ",";
  shape += ")";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", m.descr, shape);
  // Magic (6) + version (2) + length (2) + header, padded with spaces and ended by '\n' to a multiple of 64.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::vector<uint8_t> out{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  put16(out, static_cast<uint32_t>(header.size()));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), m.data.begin(), m.data.end());
  return out;
}

void write_npz(const std::filesystem::path& path, const std::vector<NpyMember>& members, bool force_zip64) {
  struct Entry {
    std::string name;
    uint32_t crc = 0;
    uint64_t size = 0, offset = 0;
  };
  std::vector<std::vector<uint8_t>> files;
  uint64_t total = 22;
  for (const NpyMember& m : members) {
    files.push_back(encode_npy(m));
    total += 30 + 46 + 2 * (m.name.size() + 4) + files.back().size();
  }
  // Zip64 (APPNOTE 4.5.3) for every member when any size or offset could pass 32 bits.
  const bool zip64 = force_zip64 || total > kZipLimit;
  const auto field32 = [&](uint64_t v) { return zip64 ? 0xFFFFFFFFU : static_cast<uint32_t>(v); };
  const uint32_t version = zip64 ? 45 : 20;
  const std::filesystem::path partial = path.string() + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + partial.string());
    std::vector<Entry> entries;
    uint64_t offset = 0;
    for (size_t k = 0; k < files.size(); ++k) {
      Entry e{members[k].name + ".npy", 0, files[k].size(), offset};
      uLong crc = crc32(0L, Z_NULL, 0);
      const uint8_t* p = files[k].data();
      for (size_t left = files[k].size(); left > 0;) {  // crc32 takes a uInt length
        const auto chunk = static_cast<uInt>(std::min<size_t>(left, 1U << 30));
        crc = crc32(crc, p, chunk);
        p += chunk;
        left -= chunk;
      }
      e.crc = static_cast<uint32_t>(crc);
      std::vector<uint8_t> local;
      put32(local, 0x04034b50);
      put16(local, version);
      put16(local, 0);     // flags
      put16(local, 0);     // stored
      put16(local, 0);     // time
      put16(local, 0x21);  // date: 1980-01-01
      put32(local, e.crc);
      put32(local, field32(e.size));
      put32(local, field32(e.size));
      put16(local, static_cast<uint32_t>(e.name.size()));
      put16(local, zip64 ? 20 : 0);  // extra: the zip64 sizes
      local.insert(local.end(), e.name.begin(), e.name.end());
      if (zip64) {
        put16(local, 0x0001);
        put16(local, 16);
        put64(local, e.size);
        put64(local, e.size);
      }
      out.write(reinterpret_cast<const char*>(local.data()), static_cast<std::streamsize>(local.size()));
      out.write(reinterpret_cast<const char*>(files[k].data()), static_cast<std::streamsize>(files[k].size()));
      offset += local.size() + files[k].size();
      entries.push_back(e);
    }
    std::vector<uint8_t> central;
    for (const Entry& e : entries) {
      put32(central, 0x02014b50);
      put16(central, version);  // made by
      put16(central, version);  // needed
      put16(central, 0);
      put16(central, 0);
      put16(central, 0);
      put16(central, 0x21);
      put32(central, e.crc);
      put32(central, field32(e.size));
      put32(central, field32(e.size));
      put16(central, static_cast<uint32_t>(e.name.size()));
      put16(central, zip64 ? 28 : 0);  // extra
      put16(central, 0);               // comment
      put16(central, 0);               // disk
      put16(central, 0);               // internal attributes
      put32(central, 0);               // external attributes
      put32(central, field32(e.offset));
      central.insert(central.end(), e.name.begin(), e.name.end());
      if (zip64) {
        put16(central, 0x0001);
        put16(central, 24);
        put64(central, e.size);
        put64(central, e.size);
        put64(central, e.offset);
      }
    }
    const uint64_t directory = central.size(), directory_offset = offset;
    const auto count = static_cast<uint64_t>(entries.size());
    if (zip64) {
      put32(central, 0x06064b50);  // zip64 end of central directory record
      put64(central, 44);
      put16(central, 45);
      put16(central, 45);
      put32(central, 0);
      put32(central, 0);
      put64(central, count);
      put64(central, count);
      put64(central, directory);
      put64(central, directory_offset);
      put32(central, 0x07064b50);  // its locator
      put32(central, 0);
      put64(central, directory_offset + directory);
      put32(central, 1);
    }
    put32(central, 0x06054b50);  // end of central directory
    put16(central, 0);
    put16(central, 0);
    put16(central, zip64 ? 0xFFFF : static_cast<uint32_t>(count));
    put16(central, zip64 ? 0xFFFF : static_cast<uint32_t>(count));
    put32(central, field32(directory));
    put32(central, field32(directory_offset));
    put16(central, 0);
    out.write(reinterpret_cast<const char*>(central.data()), static_cast<std::streamsize>(central.size()));
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + partial.string());
  }
  std::filesystem::rename(partial, path);
}

}  // namespace rtf::io
