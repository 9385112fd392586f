// encode_png: an 8-bit image (rows top to bottom) as the bytes of a PNG file, in memory: the viewer's --snapshot
// (viewer/png_writer.hpp) and the plots embedded in qa_report.html (core/qa/qa_report.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace rtf {

// Samples per pixel, in PNG's colour types: grey (0), RGB (2), RGBA (6); 8 bits each.
enum class PngPixels { kGrey = 1, kRgb = 3, kRgba = 4 };

// The PNG signature, IHDR, one IDAT (zlib level 6, filter 0 on every row, no interlace) and IEND. `pixels` holds
// width x height pixels row by row, `format` samples each. Throws std::runtime_error when the sizes do not match
// (or width or height is not positive) or zlib fails.
std::vector<uint8_t> encode_png(int width, int height, std::span<const uint8_t> pixels, PngPixels format);

// RGBA (4 bytes a pixel).
inline std::vector<uint8_t> encode_png(int width, int height, std::span<const uint8_t> rgba) {
  return encode_png(width, height, rgba, PngPixels::kRgba);
}

}  // namespace rtf
