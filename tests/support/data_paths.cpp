// Data locations for tests; the directories come from compile definitions set in tests/CMakeLists.txt.
#include "tests/support/data_paths.hpp"

#include <cstdlib>
#include <system_error>

namespace rtf::test {
namespace {

std::optional<std::filesystem::path> existing(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) return path;
  return std::nullopt;
}

}  // namespace

std::filesystem::path test_data_dir() {
  return RTF_TEST_DATA_DIR;
}

std::filesystem::path installed_data_dir() {
  if (const char* env = std::getenv("RTFMRI_DATA_DIR"); env != nullptr && *env != '\0') return env;
  return RTF_INSTALLED_DATA_DIR;
}

std::filesystem::path extra_data_dir() {
  if (const char* env = std::getenv("RTF_EXTRA_DATA_DIR"); env != nullptr && *env != '\0') return env;
  return std::filesystem::path(RTF_EXTRA_DATA_DIR).lexically_normal();
}

std::optional<std::filesystem::path> installed_data(std::string_view relative) {
  return existing(installed_data_dir() / relative);
}

std::optional<std::filesystem::path> extra_data(std::string_view relative) {
  return existing(extra_data_dir() / relative);
}

std::string missing_installed_data(std::string_view relative) {
  const std::string dir = installed_data_dir().string();
  return "real data '" + std::string(relative) + "' is not installed in " + dir + " (run: scripts/fetch-data.sh " +
         dir + ")";
}

std::string missing_extra_data(std::string_view relative) {
  return "extra data '" + std::string(relative) + "' is absent from " + extra_data_dir().string() +
         " (optional larger real data: set RTF_EXTRA_DATA_DIR to its folder, docs/data.md)";
}

}  // namespace rtf::test
