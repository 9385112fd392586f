// ctest-label: unit
// Plain NIfTI voxel data read and converted on several threads (core/io/parallel_convert.hpp), into a given array or
// a new vector (read part by part as it is zeroed): for every datatype, in
// either byte order, with and without scl_slope/scl_inter, on random bytes (floats' NaN payloads, infinities and
// subnormals included), the values are bit for bit those of one decode_voxels call over the whole data, however the
// data are cut into threads and chunks (sizes that are no multiple of either); read_nifti of a .nii gives the bits of
// the same file compressed (the streaming reader); a file that ends early is reported with the bytes present, and a
// truncated .nii is refused naming the file.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "core/image/voxel_decode.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/parallel_convert.hpp"
#include "tests/support/nifti_bytes.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf {
namespace {

using test::TempDir;

constexpr DataType kTypes[] = {DataType::kUint8,   DataType::kInt8,   DataType::kInt16, DataType::kUint16,
                               DataType::kInt32,   DataType::kUint32, DataType::kInt64, DataType::kUint64,
                               DataType::kFloat32, DataType::kFloat64};

std::vector<std::byte> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> bytes(n);
  for (std::byte& b : bytes) b = static_cast<std::byte>(rng() & 0xFF);
  return bytes;
}

// `offset` bytes of anything, then `data`.
void write_file(const std::filesystem::path& path, size_t offset, const std::vector<std::byte>& data) {
  std::vector<uint8_t> bytes(offset, 0xAB);
  const auto* raw = reinterpret_cast<const uint8_t*>(data.data());
  bytes.insert(bytes.end(), raw, raw + data.size());
  test::write_bytes(path, bytes);
}

void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want, const std::string& where) {
  ASSERT_EQ(got.size(), want.size()) << where;
  for (size_t i = 0; i < want.size(); ++i) {
    uint32_t a = 0, b = 0;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want[i], 4);
    if (a != b) {
      ADD_FAILURE() << where << ": voxel " << i << " is " << got[i] << ", expected " << want[i];
      return;
    }
  }
}

TEST(ParallelConvert, EveryDatatypeScalingAndByteOrderGiveTheSameBitsAsOneDecode) {
  TempDir dir;
  const size_t voxels = 1001;  // odd: no thread or chunk split divides it
  const size_t offset = 357;
  const VoxelDecoding hows[] = {{},
                                {.byte_swapped = true},
                                {.slope = 0.37, .inter = -12.5},
                                {.byte_swapped = true, .slope = -3.0, .inter = 1e6},
                                {.slope = 1e30}};
  for (const DataType type : kTypes) {
    const size_t bpv = static_cast<size_t>(bytes_per_voxel(type));
    const std::vector<std::byte> data = random_bytes(voxels * bpv, static_cast<uint32_t>(type));
    const auto path = dir / "data.raw";
    write_file(path, offset, data);
    for (const VoxelDecoding& how : hows) {
      std::vector<float> want(voxels);
      decode_voxels(type, data, want, how);
      for (const size_t threads : {1, 2, 3, 7, 16}) {
        for (const size_t chunk_bytes : {size_t{1}, size_t{40}, size_t{1} << 20}) {
          const std::string where =
              fmt::format("{} swapped {} slope {} inter {}, {} threads, chunks of {} bytes", to_string(type),
                          how.byte_swapped, how.slope, how.inter, threads, chunk_bytes);
          std::vector<float> got(voxels, -1.0f);
          const uint64_t present =
              io::read_voxels_parallel(path, offset, type, how, got, {.threads = threads, .chunk_bytes = chunk_bytes});
          EXPECT_EQ(present, voxels * bpv) << where;
          expect_same_bits(got, want, where);
          uint64_t made_present = 0;
          const std::vector<float> made = io::read_voxels_parallel(path, offset, type, how, voxels, made_present,
                                                                   {.threads = threads, .chunk_bytes = chunk_bytes});
          EXPECT_EQ(made_present, voxels * bpv) << where;
          expect_same_bits(made, want, where + " (into a new vector)");
        }
      }
    }
  }
}

TEST(ParallelConvert, MoreThreadsThanVoxelsAndNoVoxels) {
  TempDir dir;
  const std::vector<std::byte> data = random_bytes(3 * 2, 5);
  write_file(dir / "small.raw", 0, data);
  std::vector<float> want(3), got(3);
  decode_voxels(DataType::kInt16, data, want);
  EXPECT_EQ(io::read_voxels_parallel(dir / "small.raw", 0, DataType::kInt16, {}, got, {.threads = 8}), 6u);
  expect_same_bits(got, want, "3 voxels on 8 threads");
  std::vector<float> none;
  EXPECT_EQ(io::read_voxels_parallel(dir / "small.raw", 0, DataType::kInt16, {}, none), 0u);
  uint64_t present = 1;
  EXPECT_TRUE(io::read_voxels_parallel(dir / "small.raw", 0, DataType::kInt16, {}, 0, present).empty());
  EXPECT_EQ(present, 0u);
}

TEST(ParallelConvert, AFileThatEndsEarlyReportsTheBytesPresent) {
  TempDir dir;
  for (const DataType type : {DataType::kFloat32, DataType::kInt16}) {  // read straight into the result, and decoded
    const size_t bpv = static_cast<size_t>(bytes_per_voxel(type));
    const size_t voxels = 1000;
    const size_t stored = 611 * bpv + 1;  // ends inside a voxel of the fourth part of seven
    write_file(dir / "short.raw", 100, random_bytes(stored, 9));
    for (const size_t threads : {1, 7}) {
      std::vector<float> got(voxels);
      EXPECT_EQ(
          io::read_voxels_parallel(dir / "short.raw", 100, type, {}, got, {.threads = threads, .chunk_bytes = 64}),
          stored)
          << to_string(type) << ", " << threads << " threads";
    }
    uint64_t present = 0;
    (void)io::read_voxels_parallel(dir / "short.raw", 100, type, {}, voxels, present, {.threads = 7});
    EXPECT_EQ(present, stored) << to_string(type) << ", into a new vector";
    std::vector<float> got(voxels);
    EXPECT_EQ(io::read_voxels_parallel(dir / "short.raw", 5000, type, {}, got, {.threads = 3}), 0u);  // past the end
  }
}

TEST(ParallelConvert, AMissingFileIsAnErrorWithTheSystemsReason) {
  TempDir dir;
  std::vector<float> got(4);
  try {
    io::read_voxels_parallel(dir / "missing.raw", 0, DataType::kFloat32, {}, got);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
}

TEST(ParallelConvert, AllocatedFloatsAreZeros) {
  for (const size_t n :
       {size_t{0}, size_t{5}, io::ParallelReadOptions::kPopulateBytes / 4 + 1234}) {  // populated first
    const std::vector<float> values = io::allocate_floats(n, 3);
    ASSERT_EQ(values.size(), n);
    EXPECT_TRUE(std::all_of(values.begin(), values.end(), [](float v) { return v == 0.0f; })) << n;
  }
}

// A 4D .nii of every datatype with scaling, written by hand: read_nifti of it (the parallel reader) and of the same
// bytes gzip-compressed (the streaming reader) agree bit for bit. The 8-byte types fill two threads' shares.
TEST(ParallelConvert, ReadNiftiOfAPlainFileMatchesTheCompressedOne) {
  TempDir dir;
  for (const DataType type : kTypes) {
    const auto bpv = static_cast<int16_t>(bytes_per_voxel(type));
    test::Nifti1Spec s;
    s.datatype = static_cast<int16_t>(type);
    s.bitpix = static_cast<int16_t>(8 * bpv);
    s.dim = {4, 37, 41, 23, 61, 1, 1, 1};  // 2.1 M voxels
    s.scl_slope = type == DataType::kFloat32 ? 0.0f : 0.25f;
    s.scl_inter = type == DataType::kFloat32 ? 0.0f : 7.5f;
    std::vector<uint8_t> bytes = test::nifti1_header(s);
    const std::vector<std::byte> data = random_bytes(size_t{37} * 41 * 23 * 61 * static_cast<size_t>(bpv), 77);
    const auto* raw = reinterpret_cast<const uint8_t*>(data.data());
    bytes.insert(bytes.end(), raw, raw + data.size());
    test::write_bytes(dir / "run.nii", bytes);
    test::write_gzip_bytes(dir / "run.nii.gz", bytes);
    const Image plain = read_nifti(dir / "run.nii");
    const Image packed = read_nifti(dir / "run.nii.gz");
    EXPECT_EQ(plain.nt(), 61);
    expect_same_bits(plain.data(), packed.data(), to_string(type));
  }
}

TEST(ParallelConvert, ATruncatedPlainFileIsRefusedNamingIt) {
  TempDir dir;
  test::Nifti1Spec s;
  s.dim = {4, 64, 64, 30, 20, 1, 1, 1};
  std::vector<uint8_t> bytes = test::nifti1_header(s);
  bytes.resize(bytes.size() + size_t{64} * 64 * 30 * 20 * 4 - 3);  // 3 bytes short of the last voxel
  test::write_bytes(dir / "cut.nii", bytes);
  try {
    (void)read_nifti(dir / "cut.nii");
    FAIL() << "no error";
  } catch (const NiftiError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find((dir / "cut.nii").string()), std::string::npos) << message;
    EXPECT_NE(message.find("truncated"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace rtf
