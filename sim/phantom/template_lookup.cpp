// Search order for installed data used by the phantom (template), with a clear error when absent.
#include "sim/phantom/template_lookup.hpp"

#include <cstdlib>
#include <stdexcept>
#include <system_error>

namespace rtf::sim {

std::vector<std::filesystem::path> data_search_paths(const std::string& relative,
                                                     const std::filesystem::path& executable_dir) {
  std::vector<std::filesystem::path> paths;
  if (const char* env = std::getenv("RTFMRI_DATA_DIR"); env != nullptr && *env != '\0') {
    paths.push_back(std::filesystem::path(env) / relative);
  }
  if (!executable_dir.empty()) paths.push_back((executable_dir / ".." / "data" / relative).lexically_normal());
  const std::string mricron = "mricron/";
  if (relative.rfind(mricron, 0) == 0) {  // the mricron-data package installed system-wide
    paths.push_back(std::filesystem::path("/usr/share/mricron/templates") / relative.substr(mricron.size()));
  }
  return paths;
}

std::filesystem::path find_installed_data(const std::string& relative, const std::filesystem::path& executable_dir) {
  const auto paths = data_search_paths(relative, executable_dir);
  std::string searched;
  for (const auto& p : paths) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec)) return p;
    searched += (searched.empty() ? "" : ", ") + p.string();
  }
  throw std::runtime_error("template '" + relative + "' not found (looked in: " + searched +
                           "); install it with scripts/fetch-data.sh build/data (Debian package mricron-data), "
                           "set RTFMRI_DATA_DIR, or pass --template FILE");
}

std::filesystem::path executable_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  return exe.parent_path();
}

}  // namespace rtf::sim
