// Hand-built NIfTI-1 / NIfTI-2 files for tests: every header field written at its documented byte offset
// (nifti1.h, nifti2.h), in either byte order, without nifticlib, so the reader is checked against the
// format rather than against the library it uses. Defaults describe a valid 2x2x2 float32 image.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace rtf::test {

struct Nifti1Spec {
  std::array<int16_t, 8> dim{3, 2, 2, 2, 1, 1, 1, 1};
  int16_t datatype = 16;  // float32
  int16_t bitpix = 32;
  std::array<float, 8> pixdim{1, 1, 1, 1, 0, 0, 0, 0};
  float vox_offset = 352;
  float scl_slope = 0;
  float scl_inter = 0;
  uint8_t xyzt_units = 2 | 8;  // mm, s
  int16_t qform_code = 0;
  int16_t sform_code = 1;
  std::array<float, 6> quatern{};  // quatern_b, c, d, qoffset_x, y, z
  std::array<std::array<float, 4>, 3> srow{{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}};
  std::string magic{"n+1\0", 4};
  std::string description;
  bool big_endian = false;
};

struct Nifti2Spec {
  std::array<int64_t, 8> dim{3, 2, 2, 2, 1, 1, 1, 1};
  int16_t datatype = 16;
  int16_t bitpix = 32;
  std::array<double, 8> pixdim{1, 1, 1, 1, 0, 0, 0, 0};
  int64_t vox_offset = 544;
  double scl_slope = 0;
  double scl_inter = 0;
  int32_t xyzt_units = 2 | 8;
  int32_t qform_code = 0;
  int32_t sform_code = 1;
  std::array<double, 6> quatern{};
  std::array<std::array<double, 4>, 3> srow{{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}};
  std::string magic{"n+2\0\r\n\x1a\n", 8};
  std::string description;
  bool big_endian = false;
};

// The 348- (540-) byte header followed by a 4-byte empty extender.
std::vector<uint8_t> nifti1_header(const Nifti1Spec& spec);
std::vector<uint8_t> nifti2_header(const Nifti2Spec& spec);

// Appends values in the requested byte order.
template <typename T>
void append_values(std::vector<uint8_t>& bytes, const std::vector<T>& values, bool big_endian);

void write_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes);
void write_gzip_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes);  // gzip-compressed
std::vector<uint8_t> read_bytes(const std::filesystem::path& path);                           // raw file content

}  // namespace rtf::test
