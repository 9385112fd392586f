// Where installed data (templates, atlases; scripts/fetch-data.sh) is found: $RTFMRI_DATA_DIR, then
// <executable dir>/../data (the build tree's data dir, or an install's), then the Debian package's own location
// (/usr/share/mricron/templates). Templates by name: colin27 (Debian's mricron-data) and mni152 (FSL's, by path).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace rtf {

// The phantom's default template: Colin27's brain.
inline constexpr const char* kDefaultTemplate = "mricron/ch2bet.nii.gz";

// Candidate paths for a file under an installed-data dir ("mricron/ch2bet.nii.gz"), in search order.
std::vector<std::filesystem::path> data_search_paths(const std::string& relative,
                                                     const std::filesystem::path& executable_dir);

// The first existing candidate; throws std::runtime_error naming every place searched and
// scripts/fetch-data.sh when none exists.
std::filesystem::path find_installed_data(const std::string& relative, const std::filesystem::path& executable_dir);

// Directory of the running executable (/proc/self/exe), or empty when it cannot be found.
std::filesystem::path executable_dir();

// A registration template by name or path: "colin27" (Colin27's brain, mricron/ch2bet.nii.gz), "colin27-head" (with
// skull, mricron/ch2.nii.gz), "mni152" (FSL's MNI152_T1_1mm_brain.nii.gz from $FSLDIR/data/standard,
// $RTFMRI_DATA_DIR/templates or <executable dir>/../data/templates), or an existing file. Throws std::runtime_error
// naming every place searched.
std::filesystem::path resolve_template(const std::string& name_or_path, const std::filesystem::path& executable_dir);

}  // namespace rtf
