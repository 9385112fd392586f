// Byte builders for the array-file reader tests: MAT-v5 elements and files, .npy arrays, zip archives, and
// zlib/deflate streams made of stored (uncompressed) blocks, so tests need no compressor. Written from the
// format descriptions (MathWorks' "MAT-File Format", NumPy's NEP 1, PKWARE's APPNOTE, RFC 1950/1951).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rtf::test {

using Bytes = std::vector<uint8_t>;

uint32_t crc32_of(const Bytes& data);
uint32_t adler32_of(const Bytes& data);

// RFC 1951 raw deflate of `data` as stored blocks (at most 65535 bytes each); RFC 1950 wraps it with a zlib
// header and Adler-32.
Bytes deflate_stored(const Bytes& data);
Bytes zlib_stored(const Bytes& data);

// MAT-v5 pieces (little-endian): a data element (tag + data + padding to 8 bytes), a real double matrix
// element, a cell element holding `cells` (each an miMATRIX element from mat_double or mat_cell, with any
// name), a 128-byte header, and a miCOMPRESSED element wrapping another element.
Bytes mat_element(uint32_t type, const Bytes& data);
Bytes mat_double(std::string_view name, int32_t rows, int32_t cols, const std::vector<double>& column_major);
Bytes mat_cell(std::string_view name, int32_t rows, int32_t cols, const std::vector<Bytes>& cells);
Bytes mat_header();
Bytes mat_compressed(const Bytes& element);

// A version-1 .npy file of '<f8' values given in file order.
Bytes npy_f8(const std::vector<int64_t>& shape, bool fortran_order, const std::vector<double>& values);

// A zip archive of (name, data) members, stored or deflated (as stored deflate blocks).
Bytes zip_archive(const std::vector<std::pair<std::string, Bytes>>& members, bool deflate);

}  // namespace rtf::test
