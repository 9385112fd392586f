// Where the benches find the optional larger real data (MNI152 templates, fcon1000 T1 volumes): the folder named by
// $RTF_EXTRA_DATA_DIR when set, else the CMake setting of that name compiled in (docs/data.md).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

namespace rtf::bench {

// The path of `relative` inside that folder (whether or not it exists: the bench says so when it opens it).
inline std::string extra_data(std::string_view relative) {
  const char* env = std::getenv("RTF_EXTRA_DATA_DIR");
  const std::filesystem::path dir = env != nullptr && *env != '\0' ? env : RTF_EXTRA_DATA_DIR;
  return (dir / relative).lexically_normal().string();
}

}  // namespace rtf::bench
