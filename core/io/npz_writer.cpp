// .npy encoding and a stored (uncompressed) zip writer for .npz archives: each member's CRC-32 from fixed blocks on
// the host's threads (zlib's crc32 per block, crc32_combine in order), then its bytes streamed in large writes.
#include "core/io/npz_writer.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <exception>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <system_error>

#include "core/io/checked_file.hpp"
#include "core/util/host_threads.hpp"

namespace rtf::io {
namespace {

constexpr uint64_t kZipLimit = std::numeric_limits<uint32_t>::max();
constexpr uint64_t kProducePiece = uint64_t{1} << 20;  // a producer's piece while CRC'ing (one buffer per thread)
constexpr size_t kMaxFillThreads = 16;                 // threads filling one write block of produced bytes

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

// The .npy header (magic, version, length, the dict padded to a multiple of 64); checks the data's size.
std::vector<uint8_t> npy_header(const NpyMember& m) {
  uint64_t count = 1;
  for (int64_t d : m.shape) {
    if (d < 0) throw std::invalid_argument("npy: negative dimension");
    count *= static_cast<uint64_t>(d);
  }
  const int sources = (m.data.empty() ? 0 : 1) + (m.view.empty() ? 0 : 1) + (m.produce ? 1 : 0);
  if (sources > 1) throw std::invalid_argument(fmt::format("npy {}: data given more than one way", m.name));
  if (count * dtype_size(m.descr) != m.data_bytes()) {
    throw std::invalid_argument(
        fmt::format("npy {}: {} bytes for {} values of {}", m.name, m.data_bytes(), count, m.descr));
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
  return out;
}

// The member's bytes when they are in memory (owned or viewed); empty for a producer.
std::span<const uint8_t> stored_bytes(const NpyMember& m) {
  return m.data.empty() ? m.view : std::span<const uint8_t>(m.data);
}

uLong crc_of(uLong crc, std::span<const uint8_t> bytes) {
  for (size_t done = 0; done < bytes.size();) {  // crc32 takes a uInt length
    const auto chunk = static_cast<uInt>(std::min<size_t>(bytes.size() - done, size_t{1} << 30));
    crc = crc32(crc, bytes.data() + done, chunk);
    done += chunk;
  }
  return crc;
}

// f(block, worker) for blocks 0 .. blocks - 1 over the workers' contiguous ranges; the first exception is rethrown.
template <typename F>
void for_blocks(uint64_t blocks, size_t workers, F f) {
  std::exception_ptr failure;
  std::mutex failure_mutex;
  host_ranges(static_cast<size_t>(blocks), workers, [&](size_t begin, size_t end, size_t worker) {
    try {
      for (size_t b = begin; b < end; ++b) f(b, worker);
    } catch (...) {
      const std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
    }
  });
  if (failure) std::rethrow_exception(failure);
}

// The CRC-32 of header + data: the data in fixed blocks of `block_bytes` CRC'd in parallel, combined in order, so
// the result depends on neither the thread count nor the block size.
uint32_t member_crc(const std::vector<uint8_t>& header, const NpyMember& m, uint64_t block_bytes, size_t workers) {
  const uint64_t size = m.data_bytes();
  const uint64_t blocks = (size + block_bytes - 1) / block_bytes;
  std::vector<uLong> crcs(static_cast<size_t>(blocks));
  const std::span<const uint8_t> stored = stored_bytes(m);
  std::vector<std::vector<uint8_t>> pieces(workers);
  for_blocks(blocks, workers, [&](size_t b, size_t worker) {
    const uint64_t begin = b * block_bytes, end = std::min(size, begin + block_bytes);
    uLong crc = crc32(0L, Z_NULL, 0);
    if (!m.produce) {
      crc = crc_of(crc, stored.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin)));
    } else {
      std::vector<uint8_t>& piece = pieces[worker];
      piece.resize(static_cast<size_t>(std::min(kProducePiece, block_bytes)));
      for (uint64_t at = begin; at < end; at += piece.size()) {
        const std::span<uint8_t> out(piece.data(), static_cast<size_t>(std::min<uint64_t>(piece.size(), end - at)));
        m.produce(at, out);
        crc = crc_of(crc, out);
      }
    }
    crcs[b] = crc;
  });
  uLong crc = crc_of(crc32(0L, Z_NULL, 0), header);
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint64_t length = std::min(size, (b + 1) * block_bytes) - b * block_bytes;
    crc = crc32_combine(crc, crcs[static_cast<size_t>(b)], static_cast<z_off_t>(length));
  }
  return static_cast<uint32_t>(crc);
}

// The ".partial" file: every write complete, fsynced and closed, or a std::runtime_error naming the file (with the
// system's reason).
using PartialFile = CheckedFile;

// A producer's bytes in writes of `block_bytes`, each block filled by several threads.
void write_produced(PartialFile& out, const NpyMember& m, uint64_t block_bytes, size_t workers) {
  const uint64_t size = m.produced_bytes;
  std::vector<uint8_t> block(static_cast<size_t>(std::min(block_bytes, size)));
  const size_t fillers = std::min(workers, kMaxFillThreads);
  for (uint64_t begin = 0; begin < size; begin += block_bytes) {
    const auto length = static_cast<size_t>(std::min(block_bytes, size - begin));
    const size_t words = (length + 7) / 8;  // slices start at multiples of 8 bytes
    for_blocks(fillers, fillers, [&](size_t slice, size_t) {
      const size_t first = std::min(length, words * slice / fillers * 8);
      const size_t last = std::min(length, words * (slice + 1) / fillers * 8);
      if (last > first) m.produce(begin + first, std::span<uint8_t>(block.data() + first, last - first));
    });
    out.write(std::span<const uint8_t>(block.data(), length));
  }
}

struct Entry {
  std::string name;
  uint32_t crc = 0;
  uint64_t size = 0, offset = 0;
};

std::vector<uint8_t> local_header(const Entry& e, bool zip64) {
  const auto field32 = [&](uint64_t v) { return zip64 ? 0xFFFFFFFFU : static_cast<uint32_t>(v); };
  std::vector<uint8_t> local;
  put32(local, 0x04034b50);
  put16(local, zip64 ? 45 : 20);
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
  return local;
}

// The central directory, (zip64 end record and locator,) end of central directory.
std::vector<uint8_t> central_directory(const std::vector<Entry>& entries, uint64_t directory_offset, bool zip64) {
  const auto field32 = [&](uint64_t v) { return zip64 ? 0xFFFFFFFFU : static_cast<uint32_t>(v); };
  const uint32_t version = zip64 ? 45 : 20;
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
  const uint64_t directory = central.size();
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
  return central;
}

}  // namespace

uint64_t NpyMember::data_bytes() const {
  if (produce) return produced_bytes;
  return data.empty() ? view.size() : data.size();
}

std::vector<uint8_t> encode_npy(const NpyMember& m) {
  std::vector<uint8_t> out = npy_header(m);
  const size_t header = out.size();
  out.resize(header + static_cast<size_t>(m.data_bytes()));
  if (m.produce) {
    m.produce(0, std::span<uint8_t>(out.data() + header, out.size() - header));
  } else {
    const std::span<const uint8_t> bytes = stored_bytes(m);
    std::copy(bytes.begin(), bytes.end(), out.begin() + static_cast<std::ptrdiff_t>(header));
  }
  return out;
}

void write_npz(const std::filesystem::path& path, const std::vector<NpyMember>& members, bool force_zip64) {
  write_npz(path, members, NpzWriteOptions{.force_zip64 = force_zip64});
}

void write_npz(const std::filesystem::path& path, const std::vector<NpyMember>& members,
               const NpzWriteOptions& options) {
  if (options.block_bytes == 0 || options.block_bytes % 8 != 0) {
    throw std::invalid_argument(fmt::format("npz: block of {} bytes (a positive multiple of 8)", options.block_bytes));
  }
  const size_t workers = options.workers > 0 ? options.workers : host_thread_count();
  std::vector<std::vector<uint8_t>> headers;
  uint64_t total = 22;
  for (const NpyMember& m : members) {
    headers.push_back(npy_header(m));
    total += 30 + 46 + 2 * (m.name.size() + 4) + headers.back().size() + m.data_bytes();
  }
  // Zip64 (APPNOTE 4.5.3) for every member when any size or offset could pass 32 bits.
  const bool zip64 = options.force_zip64 || total > kZipLimit;
  const std::filesystem::path partial = path.string() + ".partial";
  try {
    PartialFile out(partial);
    std::vector<Entry> entries;
    uint64_t offset = 0;
    for (size_t k = 0; k < members.size(); ++k) {
      const NpyMember& m = members[k];
      const Entry e{m.name + ".npy", member_crc(headers[k], m, options.block_bytes, workers),
                    headers[k].size() + m.data_bytes(), offset};
      const std::vector<uint8_t> local = local_header(e, zip64);
      out.write(local);
      out.write(headers[k]);
      if (m.produce) {
        write_produced(out, m, options.block_bytes, workers);
      } else {
        out.write(stored_bytes(m));
      }
      offset += local.size() + e.size;
      entries.push_back(e);
    }
    out.write(central_directory(entries, offset, zip64));
    out.close();
    std::filesystem::rename(partial, path);
    fsync_directory(path.parent_path());
  } catch (const std::filesystem::filesystem_error& error) {
    std::error_code ignored;
    std::filesystem::remove(partial, ignored);
    throw std::runtime_error(fmt::format("cannot write {}: {}", path.string(), error.what()));
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(partial, ignored);
    throw;
  }
}

}  // namespace rtf::io
