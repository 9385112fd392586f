// write_text_atomically, write_parts_atomically: temporary file beside the target, then rename.
#include "core/io/atomic_file.hpp"

#include <fmt/format.h>

#include <fstream>
#include <stdexcept>
#include <system_error>

namespace rtf {

void write_text_atomically(const std::filesystem::path& path, std::string_view text) {
  write_parts_atomically(path, {text});
}

void write_parts_atomically(const std::filesystem::path& path, const std::vector<std::string_view>& parts) {
  std::filesystem::path temp = path;
  temp += ".partial";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(fmt::format("{}: cannot create the file", temp.string()));
    for (std::string_view part : parts) out.write(part.data(), static_cast<std::streamsize>(part.size()));
    out.flush();
    if (!out) throw std::runtime_error(fmt::format("{}: write failed", temp.string()));
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) throw std::runtime_error(fmt::format("{}: cannot rename into place: {}", path.string(), ec.message()));
}

}  // namespace rtf
