// Where the phantom finds its default template (Colin27's ch2bet.nii.gz, installed by scripts/fetch-data.sh):
// $RTFMRI_DATA_DIR, then <executable dir>/../data (the build tree's data dir, or an install's), then the
// Debian package's own location (/usr/share/mricron/templates).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace rtf::sim {

inline constexpr const char* kDefaultTemplate = "mricron/ch2bet.nii.gz";

// Candidate paths for a file under an installed-data dir ("mricron/ch2bet.nii.gz"), in search order.
std::vector<std::filesystem::path> data_search_paths(const std::string& relative,
                                                     const std::filesystem::path& executable_dir);

// The first existing candidate; throws std::runtime_error naming every place searched and
// scripts/fetch-data.sh when none exists.
std::filesystem::path find_installed_data(const std::string& relative, const std::filesystem::path& executable_dir);

// Directory of the running executable (/proc/self/exe), or empty when it cannot be found.
std::filesystem::path executable_dir();

}  // namespace rtf::sim
