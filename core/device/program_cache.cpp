// Program cache: memory map, then disk binaries, then compile from source.
#include "core/device/program_cache.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

#include "core/device/cl_error.hpp"
#include "core/util/hash.hpp"

namespace rtf {

std::optional<std::filesystem::path> ProgramCache::default_disk_dir() {
  if (const char* env = std::getenv("RTFMRI_CACHE_DIR"); env && *env) {
    if (std::string_view(env) == "off") return std::nullopt;
    return std::filesystem::path(env);
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    return std::filesystem::path(xdg) / "rtfmri" / "kernels";
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::filesystem::path(home) / ".cache" / "rtfmri" / "kernels";
  }
  return std::nullopt;
}

ProgramCache::ProgramCache(cl_context context, const DeviceInfo& device, std::optional<std::filesystem::path> disk_dir)
    : context_(context), device_(device), disk_dir_(std::move(disk_dir)) {}

std::string ProgramCache::key(const std::string& source, const std::string& options) const {
  return hash_hex({device_.platform_name, device_.platform_version, device_.device_name, device_.device_version,
                   device_.driver_version, options, source});
}

cl_program ProgramCache::get(const std::string& name, const std::string& source, const std::string& options) {
  std::lock_guard lock(mutex_);
  const std::string k = key(source, options);
  if (auto it = memory_.find(k); it != memory_.end()) {
    ++stats_.memory_hits;
    return it->second.get();
  }
  ClProgram program;
  std::optional<std::filesystem::path> file;
  if (disk_dir_) {
    file = *disk_dir_ / (k + ".bin");
    std::error_code ec;
    if (std::filesystem::exists(*file, ec)) {
      try {
        const auto start = std::chrono::steady_clock::now();
        program = load_binary(*file, options);
        ++stats_.disk_hits;
        spdlog::debug("kernel program {} [{}] from the disk cache in {:.3f} s", name, options,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      } catch (const std::exception& e) {
        spdlog::warn("ignoring unusable cached kernel binary {}: {}", file->string(), e.what());
        std::filesystem::remove(*file, ec);
      }
    }
  }
  if (!program) {
    program = build_from_source(name, source, options);
    ++stats_.compiles;
    if (file) {
      try {
        save_binary(program.get(), *file);
      } catch (const std::exception& e) {
        spdlog::warn("could not write kernel cache {}: {}", file->string(), e.what());
      }
    }
  }
  cl_program raw = program.get();
  memory_.emplace(k, std::move(program));
  return raw;
}

std::string ProgramCache::build_log(cl_program program) const {
  size_t size = 0;
  if (clGetProgramBuildInfo(program, device_.device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) != CL_SUCCESS) {
    return "(build log unavailable)";
  }
  std::string log(size, '\0');
  clGetProgramBuildInfo(program, device_.device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

ClProgram ProgramCache::build_from_source(const std::string& name, const std::string& source,
                                          const std::string& options) {
  const char* text = source.c_str();
  const size_t length = source.size();
  ClProgram program(RTF_CL_CREATE(clCreateProgramWithSource(context_, 1, &text, &length, &rtf_cl_err)));
  cl_device_id dev = device_.device;
  const cl_int status = clBuildProgram(program.get(), 1, &dev, options.c_str(), nullptr, nullptr);
  if (status != CL_SUCCESS) {
    throw ClBuildError(fmt::format("building kernel program {} with options '{}' on {} failed with {}:\n{}", name,
                                   options, device_.device_name, cl_error_name(status), build_log(program.get())));
  }
  spdlog::debug("compiled kernel program {} [{}]", name, options);
  return program;
}

ClProgram ProgramCache::load_binary(const std::filesystem::path& file, const std::string& options) {
  std::ifstream in(file, std::ios::binary);
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty()) throw std::runtime_error("empty cache file");
  const unsigned char* data = bytes.data();
  const size_t size = bytes.size();
  cl_device_id dev = device_.device;
  cl_int binary_status = CL_SUCCESS;
  ClProgram program(
      RTF_CL_CREATE(clCreateProgramWithBinary(context_, 1, &dev, &size, &data, &binary_status, &rtf_cl_err)));
  RTF_CL_CHECK(binary_status);
  RTF_CL_CHECK(clBuildProgram(program.get(), 1, &dev, options.c_str(), nullptr, nullptr));
  return program;
}

void ProgramCache::save_binary(cl_program program, const std::filesystem::path& file) {
  size_t size = 0;
  RTF_CL_CHECK(clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr));
  if (size == 0) return;
  std::vector<unsigned char> bytes(size);
  unsigned char* ptr = bytes.data();
  RTF_CL_CHECK(clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(ptr), &ptr, nullptr));
  std::filesystem::create_directories(file.parent_path());
  // Write to a unique temporary name, then rename: readers never see a partial file.
  const auto tmp = file.string() + fmt::format(".tmp{}", static_cast<long>(getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("write failed");
  }
  std::filesystem::rename(tmp, file);
}

}  // namespace rtf
