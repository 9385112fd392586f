// write_text_atomically, write_parts_atomically: a CheckedFile beside the target, then rename and fsync the folder.
#include "core/io/atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <system_error>

#include "core/io/checked_file.hpp"

namespace rtf {

void write_text_atomically(const std::filesystem::path& path, std::string_view text) {
  write_parts_atomically(path, {text});
}

void write_parts_atomically(const std::filesystem::path& path, const std::vector<std::string_view>& parts) {
  std::filesystem::path temp = path;
  temp += ".partial";
  try {
    io::CheckedFile out(temp);
    for (std::string_view part : parts) out.write(part);
    out.close();
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);  // a failed write leaves nothing behind (it may be what filled the disk)
    throw;
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    io::throw_io_error(path, "rename into place", error);
  }
  io::fsync_directory(path.parent_path());
}

}  // namespace rtf
