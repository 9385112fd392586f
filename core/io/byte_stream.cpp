// ByteReader over stdio (plain files) or zlib's gzFile (compressed files); ByteWriter over a CheckedFile (every write,
// the fsync and the close checked, errors naming the file with the system's reason), compressing in
// gzip members of kMemberBytes input bytes, each deflated alone (RFC 1952 allows a file of several members; zlib's
// gzread, Python's gzip and FSL's znzlib read them as one stream), the members of a large write on all host cores.
#include "core/io/byte_stream.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "core/io/checked_file.hpp"
#include "core/util/host_threads.hpp"

namespace rtf::io {
namespace {

constexpr size_t kMaxGzChunk = size_t{1} << 30;   // gzread takes unsigned int lengths
constexpr size_t kMemberBytes = size_t{4} << 20;  // input bytes per gzip member (the last may hold fewer)

// One gzip member (header, deflate level 1, CRC-32 and length trailer) of n bytes.
std::vector<unsigned char> gzip_member(const unsigned char* data, size_t n) {
  z_stream z{};
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("compression could not start (zlib)");
  }
  std::vector<unsigned char> out(deflateBound(&z, static_cast<uLong>(n)) + 64);
  z.next_in = const_cast<unsigned char*>(data);  // NOLINT(cppcoreguidelines-pro-type-const-cast): zlib's API
  z.avail_in = static_cast<uInt>(n);
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  const int r = deflate(&z, Z_FINISH);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  if (r != Z_STREAM_END) throw std::runtime_error(fmt::format("compression failed (zlib code {})", r));
  return out;
}

std::string gz_error_text(gzFile gz) {
  int code = Z_OK;
  const char* text = gzerror(gz, &code);
  if (code == Z_ERRNO) return std::strerror(errno);
  return text != nullptr && *text != '\0' ? text : "unknown zlib error";
}

}  // namespace

bool has_gz_extension(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".gz";
}

struct ByteReader::Impl {
  std::FILE* file = nullptr;
  gzFile gz = nullptr;
};

ByteReader::ByteReader(const std::filesystem::path& path, bool gzip) : impl_(std::make_unique<Impl>()) {
  if (gzip) {
    impl_->gz = gzopen(path.c_str(), "rb");
    if (impl_->gz == nullptr) {
      throw std::runtime_error(errno != 0 ? std::strerror(errno) : "gzopen failed");
    }
    gzbuffer(impl_->gz, 1u << 18);
  } else {
    impl_->file = std::fopen(path.c_str(), "rb");
    if (impl_->file == nullptr) throw std::runtime_error(std::strerror(errno));
  }
}

ByteReader::~ByteReader() {
  if (impl_->gz != nullptr) gzclose(impl_->gz);
  if (impl_->file != nullptr) std::fclose(impl_->file);
}

size_t ByteReader::read(void* dst, size_t n) {
  auto* out = static_cast<char*>(dst);
  size_t done = 0;
  while (done < n) {
    const size_t want = std::min(n - done, kMaxGzChunk);
    size_t got = 0;
    if (impl_->gz != nullptr) {
      const int r = gzread(impl_->gz, out + done, static_cast<unsigned>(want));
      if (r < 0) throw std::runtime_error(fmt::format("decompression failed: {}", gz_error_text(impl_->gz)));
      got = static_cast<size_t>(r);
    } else {
      got = std::fread(out + done, 1, want, impl_->file);
      if (got < want && std::ferror(impl_->file)) throw std::runtime_error(std::strerror(errno));
    }
    done += got;
    if (got < want) break;  // end of data
  }
  return done;
}

uint64_t ByteReader::skip(uint64_t n) {
  // Reading and discarding works for both kinds and never seeks past the end.
  char buffer[1 << 14];
  uint64_t done = 0;
  while (done < n) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(n - done, sizeof(buffer)));
    const size_t got = read(buffer, want);
    done += got;
    if (got < want) break;
  }
  return done;
}

struct ByteWriter::Impl {
  explicit Impl(const std::filesystem::path& path) : file(path) {}
  CheckedFile file;
  bool gzip = false, wrote_member = false, closed = false;
  std::vector<unsigned char> pending;  // gzip: input not yet in a member
  std::vector<unsigned char> buffer;   // small writes gathered (the NIfTI header) before one write call

  void flush() {
    file.write(buffer.data(), buffer.size());
    buffer.clear();
  }
  void put(const void* bytes, size_t n) {
    constexpr size_t kBuffer = size_t{1} << 16;
    if (buffer.size() + n <= kBuffer) {
      const auto* in = static_cast<const unsigned char*>(bytes);
      buffer.insert(buffer.end(), in, in + n);
      return;
    }
    flush();
    file.write(bytes, n);
  }
  // Members of [data, data + n) cut every kMemberBytes (a short last one only when `last`), compressed on the host's
  // cores and written in order; returns the bytes taken.
  size_t put_members(const unsigned char* data, size_t n, bool last) {
    const size_t members = last ? std::max<size_t>(1, (n + kMemberBytes - 1) / kMemberBytes) : n / kMemberBytes;
    std::vector<std::vector<unsigned char>> packed(members);
    host_ranges(members, std::min(members, host_thread_count()), [&](size_t begin, size_t end, size_t) {
      for (size_t m = begin; m < end; ++m) {
        const size_t first = m * kMemberBytes;
        packed[m] = gzip_member(data + first, std::min(kMemberBytes, n - std::min(n, first)));
      }
    });
    for (const auto& member : packed) put(member.data(), member.size());
    wrote_member = wrote_member || members > 0;
    return std::min(n, members * kMemberBytes);
  }
};

ByteWriter::ByteWriter(const std::filesystem::path& path, bool gzip) : impl_(std::make_unique<Impl>(path)) {
  impl_->gzip = gzip;
}

ByteWriter::~ByteWriter() = default;

void ByteWriter::write(const void* src, size_t n) {
  const auto* in = static_cast<const unsigned char*>(src);
  if (!impl_->gzip) {
    impl_->put(in, n);
    return;
  }
  // Input gathers until it fills a batch of members, one per host thread (at most 16: 64 MiB), compressed together.
  const size_t batch = kMemberBytes * std::min<size_t>(16, host_thread_count());
  std::vector<unsigned char>& pending = impl_->pending;
  if (pending.empty() && n >= batch) {
    const size_t taken = impl_->put_members(in, n, false);
    pending.assign(in + taken, in + n);
    return;
  }
  pending.insert(pending.end(), in, in + n);
  if (pending.size() >= batch) {
    const size_t taken = impl_->put_members(pending.data(), pending.size(), false);
    pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(taken));
  }
}

void ByteWriter::close() {
  if (impl_->closed) return;
  impl_->closed = true;
  if (impl_->gzip && (!impl_->pending.empty() || !impl_->wrote_member)) {
    impl_->put_members(impl_->pending.data(), impl_->pending.size(), true);  // an empty file is one empty member
    impl_->pending.clear();
  }
  impl_->flush();
  impl_->file.close();
}

}  // namespace rtf::io
