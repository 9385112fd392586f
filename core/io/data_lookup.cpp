// Search order for installed data and templates, with a clear error when absent.
#include "core/io/data_lookup.hpp"

#include <cstdlib>
#include <stdexcept>
#include <system_error>

namespace rtf {

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

std::filesystem::path resolve_template(const std::string& name_or_path, const std::filesystem::path& executable_dir) {
  if (name_or_path == "colin27") return find_installed_data("mricron/ch2bet.nii.gz", executable_dir);
  if (name_or_path == "colin27-head") return find_installed_data("mricron/ch2.nii.gz", executable_dir);
  std::error_code ec;
  if (name_or_path == "mni152") {
    const std::string file = "MNI152_T1_1mm_brain.nii.gz";
    std::vector<std::filesystem::path> paths;
    if (const char* fsl = std::getenv("FSLDIR"); fsl != nullptr && *fsl != '\0') {
      paths.push_back(std::filesystem::path(fsl) / "data" / "standard" / file);
    }
    for (const auto& p : data_search_paths("templates/" + file, executable_dir)) paths.push_back(p);
    std::string searched;
    for (const auto& p : paths) {
      if (std::filesystem::is_regular_file(p, ec)) return p;
      searched += (searched.empty() ? "" : ", ") + p.string();
    }
    throw std::runtime_error("template mni152 (" + file + ") not found (looked in: " + searched +
                             "); it ships with FSL (set FSLDIR) and is not in Debian: pass its path instead, or use "
                             "--template colin27 (Colin27 in MNI space, Debian's mricron-data)");
  }
  if (std::filesystem::is_regular_file(name_or_path, ec)) return name_or_path;
  throw std::runtime_error("template '" + name_or_path +
                           "' is neither colin27, colin27-head, mni152 nor an existing file");
}

}  // namespace rtf
