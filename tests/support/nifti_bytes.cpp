// Byte-level NIfTI header construction for tests (offsets from nifti1.h / nifti2.h).
#include "tests/support/nifti_bytes.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "core/io/byte_stream.hpp"

namespace rtf::test {
namespace {

class Encoder {
 public:
  Encoder(size_t size, bool big_endian) : bytes_(size, 0), big_endian_(big_endian) {}

  template <typename T>
  void put(size_t offset, T value) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &value, sizeof(T));
    if (big_endian_) std::reverse(b, b + sizeof(T));
    std::copy(b, b + sizeof(T), bytes_.begin() + static_cast<std::ptrdiff_t>(offset));
  }
  void put_text(size_t offset, const std::string& text, size_t max_len) {
    std::copy_n(text.begin(), std::min(text.size(), max_len), bytes_.begin() + static_cast<std::ptrdiff_t>(offset));
  }
  std::vector<uint8_t> take() { return std::move(bytes_); }

 private:
  std::vector<uint8_t> bytes_;
  bool big_endian_;
};

}  // namespace

std::vector<uint8_t> nifti1_header(const Nifti1Spec& s) {
  Encoder e(352, s.big_endian);
  e.put<int32_t>(0, 348);
  for (size_t i = 0; i < 8; ++i) e.put<int16_t>(40 + 2 * i, s.dim[i]);
  e.put<int16_t>(70, s.datatype);
  e.put<int16_t>(72, s.bitpix);
  for (size_t i = 0; i < 8; ++i) e.put<float>(76 + 4 * i, s.pixdim[i]);
  e.put<float>(108, s.vox_offset);
  e.put<float>(112, s.scl_slope);
  e.put<float>(116, s.scl_inter);
  e.put<uint8_t>(123, s.xyzt_units);
  e.put_text(148, s.description, 80);
  e.put<int16_t>(252, s.qform_code);
  e.put<int16_t>(254, s.sform_code);
  for (size_t i = 0; i < 6; ++i) e.put<float>(256 + 4 * i, s.quatern[i]);
  for (size_t r = 0; r < 3; ++r) {
    for (size_t c = 0; c < 4; ++c) e.put<float>(280 + 16 * r + 4 * c, s.srow[r][c]);
  }
  e.put_text(344, s.magic, 4);
  return e.take();
}

std::vector<uint8_t> nifti2_header(const Nifti2Spec& s) {
  Encoder e(544, s.big_endian);
  e.put<int32_t>(0, 540);
  e.put_text(4, s.magic, 8);
  e.put<int16_t>(12, s.datatype);
  e.put<int16_t>(14, s.bitpix);
  for (size_t i = 0; i < 8; ++i) e.put<int64_t>(16 + 8 * i, s.dim[i]);
  for (size_t i = 0; i < 8; ++i) e.put<double>(104 + 8 * i, s.pixdim[i]);
  e.put<int64_t>(168, s.vox_offset);
  e.put<double>(176, s.scl_slope);
  e.put<double>(184, s.scl_inter);
  e.put_text(240, s.description, 80);
  e.put<int32_t>(344, s.qform_code);
  e.put<int32_t>(348, s.sform_code);
  for (size_t i = 0; i < 6; ++i) e.put<double>(352 + 8 * i, s.quatern[i]);
  for (size_t r = 0; r < 3; ++r) {
    for (size_t c = 0; c < 4; ++c) e.put<double>(400 + 32 * r + 8 * c, s.srow[r][c]);
  }
  e.put<int32_t>(500, s.xyzt_units);
  return e.take();
}

template <typename T>
void append_values(std::vector<uint8_t>& bytes, const std::vector<T>& values, bool big_endian) {
  for (const T& v : values) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    if (big_endian) std::reverse(b, b + sizeof(T));
    bytes.insert(bytes.end(), b, b + sizeof(T));
  }
}

template void append_values<uint8_t>(std::vector<uint8_t>&, const std::vector<uint8_t>&, bool);
template void append_values<int8_t>(std::vector<uint8_t>&, const std::vector<int8_t>&, bool);
template void append_values<int16_t>(std::vector<uint8_t>&, const std::vector<int16_t>&, bool);
template void append_values<uint16_t>(std::vector<uint8_t>&, const std::vector<uint16_t>&, bool);
template void append_values<int32_t>(std::vector<uint8_t>&, const std::vector<int32_t>&, bool);
template void append_values<uint32_t>(std::vector<uint8_t>&, const std::vector<uint32_t>&, bool);
template void append_values<int64_t>(std::vector<uint8_t>&, const std::vector<int64_t>&, bool);
template void append_values<uint64_t>(std::vector<uint8_t>&, const std::vector<uint64_t>&, bool);
template void append_values<float>(std::vector<uint8_t>&, const std::vector<float>&, bool);
template void append_values<double>(std::vector<uint8_t>&, const std::vector<double>&, bool);

void write_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

void write_gzip_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  io::ByteWriter writer(path, /*gzip=*/true);
  writer.write(bytes.data(), bytes.size());
  writer.close();
}

std::vector<uint8_t> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace rtf::test
