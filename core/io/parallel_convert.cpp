// read_voxels_parallel: one file descriptor shared by every thread (pread() keeps no file position), each thread its
// part of the voxels, read in chunks into a buffer of its own and decoded from there (native unscaled float32 is read
// straight into the result: decoding it copies the bits). Fresh storage: madvise(MADV_POPULATE_WRITE) over parts of it
// on threads, before the vector's own zero fill; the vector-making reader grows the vector part by part and starts
// each part's thread as soon as its part is zeroed, so that the reading overlaps the (one-threaded) zero fill.
#include "core/io/parallel_convert.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "core/util/host_threads.hpp"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels answer EINVAL and the pages fault in as they are written
#endif

namespace rtf::io {
namespace {

constexpr size_t kMaxPread = size_t{1} << 30;  // Linux moves at most ~2 GiB a call; ask for less

class Fd {
 public:
  explicit Fd(const std::filesystem::path& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) throw std::runtime_error(std::strerror(errno));
  }
  ~Fd() { ::close(fd_); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Reads up to n bytes at `offset`; returns how many were read (fewer only at the end of the file).
size_t pread_fully(int fd, void* dst, size_t n, uint64_t offset) {
  auto* out = static_cast<char*>(dst);
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, out + done, std::min(n - done, kMaxPread), static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::strerror(errno));
    }
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

size_t workers_for(size_t requested, uint64_t bytes) {
  if (requested > 0) return requested;
  const auto by_size = static_cast<size_t>(bytes / ParallelReadOptions::kMinPartBytes);
  return std::clamp<size_t>(by_size, 1, host_thread_count());
}

// Faults in the pages of [data, data + bytes) on `threads` threads (0: up to 8; more contend in the kernel):
// measured on the GPU machine's 16 cores for 1.9 GB, 0.31 s on 8 threads, 0.47 s on 16, 1.2-1.4 s for one thread
// faulting them as it writes. Transparent huge pages (madvise) faulted in 0.2 s there but from 0.09 s to 2.3 s on
// the development VM (a huge page may first need compaction), so they are not asked for. Buffers below
// kPopulateBytes are left alone: their faults cost little.
void populate(void* data, size_t bytes, size_t threads) {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  if (bytes < ParallelReadOptions::kPopulateBytes || page == 0) return;
  const auto start = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = (start + page - 1) / page * page;  // the whole pages inside
  const uintptr_t last = (start + bytes) / page * page;
  if (last <= first) return;
  const size_t pages = (last - first) / page;
  const size_t workers = threads > 0 ? threads : std::min<size_t>(8, host_thread_count());
  host_ranges(pages, workers, [&](size_t begin, size_t end, size_t) {
    if (end > begin) {
      (void)::madvise(reinterpret_cast<void*>(first + begin * page), (end - begin) * page, MADV_POPULATE_WRITE);
    }
  });
}

// One file's voxels read by parts: read(out, begin, end) fills out[begin, end) (out: the first voxel's value) from
// any thread; the smallest end of data met and the first failure are kept for the caller.
class PartReader {
 public:
  PartReader(const std::filesystem::path& path, uint64_t offset, DataType type, const VoxelDecoding& how, size_t voxels,
             const ParallelReadOptions& options)
      : fd_(path),
        offset_(offset),
        type_(type),
        how_(how),
        bpv_(static_cast<size_t>(bytes_per_voxel(type))),
        direct_(type == DataType::kFloat32 && !how.byte_swapped && how.slope == 0.0),
        chunk_voxels_(std::max<size_t>(1, options.chunk_bytes / std::max<size_t>(bpv_, 1))),
        present_(static_cast<uint64_t>(voxels) * bpv_) {
    if (bpv_ == 0) throw std::invalid_argument("read_voxels_parallel: unknown datatype");
  }

  void read(float* out, size_t begin, size_t end) noexcept {
    try {
      std::vector<std::byte> buffer(direct_ ? 0 : std::min(end - begin, chunk_voxels_) * bpv_);
      for (size_t first = begin; first < end;) {
        const size_t count = direct_ ? end - first : std::min(end - first, chunk_voxels_);
        const uint64_t at = static_cast<uint64_t>(first) * bpv_;
        void* dst = direct_ ? static_cast<void*>(out + first) : static_cast<void*>(buffer.data());
        const size_t got = pread_fully(fd_.get(), dst, count * bpv_, offset_ + at);
        if (got < count * bpv_) {
          const std::lock_guard lock(mutex_);
          present_ = std::min(present_, at + got);
          return;
        }
        if (!direct_) {
          decode_voxels(type_, std::span<const std::byte>(buffer.data(), count * bpv_),
                        std::span<float>(out + first, count), how_);
        }
        first += count;
      }
    } catch (...) {
      const std::lock_guard lock(mutex_);
      if (!failure_) failure_ = std::current_exception();
    }
  }

  // The bytes present; rethrows the first failure.
  uint64_t finish() const {
    if (failure_) std::rethrow_exception(failure_);
    return present_;
  }

 private:
  Fd fd_;
  uint64_t offset_;
  DataType type_;
  VoxelDecoding how_;
  size_t bpv_;
  bool direct_;
  size_t chunk_voxels_;
  std::mutex mutex_;
  uint64_t present_;  // the smallest end of data any part met
  std::exception_ptr failure_;
};

}  // namespace

uint64_t read_voxels_parallel(const std::filesystem::path& path, uint64_t offset, DataType type,
                              const VoxelDecoding& how, std::span<float> out, const ParallelReadOptions& options) {
  PartReader reader(path, offset, type, how, out.size(), options);
  const size_t workers =
      workers_for(options.threads, static_cast<uint64_t>(out.size()) * static_cast<size_t>(bytes_per_voxel(type)));
  host_ranges(out.size(), workers, [&](size_t begin, size_t end, size_t) { reader.read(out.data(), begin, end); });
  return reader.finish();
}

std::vector<float> read_voxels_parallel(const std::filesystem::path& path, uint64_t offset, DataType type,
                                        const VoxelDecoding& how, size_t count, uint64_t& present,
                                        const ParallelReadOptions& options) {
  PartReader reader(path, offset, type, how, count, options);
  const size_t workers =
      workers_for(options.threads, static_cast<uint64_t>(count) * static_cast<size_t>(bytes_per_voxel(type)));
  std::vector<float> values;
  values.reserve(count);
  populate(values.data(), count * sizeof(float), 0);
  float* const data = values.data();  // stays: resize() within the capacity never moves the storage
  std::vector<std::thread> threads;
  const auto join = [&]() noexcept {
    for (std::thread& t : threads) t.join();
  };
  try {
    for (size_t w = 0; w < workers; ++w) {
      const size_t begin = count * w / workers, end = count * (w + 1) / workers;
      values.resize(end);  // zeroes the part (the vector's own fill: one thread), then a thread reads it
      threads.emplace_back([&reader, data, begin, end] { reader.read(data, begin, end); });
    }
  } catch (...) {
    join();
    throw;
  }
  join();
  present = reader.finish();
  return values;
}

std::vector<float> allocate_floats(size_t n, size_t threads) {
  std::vector<float> values;
  values.reserve(n);
  populate(values.data(), n * sizeof(float), threads);
  values.resize(n);
  return values;
}

}  // namespace rtf::io
