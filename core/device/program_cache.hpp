// Builds OpenCL programs once: an in-memory cache, then an on-disk binary cache keyed by a hash of
// platform, device, driver version, build options and source. A failed build throws ClBuildError
// with the full build log.
//
// Disk location: $RTFMRI_CACHE_DIR, else $XDG_CACHE_HOME/rtfmri/kernels, else ~/.cache/rtfmri/kernels.
// RTFMRI_CACHE_DIR=off disables the disk cache.
#pragma once

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "core/device/cl_handle.hpp"
#include "core/device/device_info.hpp"

namespace rtf {

struct ProgramCacheStats {
  int memory_hits = 0;
  int disk_hits = 0;
  int compiles = 0;
};

class ProgramCache {
 public:
  ProgramCache(cl_context context, const DeviceInfo& device, std::optional<std::filesystem::path> disk_dir);

  // Returns a built program for `source` with `options` (e.g. "-DRADIUS=3"). `name` labels errors.
  cl_program get(const std::string& name, const std::string& source, const std::string& options);

  const ProgramCacheStats& stats() const { return stats_; }
  const std::optional<std::filesystem::path>& disk_dir() const { return disk_dir_; }
  std::string key(const std::string& source, const std::string& options) const;

  static std::optional<std::filesystem::path> default_disk_dir();

 private:
  ClProgram build_from_source(const std::string& name, const std::string& source, const std::string& options);
  ClProgram load_binary(const std::filesystem::path& file, const std::string& options);
  void save_binary(cl_program program, const std::filesystem::path& file);
  std::string build_log(cl_program program) const;

  cl_context context_;
  DeviceInfo device_;
  std::optional<std::filesystem::path> disk_dir_;
  std::map<std::string, ClProgram> memory_;
  ProgramCacheStats stats_;
  std::mutex mutex_;
};

}  // namespace rtf
