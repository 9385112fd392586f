// write_png: the bytes of core/io/png_encode.hpp's encode_png written to a file.
#include "viewer/png_writer.hpp"

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/io/png_encode.hpp"

namespace rtf::viewer {

void write_png(const std::filesystem::path& path, int width, int height, std::span<const uint8_t> rgba) {
  const std::vector<uint8_t> png = encode_png(width, height, rgba);
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
  if (!f) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace rtf::viewer
