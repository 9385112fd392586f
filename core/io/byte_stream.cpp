// ByteReader / ByteWriter over stdio (plain files) or zlib's gzFile (compressed files).
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

namespace rtf::io {
namespace {

constexpr size_t kMaxGzChunk = size_t{1} << 30;  // gzread/gzwrite take unsigned int lengths

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
  std::FILE* file = nullptr;
  gzFile gz = nullptr;
};

ByteWriter::ByteWriter(const std::filesystem::path& path, bool gzip) : impl_(std::make_unique<Impl>()) {
  if (gzip) {
    impl_->gz = gzopen(path.c_str(), "wb1");
    if (impl_->gz == nullptr) {
      throw std::runtime_error(errno != 0 ? std::strerror(errno) : "gzopen failed");
    }
    gzbuffer(impl_->gz, 1u << 18);
  } else {
    impl_->file = std::fopen(path.c_str(), "wb");
    if (impl_->file == nullptr) throw std::runtime_error(std::strerror(errno));
  }
}

ByteWriter::~ByteWriter() {
  if (impl_->gz != nullptr) gzclose(impl_->gz);
  if (impl_->file != nullptr) std::fclose(impl_->file);
}

void ByteWriter::write(const void* src, size_t n) {
  const auto* in = static_cast<const char*>(src);
  size_t done = 0;
  while (done < n) {
    const size_t chunk = std::min(n - done, kMaxGzChunk);
    if (impl_->gz != nullptr) {
      if (gzwrite(impl_->gz, in + done, static_cast<unsigned>(chunk)) != static_cast<int>(chunk)) {
        throw std::runtime_error(fmt::format("compressed write failed: {}", gz_error_text(impl_->gz)));
      }
    } else if (std::fwrite(in + done, 1, chunk, impl_->file) != chunk) {
      throw std::runtime_error(fmt::format("write failed: {}", std::strerror(errno)));
    }
    done += chunk;
  }
}

void ByteWriter::close() {
  if (impl_->gz != nullptr) {
    const int r = gzclose(impl_->gz);
    impl_->gz = nullptr;
    if (r != Z_OK) throw std::runtime_error(fmt::format("closing compressed file failed (zlib code {})", r));
  }
  if (impl_->file != nullptr) {
    const int r = std::fclose(impl_->file);
    impl_->file = nullptr;
    if (r != 0) throw std::runtime_error(fmt::format("closing file failed: {}", std::strerror(errno)));
  }
}

}  // namespace rtf::io
