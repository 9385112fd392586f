// Builders of MAT-v5, .npy, zip and stored-block zlib bytes for the reader tests.
#include "tests/support/array_file_bytes.hpp"

#include <algorithm>
#include <cstring>

namespace rtf::test {
namespace {

void put16(Bytes& b, uint32_t v) {
  b.push_back(static_cast<uint8_t>(v & 0xff));
  b.push_back(static_cast<uint8_t>((v >> 8) & 0xff));
}
void put32(Bytes& b, uint32_t v) {
  put16(b, v & 0xffff);
  put16(b, v >> 16);
}
void append(Bytes& b, const Bytes& more) {
  b.insert(b.end(), more.begin(), more.end());
}
Bytes text_bytes(std::string_view s) {
  return {s.begin(), s.end()};
}

constexpr uint32_t kMiInt8 = 1, kMiUint32 = 6, kMiInt32 = 5, kMiDouble = 9, kMiMatrix = 14, kMiCompressed = 15;

Bytes array_header(int cls, std::string_view name, int32_t rows, int32_t cols) {
  Bytes flags;
  put32(flags, static_cast<uint32_t>(cls));
  put32(flags, 0);
  Bytes dims;
  put32(dims, static_cast<uint32_t>(rows));
  put32(dims, static_cast<uint32_t>(cols));
  Bytes out = mat_element(kMiUint32, flags);
  append(out, mat_element(kMiInt32, dims));
  append(out, mat_element(kMiInt8, text_bytes(name)));
  return out;
}

}  // namespace

uint32_t crc32_of(const Bytes& data) {
  uint32_t crc = 0xffffffffu;
  for (const uint8_t byte : data) {
    crc ^= byte;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return crc ^ 0xffffffffu;
}

uint32_t adler32_of(const Bytes& data) {
  uint32_t a = 1, b = 0;
  for (const uint8_t byte : data) {
    a = (a + byte) % 65521;
    b = (b + a) % 65521;
  }
  return (b << 16) | a;
}

Bytes deflate_stored(const Bytes& data) {
  Bytes out;
  size_t pos = 0;
  do {
    const size_t n = std::min<size_t>(65535, data.size() - pos);
    const bool last = pos + n == data.size();
    out.push_back(last ? 1 : 0);  // BFINAL, BTYPE = 00 (stored); the rest of the byte is padding
    put16(out, static_cast<uint32_t>(n));
    put16(out, static_cast<uint32_t>(~n & 0xffff));
    out.insert(out.end(), data.begin() + static_cast<std::ptrdiff_t>(pos),
               data.begin() + static_cast<std::ptrdiff_t>(pos + n));
    pos += n;
  } while (pos < data.size());
  return out;
}

Bytes zlib_stored(const Bytes& data) {
  Bytes out = {0x78, 0x01};  // deflate, 32 KiB window, no dictionary; (0x78 * 256 + 0x01) % 31 == 0
  append(out, deflate_stored(data));
  const uint32_t adler = adler32_of(data);
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>((adler >> shift) & 0xff));
  return out;
}

Bytes mat_element(uint32_t type, const Bytes& data) {
  Bytes out;
  put32(out, type);
  put32(out, static_cast<uint32_t>(data.size()));
  append(out, data);
  while (out.size() % 8 != 0) out.push_back(0);
  return out;
}

Bytes mat_double(std::string_view name, int32_t rows, int32_t cols, const std::vector<double>& column_major) {
  Bytes body = array_header(6, name, rows, cols);
  Bytes values(column_major.size() * 8);
  if (!values.empty()) std::memcpy(values.data(), column_major.data(), values.size());
  append(body, mat_element(kMiDouble, values));
  return mat_element(kMiMatrix, body);
}

Bytes mat_cell(std::string_view name, int32_t rows, int32_t cols, const std::vector<Bytes>& cells) {
  Bytes body = array_header(1, name, rows, cols);
  for (const Bytes& c : cells) append(body, c);
  return mat_element(kMiMatrix, body);
}

Bytes mat_header() {
  std::string text = "MATLAB 5.0 MAT-file, written by rtfmri's tests";
  text.resize(116, ' ');
  Bytes out = text_bytes(text);
  out.resize(124, 0);                   // subsystem data offset
  append(out, {0x00, 0x01, 'I', 'M'});  // version 0x0100, endian indicator as read little-endian
  return out;
}

Bytes mat_compressed(const Bytes& element) {
  const Bytes packed = zlib_stored(element);
  Bytes out;
  put32(out, kMiCompressed);
  put32(out, static_cast<uint32_t>(packed.size()));
  append(out, packed);  // compressed elements are not padded
  return out;
}

Bytes npy_f8(const std::vector<int64_t>& shape, bool fortran_order, const std::vector<double>& values) {
  std::string dims;
  for (const int64_t d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() > 1) dims.resize(dims.size() - 2);  // (3, 4) but (3,) for rank 1
  if (shape.size() == 1) dims.resize(dims.size() - 1);
  std::string header = "{'descr': '<f8', 'fortran_order': " + std::string(fortran_order ? "True" : "False") +
                       ", 'shape': (" + dims + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  Bytes out = text_bytes("\x93NUMPY");
  out.push_back(1);
  out.push_back(0);
  put16(out, static_cast<uint32_t>(header.size()));
  append(out, text_bytes(header));
  Bytes data(values.size() * 8);
  if (!data.empty()) std::memcpy(data.data(), values.data(), data.size());
  append(out, data);
  return out;
}

Bytes zip_archive(const std::vector<std::pair<std::string, Bytes>>& members, bool deflate) {
  Bytes out, directory;
  for (const auto& [name, data] : members) {
    const Bytes packed = deflate ? deflate_stored(data) : data;
    const uint32_t crc = crc32_of(data);
    const auto offset = static_cast<uint32_t>(out.size());
    const uint32_t method = deflate ? 8 : 0;
    put32(out, 0x04034b50);
    put16(out, 20);  // version needed
    put16(out, 0);   // flags
    put16(out, method);
    put32(out, 0);  // time, date
    put32(out, crc);
    put32(out, static_cast<uint32_t>(packed.size()));
    put32(out, static_cast<uint32_t>(data.size()));
    put16(out, static_cast<uint32_t>(name.size()));
    put16(out, 0);  // extra length
    append(out, text_bytes(name));
    append(out, packed);

    put32(directory, 0x02014b50);
    put16(directory, 20);  // made by
    put16(directory, 20);  // needed
    put16(directory, 0);
    put16(directory, method);
    put32(directory, 0);
    put32(directory, crc);
    put32(directory, static_cast<uint32_t>(packed.size()));
    put32(directory, static_cast<uint32_t>(data.size()));
    put16(directory, static_cast<uint32_t>(name.size()));
    put16(directory, 0);  // extra
    put16(directory, 0);  // comment
    put16(directory, 0);  // disk
    put16(directory, 0);  // internal attributes
    put32(directory, 0);  // external attributes
    put32(directory, offset);
    append(directory, text_bytes(name));
  }
  const auto directory_offset = static_cast<uint32_t>(out.size());
  append(out, directory);
  put32(out, 0x06054b50);
  put16(out, 0);
  put16(out, 0);
  put16(out, static_cast<uint32_t>(members.size()));
  put16(out, static_cast<uint32_t>(members.size()));
  put32(out, static_cast<uint32_t>(directory.size()));
  put32(out, directory_offset);
  put16(out, 0);  // comment length
  return out;
}

}  // namespace rtf::test
