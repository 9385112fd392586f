// write_png: an RGBA8 image (rows top to bottom) as a PNG file (zlib-compressed, filter 0), for --snapshot.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>

namespace rtf::viewer {

// Throws std::runtime_error naming the file when it cannot be written.
void write_png(const std::filesystem::path& path, int width, int height, std::span<const uint8_t> rgba);

}  // namespace rtf::viewer
