// Where tests find data: small fixtures checked into tests/data, real data installed by
// scripts/fetch-data.sh into <build>/data (or $RTFMRI_DATA_DIR), and the optional larger real data (templates, T1
// volumes, scanner exports) in the folder named by the setting RTF_EXTRA_DATA_DIR (docs/data.md).
// Tests needing absent data skip with the message from missing_*_data():
//   auto path = installed_data("nitime/fmri1.nii.gz");
//   if (!path) GTEST_SKIP() << missing_installed_data("nitime/fmri1.nii.gz");
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace rtf::test {

std::filesystem::path test_data_dir();       // tests/data in the source tree
std::filesystem::path installed_data_dir();  // $RTFMRI_DATA_DIR if set, else <build>/data
std::filesystem::path extra_data_dir();      // $RTF_EXTRA_DATA_DIR if set, else the CMake setting of that name

// The file's path if it exists, else nullopt.
std::optional<std::filesystem::path> installed_data(std::string_view relative);
std::optional<std::filesystem::path> extra_data(std::string_view relative);

// Skip messages naming what is missing and how to get it.
std::string missing_installed_data(std::string_view relative);
std::string missing_extra_data(std::string_view relative);

}  // namespace rtf::test
