// ctest-label: unit
// The .npz writer (core/io/npz_writer.hpp), read back by a zip parser written here (local headers, zip64 sizes):
// members given as copies, as views of the caller's bytes and as block producers (int32 widened to int64) hold the
// same .npy bytes; each member's CRC-32, computed over small parallel blocks, equals zlib's crc32 of the whole member
// computed serially; the archive's bytes depend on neither the thread count nor the block size; bad blocks and sizes
// are refused; a write error (file size limit) throws naming the file and leaves no ".partial"; numpy reads a zip64
// archive with a produced member (where /usr/bin/python3 has numpy).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <zlib.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/io/npz_writer.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

struct ZipMember {
  uint32_t crc = 0;
  std::vector<uint8_t> bytes;
};

uint64_t le(const std::vector<uint8_t>& b, size_t at, size_t width) {
  uint64_t v = 0;
  for (size_t k = 0; k < width; ++k) v |= static_cast<uint64_t>(b.at(at + k)) << (8 * k);
  return v;
}

std::vector<uint8_t> file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The stored members, walking the local headers from the start (sizes from the zip64 extra field where 0xFFFFFFFF).
std::map<std::string, ZipMember> parse_zip(const std::vector<uint8_t>& zip) {
  std::map<std::string, ZipMember> members;
  size_t at = 0;
  while (at + 4 <= zip.size() && le(zip, at, 4) == 0x04034b50) {
    EXPECT_EQ(le(zip, at + 8, 2), 0U) << "stored";
    uint64_t size = le(zip, at + 22, 4);
    EXPECT_EQ(le(zip, at + 18, 4), size);
    const size_t name_length = le(zip, at + 26, 2), extra_length = le(zip, at + 28, 2);
    const std::string name(zip.begin() + static_cast<ptrdiff_t>(at + 30),
                           zip.begin() + static_cast<ptrdiff_t>(at + 30 + name_length));
    const size_t extra = at + 30 + name_length;
    if (size == 0xFFFFFFFFU) {
      EXPECT_EQ(le(zip, extra, 2), 1U);
      size = le(zip, extra + 4, 8);
    }
    const size_t data = extra + extra_length;
    ZipMember& m = members[name];
    m.crc = static_cast<uint32_t>(le(zip, at + 14, 4));
    m.bytes.assign(zip.begin() + static_cast<ptrdiff_t>(data), zip.begin() + static_cast<ptrdiff_t>(data + size));
    at = data + size;
  }
  EXPECT_EQ(le(zip, at, 4), 0x02014b50U) << "the central directory follows the members";
  return members;
}

uint32_t serial_crc(const std::vector<uint8_t>& bytes) {
  return static_cast<uint32_t>(crc32(crc32(0L, Z_NULL, 0), bytes.data(), static_cast<uInt>(bytes.size())));
}

std::vector<int32_t> random_ints(size_t count) {
  std::mt19937 rng(test::test_seed());
  std::uniform_int_distribution<int32_t> value(std::numeric_limits<int32_t>::min(),
                                               std::numeric_limits<int32_t>::max());
  std::vector<int32_t> v(count);
  for (int32_t& x : v) x = value(rng);
  return v;
}

TEST(NpzWriter, ViewsAndProducersMatchCopiesWithParallelBlockCrcs) {
  const test::TempDir dir;
  // 100,003 values: many blocks of 4 KiB (and a partial last one) for the view and the widened member.
  const std::vector<int32_t> ints = random_ints(100003);
  const std::vector<int64_t> wide(ints.begin(), ints.end());
  const std::vector<int64_t> shape{static_cast<int64_t>(ints.size())};
  const std::vector<float> none;
  const std::vector<io::NpyMember> members{
      io::npy_view<int32_t>("view", "<i4", shape, ints),
      io::npy_converted<int64_t, int32_t>("widened", "<i8", shape, ints),
      io::npy_member<int32_t>("copy", "<i4", {2}, std::vector<int32_t>{7, -8}),
      io::npy_view<float>("empty", "<f4", {0}, none),
  };
  const auto path = dir / "m.npz";
  io::write_npz(path, members, {.block_bytes = 4096, .workers = 3});
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".partial"));
  const std::vector<uint8_t> archive = file_bytes(path);
  const auto read = parse_zip(archive);
  ASSERT_EQ(read.size(), 4U);
  EXPECT_EQ(read.at("view.npy").bytes, io::encode_npy(io::npy_member<int32_t>("view", "<i4", shape, ints)));
  EXPECT_EQ(read.at("widened.npy").bytes, io::encode_npy(io::npy_member<int64_t>("widened", "<i8", shape, wide)));
  EXPECT_EQ(io::encode_npy(members[1]), read.at("widened.npy").bytes);
  EXPECT_EQ(read.at("copy.npy").bytes, io::encode_npy(members[2]));
  for (const auto& [name, m] : read) EXPECT_EQ(m.crc, serial_crc(m.bytes)) << name;
  ASSERT_GT(read.at("widened.npy").bytes.size(), 100U * 4096U);

  // Neither the thread count nor the block size changes a byte (default 64 MiB: one block per member).
  for (const io::NpzWriteOptions options :
       {io::NpzWriteOptions{.block_bytes = 1024, .workers = 1}, io::NpzWriteOptions{.block_bytes = 4096, .workers = 8},
        io::NpzWriteOptions{.block_bytes = 65536, .workers = 2}, io::NpzWriteOptions{}}) {
    const auto other = dir / "other.npz";
    io::write_npz(other, members, options);
    EXPECT_EQ(file_bytes(other), archive) << options.block_bytes << " bytes a block, " << options.workers << " workers";
  }
}

TEST(NpzWriter, RefusesBadBlocksAndSizes) {
  const test::TempDir dir;
  const auto path = dir / "bad.npz";
  const std::vector<int32_t> ints{1, 2, 3};
  const std::vector<io::NpyMember> good{io::npy_view<int32_t>("a", "<i4", {3}, ints)};
  EXPECT_THROW(io::write_npz(path, good, {.block_bytes = 12}), std::invalid_argument);
  EXPECT_THROW(io::write_npz(path, good, {.block_bytes = 0}), std::invalid_argument);
  EXPECT_THROW(io::write_npz(path, {io::npy_view<int32_t>("a", "<i4", {4}, ints)}), std::invalid_argument);
  io::NpyMember both = io::npy_member<int32_t>("a", "<i4", {3}, ints);
  both.view = both.data;
  EXPECT_THROW(io::write_npz(path, {both}), std::invalid_argument);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".partial"));
  try {
    io::write_npz(dir / "missing" / "x.npz", good);
    ADD_FAILURE() << "no error for a missing directory";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("x.npz"), std::string::npos) << e.what();
  }
}

// A write that fails part way (here the process's file size limit, as a full disk would) throws naming the file,
// removes the ".partial" and leaves an earlier archive at the path as it was.
TEST(NpzWriter, WriteErrorRemovesThePartialFile) {
  const test::TempDir dir;
  const auto path = dir / "full.npz";
  const std::vector<int32_t> small{1, 2};
  io::write_npz(path, {io::npy_view<int32_t>("a", "<i4", {2}, small)});
  const std::vector<uint8_t> before = file_bytes(path);
  const std::vector<int32_t> ints = random_ints(200000);  // 800 kB, over the limit below
  const std::vector<io::NpyMember> members{
      io::npy_converted<int64_t, int32_t>("w", "<i8", {static_cast<int64_t>(ints.size())}, ints)};
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto* previous = std::signal(SIGXFSZ, SIG_IGN);
  rlimit limited = saved;
  limited.rlim_cur = 256 * 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  std::string error;
  try {
    io::write_npz(path, members, {.block_bytes = 64 * 1024, .workers = 2});
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous);
  EXPECT_NE(error.find("full.npz"), std::string::npos) << "error: '" << error << "'";
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".partial"));
  EXPECT_EQ(file_bytes(path), before);
}

// An independent reader: Python's zipfile and numpy on a zip64 archive with a produced member.
TEST(NpzWriter, Zip64WithProducedMemberReadsInNumpy) {
  if (std::system("/usr/bin/python3 -c 'import numpy' > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 with numpy is missing (scripts/setup.sh installs python3-scipy)";
  }
  const test::TempDir dir;
  const auto path = dir / "zip64.npz";
  const std::vector<int32_t> ints{5, -6, 2147483647, -2147483647 - 1, 0};
  io::write_npz(
      path, {io::npy_converted<int64_t, int32_t>("w", "<i8", {5}, ints), io::npy_view<int32_t>("v", "<i4", {5}, ints)},
      {.force_zip64 = true, .block_bytes = 16, .workers = 3});
  const std::string check =
      "/usr/bin/python3 -c \"import numpy as np, sys; d = np.load(sys.argv[1]); "
      "assert d['w'].dtype == np.int64 and d['v'].dtype == np.int32; "
      "assert list(d['w']) == list(d['v']) == [5, -6, 2147483647, -2147483648, 0]\" " +
      path.string();
  EXPECT_EQ(std::system(check.c_str()), 0) << check;
}

}  // namespace
}  // namespace rtf
