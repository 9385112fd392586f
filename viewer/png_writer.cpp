// write_png: PNG signature, IHDR (8-bit RGBA), one IDAT of the zlib stream, IEND; chunk CRCs with zlib's crc32.
#include "viewer/png_writer.hpp"

#include <zlib.h>

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace rtf::viewer {

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

}  // namespace

void write_png(const std::filesystem::path& path, int width, int height, std::span<const uint8_t> rgba) {
  if (width <= 0 || height <= 0 || rgba.size() != static_cast<size_t>(width) * static_cast<size_t>(height) * 4) {
    throw std::runtime_error("write_png: image size does not match its pixels");
  }
  std::vector<uint8_t> raw;
  raw.reserve(static_cast<size_t>(height) * (static_cast<size_t>(width) * 4 + 1));
  for (int y = 0; y < height; ++y) {
    raw.push_back(0);  // filter: none
    const auto* row = rgba.data() + static_cast<size_t>(y) * static_cast<size_t>(width) * 4;
    raw.insert(raw.end(), row, row + static_cast<size_t>(width) * 4);
  }
  uLongf compressed_size = compressBound(static_cast<uLong>(raw.size()));
  std::vector<uint8_t> compressed(compressed_size);
  if (compress2(compressed.data(), &compressed_size, raw.data(), static_cast<uLong>(raw.size()), 6) != Z_OK) {
    throw std::runtime_error("write_png: zlib compression failed");
  }
  compressed.resize(compressed_size);
  std::vector<uint8_t> png{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::vector<uint8_t> ihdr;
  put_u32(ihdr, static_cast<uint32_t>(width));
  put_u32(ihdr, static_cast<uint32_t>(height));
  ihdr.insert(ihdr.end(), {8, 6, 0, 0, 0});  // 8 bits, RGBA, deflate, filter method 0, no interlace
  chunk(png, "IHDR", ihdr);
  chunk(png, "IDAT", compressed);
  chunk(png, "IEND", {});
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
  if (!f) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace rtf::viewer
