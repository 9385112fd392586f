// Kernel source lookup and #include expansion.
#include "core/device/kernel_sources.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace rtf::detail {
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_kernel_sources();
}

namespace rtf {
namespace {

std::string source_directory() {
  if (const char* env = std::getenv("RTFMRI_KERNEL_DIR"); env && *env) return env;
#ifdef RTF_KERNEL_SOURCE_DIR
  return RTF_KERNEL_SOURCE_DIR;
#else
  return {};
#endif
}

std::string raw_source(std::string_view name) {
  if (const auto dir = source_directory(); !dir.empty()) {
    std::ifstream in(dir + "/" + std::string(name));
    if (!in) throw std::runtime_error(fmt::format("kernel source {}/{} not found", dir, name));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  for (const auto& [file, text] : detail::embedded_kernel_sources()) {
    if (file == name) return std::string(text);
  }
  throw std::runtime_error(fmt::format("no embedded kernel source named '{}'", name));
}

std::string expand(std::string_view name, int depth) {
  if (depth > 8) throw std::runtime_error(fmt::format("kernel #include nesting too deep at {}", name));
  std::istringstream in(raw_source(name));
  std::string out, line;
  while (std::getline(in, line)) {
    constexpr std::string_view kInclude = "#include \"";
    if (line.rfind(kInclude, 0) == 0) {
      const auto end = line.find('"', kInclude.size());
      if (end == std::string::npos) throw std::runtime_error(fmt::format("bad #include in {}: {}", name, line));
      out += expand(std::string_view(line).substr(kInclude.size(), end - kInclude.size()), depth + 1);
    } else {
      out += line;
    }
    out += '\n';
  }
  return out;
}

}  // namespace

std::string kernel_source(std::string_view file_name) {
  return expand(file_name, 0);
}

std::vector<std::string> embedded_kernel_names() {
  std::vector<std::string> names;
  for (const auto& entry : detail::embedded_kernel_sources()) names.emplace_back(entry.first);
  return names;
}

}  // namespace rtf
