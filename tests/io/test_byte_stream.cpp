// ctest-label: unit
// ByteWriter's gzip files (core/io/byte_stream.hpp): members of 4 MiB of input compressed in parallel. Fresh random
// bytes of sizes around the member boundary, written in one call and in calls of random lengths, come back whole
// through zlib's gzread (ByteReader) and through Python's gzip module (where /usr/bin/python3 exists); the file's
// bytes do not depend on how the writes were cut; a file of no bytes is a valid empty gzip file; a large write is
// several members (its gzip headers counted). Plain files are written unchanged.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "core/io/byte_stream.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf::io {
namespace {

constexpr size_t kMember = size_t{4} << 20;

std::vector<unsigned char> file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<unsigned char> read_back(const std::filesystem::path& path, size_t expected) {
  ByteReader reader(path, true);
  std::vector<unsigned char> out(expected + 16);
  out.resize(reader.read(out.data(), out.size()));
  return out;
}

// Random bytes with some redundancy (runs), as image data have.
std::vector<unsigned char> random_bytes(std::mt19937_64& rng, size_t n) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = (rng() % 4 == 0) ? static_cast<unsigned char>(rng()) : (i > 0 ? v[i - 1] : 0);
  return v;
}

void write_in_pieces(const std::filesystem::path& path, const std::vector<unsigned char>& data, std::mt19937_64& rng,
                     size_t largest) {
  ByteWriter w(path, true);
  size_t done = 0;
  while (done < data.size()) {
    const size_t n = std::min(data.size() - done, static_cast<size_t>(rng() % (largest + 1)));
    w.write(data.data() + done, n);
    done += n;
  }
  w.close();
}

TEST(ByteWriter, GzipMembersRoundTripWhateverTheWritesAndGiveTheSameBytes) {
  const test::TempDir dir("byte_stream");
  std::mt19937_64 rng(test::test_seed());
  for (const size_t n : {size_t{0}, size_t{1}, kMember - 1, kMember, kMember + 1, 3 * kMember + 12345}) {
    SCOPED_TRACE(::testing::Message() << n << " bytes");
    const std::vector<unsigned char> data = random_bytes(rng, n);
    const auto whole = dir.path() / "whole.gz", pieces = dir.path() / "pieces.gz", small = dir.path() / "small.gz";
    {
      ByteWriter w(whole, true);
      w.write(data.data(), data.size());
      w.close();
    }
    write_in_pieces(pieces, data, rng, 2 * kMember);
    write_in_pieces(small, data, rng, 100000);
    EXPECT_EQ(read_back(whole, n), data);
    EXPECT_EQ(file_bytes(whole), file_bytes(pieces));
    EXPECT_EQ(file_bytes(whole), file_bytes(small));
    // Members: one per started 4 MiB (an empty file one), each opening with gzip's magic and deflate's method.
    const std::vector<unsigned char> bytes = file_bytes(whole);
    size_t headers = 0;
    for (size_t i = 0; i + 3 < bytes.size(); ++i) {
      headers += bytes[i] == 0x1f && bytes[i + 1] == 0x8b && bytes[i + 2] == 8 && bytes[i + 3] == 0 ? 1 : 0;
    }
    EXPECT_GE(headers, std::max<size_t>(1, (n + kMember - 1) / kMember));
    if (std::filesystem::exists("/usr/bin/python3")) {
      const std::string cmd = "/usr/bin/python3 -c \"import gzip,sys; sys.stdout.write(str(len(gzip.open('" +
                              whole.string() + "').read())))\" > " + (dir.path() / "len.txt").string();
      ASSERT_EQ(std::system(cmd.c_str()), 0);
      std::ifstream in(dir.path() / "len.txt");
      size_t python_length = 0;
      in >> python_length;
      EXPECT_EQ(python_length, n);
    }
  }
}

TEST(ByteWriter, PlainFilesAreWrittenUnchanged) {
  const test::TempDir dir("byte_stream");
  std::mt19937_64 rng(test::test_seed());
  const std::vector<unsigned char> data = random_bytes(rng, 100003);
  ByteWriter w(dir.path() / "x.bin", false);
  w.write(data.data(), 40000);
  w.write(data.data() + 40000, data.size() - 40000);
  w.close();
  EXPECT_EQ(file_bytes(dir.path() / "x.bin"), data);
}

}  // namespace
}  // namespace rtf::io
