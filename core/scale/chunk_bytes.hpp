// A chunk's result as bytes (what ranks send and chunk files hold): values appended in order and read back in the
// same order. Plain native-endian copies: every rank of a job runs the same build on the same architecture.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "core/util/host_array.hpp"
#include "core/util/host_threads.hpp"
#include "core/util/huge_pages.hpp"

namespace rtf {

// Sized without zero-filling (core/util/host_array.hpp): a received or read chunk of a dense pass is ~1 GB, which its
// receive or read fills anyway.
using ChunkBytes = HostArray<uint8_t>;

class ChunkWriter {
 public:
  static constexpr size_t kLargeBytes = size_t{64} << 20;  // lists this large get huge pages (core/util/huge_pages.hpp)
  template <typename T>
  ChunkWriter& value(const T& x) {
    static_assert(std::is_trivially_copyable_v<T>);
    append(&x, sizeof(T));
    return *this;
  }
  template <typename T, typename A>
  ChunkWriter& values(const std::vector<T, A>& xs) {
    static_assert(std::is_trivially_copyable_v<T>);
    value(static_cast<uint64_t>(xs.size()));
    if (xs.size() * sizeof(T) >= kLargeBytes) reserve_huge(bytes_, bytes_.size() + xs.size() * sizeof(T));
    append(xs.data(), xs.size() * sizeof(T));
    return *this;
  }
  // Room for `bytes` in all (a writer that knows its size: no growth copies its earlier values again).
  ChunkWriter& reserve(size_t bytes) {
    if (bytes >= kLargeBytes) {
      reserve_huge(bytes_, bytes);
    } else {
      bytes_.reserve(bytes);
    }
    return *this;
  }
  ChunkBytes take() { return std::move(bytes_); }

 private:
  // Large copies run on several threads: most of their time is the first touch of fresh pages (one thread faults in
  // ~0.5 GB/s; measured in bedpost, whose 37,500-voxel block packs 67 MB of samples).
  void append(const void* p, size_t n) {
    if (n == 0) return;
    const size_t at = bytes_.size();
    bytes_.resize(at + n);  // unwritten (HostArray), then copied into
    constexpr size_t kParallelBytes = size_t{8} << 20;
    const size_t threads = n < kParallelBytes ? 1 : std::min<size_t>(8, host_thread_count());
    host_ranges(n, threads, [&](size_t begin, size_t end, size_t) {
      std::memcpy(bytes_.data() + at + begin, static_cast<const uint8_t*>(p) + begin, end - begin);
    });
  }
  ChunkBytes bytes_;
};

class ChunkReader {
 public:
  explicit ChunkReader(const ChunkBytes& bytes) : bytes_(bytes) {}
  template <typename T>
  T value() {
    static_assert(std::is_trivially_copyable_v<T>);
    T x;
    take(&x, sizeof(T));
    return x;
  }
  template <typename T, typename Vector = std::vector<T>>
  Vector values() {
    const auto n = value<uint64_t>();
    if (n > (bytes_.size() - at_) / sizeof(T)) throw std::runtime_error("chunk result: a list runs past the end");
    Vector xs(n);
    take(xs.data(), n * sizeof(T));
    return xs;
  }
  // A list left in place: sets n to its length and returns its first byte (unaligned: copy the values out with
  // memcpy), reading on past it. For lists too large to copy whole before they are placed.
  template <typename T>
  const uint8_t* list_in_place(size_t& n) {
    static_assert(std::is_trivially_copyable_v<T>);
    n = value<uint64_t>();
    if (n > (bytes_.size() - at_) / sizeof(T)) throw std::runtime_error("chunk result: a list runs past the end");
    const uint8_t* first = bytes_.data() + at_;
    at_ += n * sizeof(T);
    return first;
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  void take(void* dst, size_t n) {
    if (n > bytes_.size() - at_) throw std::runtime_error("chunk result: shorter than its contents");
    if (n > 0) std::memcpy(dst, bytes_.data() + at_, n);
    at_ += n;
  }
  const ChunkBytes& bytes_;
  size_t at_ = 0;
};

}  // namespace rtf
