// encode_png: PNG signature, IHDR, one IDAT of the zlib stream, IEND; chunk CRCs with zlib's crc32.
#include "core/io/png_encode.hpp"

#include <zlib.h>

#include <stdexcept>

namespace rtf {

namespace {

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}

void chunk(std::vector<uint8_t>& out, const char* type, const std::vector<uint8_t>& data) {
  put_u32(out, static_cast<uint32_t>(data.size()));
  const size_t start = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data.begin(), data.end());
  const uLong crc = crc32(0L, out.data() + start, static_cast<uInt>(out.size() - start));
  put_u32(out, static_cast<uint32_t>(crc));
}

uint8_t colour_type(PngPixels format) {
  switch (format) {
    case PngPixels::kGrey:
      return 0;
    case PngPixels::kRgb:
      return 2;
    case PngPixels::kRgba:
      return 6;
  }
  throw std::runtime_error("encode_png: unknown pixel format");
}

}  // namespace

std::vector<uint8_t> encode_png(int width, int height, std::span<const uint8_t> pixels, PngPixels format) {
  const auto samples = static_cast<size_t>(format);
  const uint8_t type = colour_type(format);
  if (width <= 0 || height <= 0 ||
      pixels.size() != static_cast<size_t>(width) * static_cast<size_t>(height) * samples) {
    throw std::runtime_error("encode_png: image size does not match its pixels");
  }
  const size_t row_bytes = static_cast<size_t>(width) * samples;
  std::vector<uint8_t> raw;
  raw.reserve(static_cast<size_t>(height) * (row_bytes + 1));
  for (int y = 0; y < height; ++y) {
    raw.push_back(0);  // filter: none
    const auto* row = pixels.data() + static_cast<size_t>(y) * row_bytes;
    raw.insert(raw.end(), row, row + row_bytes);
  }
  uLongf compressed_size = compressBound(static_cast<uLong>(raw.size()));
  std::vector<uint8_t> compressed(compressed_size);
  if (compress2(compressed.data(), &compressed_size, raw.data(), static_cast<uLong>(raw.size()), 6) != Z_OK) {
    throw std::runtime_error("encode_png: zlib compression failed");
  }
  compressed.resize(compressed_size);
  std::vector<uint8_t> png{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::vector<uint8_t> ihdr;
  put_u32(ihdr, static_cast<uint32_t>(width));
  put_u32(ihdr, static_cast<uint32_t>(height));
  ihdr.insert(ihdr.end(), {8, type, 0, 0, 0});  // 8 bits, colour type, deflate, filter method 0, no interlace
  chunk(png, "IHDR", ihdr);
  chunk(png, "IDAT", compressed);
  chunk(png, "IEND", {});
  return png;
}

}  // namespace rtf
