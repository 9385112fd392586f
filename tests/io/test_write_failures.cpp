// ctest-label: unit
// The core/io writers on a disk that refuses writes: /dev/full (every write fails with ENOSPC) and the process's file
// size limit (RLIMIT_FSIZE: writes past it fail with EFBIG, as a full disk fails part way). Each failure is an
// exception naming the file with the system's reason, never a success; the temporaries are removed and a file already
// at the path is left as it was.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "core/io/atomic_file.hpp"
#include "core/io/byte_stream.hpp"
#include "core/io/checked_file.hpp"
#include "core/io/nifti_io.hpp"
#include "core/scale/chunk_files.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf {
namespace {

namespace fs = std::filesystem;

// The file size limit for one scope (SIGXFSZ ignored, so that the write fails with EFBIG instead of ending the test).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    EXPECT_EQ(::getrlimit(RLIMIT_FSIZE, &saved_), 0);
    previous_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limited = saved_;
    limited.rlim_cur = bytes;
    EXPECT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, previous_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit saved_{};
  void (*previous_)(int) = nullptr;
};

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

std::string text_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(WriteFailures, CheckedFileOnDevFullReportsNoSpace) {
  const std::string error = error_of([] {
    io::CheckedFile out("/dev/full");
    out.write(std::string(8192, 'x'));
    out.close();
  });
  EXPECT_NE(error.find("/dev/full: write failed: No space left on device"), std::string::npos) << error;
}

// Small writes are gathered and written at close(): the failure shows there, with the file and the reason.
TEST(WriteFailures, ByteWriterOnDevFullFailsAtWriteOrClose) {
  for (const bool gzip : {false, true}) {
    const std::string error = error_of([gzip] {
      io::ByteWriter out("/dev/full", gzip);
      const std::vector<unsigned char> bytes(1000, 7);
      out.write(bytes.data(), bytes.size());
      out.close();
    });
    EXPECT_NE(error.find("/dev/full: write failed: No space left on device"), std::string::npos)
        << (gzip ? "gzip: " : "plain: ") << error;
  }
}

TEST(WriteFailures, AtomicTextRemovesItsPartialAndKeepsTheOldFile) {
  const test::TempDir dir;
  const fs::path path = dir / "report.json";
  write_text_atomically(path, "old\n");
  std::string error;
  {
    const FileSizeLimit limit(4096);
    error = error_of([&] { write_text_atomically(path, std::string(100000, 'y')); });
  }
  EXPECT_NE(error.find("report.json.partial: write failed: File too large"), std::string::npos) << error;
  EXPECT_EQ(text_of(path), "old\n");
  EXPECT_EQ(listing(dir.path()), std::vector<std::string>{"report.json"});
}

TEST(WriteFailures, NiftiGzWriteFailureIsAnErrorAndLeavesNothing) {
  const test::TempDir dir;
  ImageHeader h;
  h.dims = {64, 48, 20};
  Image image(h);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (float& v : image.data()) v = u(rng);  // 240 KiB of float noise: gzip cannot make it fit in 64 KiB
  for (const char* name : {"map.nii.gz", "map.nii"}) {
    std::string error;
    {
      const FileSizeLimit limit(65536);
      error = error_of([&] { write_nifti(dir / name, image); });
    }
    EXPECT_NE(error.find(name), std::string::npos) << error;
    EXPECT_NE(error.find("File too large"), std::string::npos) << error;
    EXPECT_TRUE(listing(dir.path()).empty()) << name << ": left " << listing(dir.path()).front();
  }
}

// A chunk file that cannot be written is an error with the reason, and its 2 MB temporary does not stay to fill the
// disk.
TEST(WriteFailures, ChunkFileWriteFailureRemovesItsPartial) {
  const test::TempDir dir;
  const ChunkBytes bytes(size_t{2} << 20, 3);
  std::string error;
  {
    const FileSizeLimit limit(65536);
    error = error_of([&] { write_chunk_file(dir.path(), "key", 3, bytes); });
  }
  EXPECT_NE(error.find("chunk-000003.bin.partial: write failed: File too large"), std::string::npos) << error;
  EXPECT_TRUE(listing(dir.path()).empty()) << "left " << listing(dir.path()).front();
}

}  // namespace
}  // namespace rtf
