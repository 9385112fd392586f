// OutputFailures: the record of lost outputs, and write_output, the checked one-shot writer's wrapper.
#include "stream/output/output_failures.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace rtf::stream {

namespace {

std::filesystem::path normalised(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  return (ec ? path : p).lexically_normal();
}

bool is_under(const std::filesystem::path& path, const std::filesystem::path& dir) {
  auto p = path.begin();
  for (auto d = dir.begin(); d != dir.end(); ++d, ++p) {
    if (d->empty()) continue;  // a trailing separator
    if (p == path.end() || *p != *d) return false;
  }
  return true;
}

}  // namespace

LostOutput& OutputFailures::entry(const std::filesystem::path& path, const std::string& error) {
  const std::filesystem::path key = normalised(path);
  auto it = std::find_if(lost_.begin(), lost_.end(), [&](const LostOutput& l) { return l.path == key; });
  if (it != lost_.end()) return *it;
  lost_.push_back({key, error, 0, false});
  return lost_.back();
}

void OutputFailures::row_lost(const std::filesystem::path& path, const std::string& error, int64_t rows) {
  std::lock_guard lock(mutex_);
  entry(path, error).rows_lost += rows;
}

void OutputFailures::file_lost(const std::filesystem::path& path, const std::string& error) {
  std::lock_guard lock(mutex_);
  entry(path, error).file_lost = true;
}

std::vector<LostOutput> OutputFailures::lost(const std::filesystem::path& dir) const {
  const std::filesystem::path d = dir.empty() ? dir : normalised(dir);
  std::lock_guard lock(mutex_);
  std::vector<LostOutput> out;
  for (const LostOutput& l : lost_) {
    if (d.empty() || is_under(l.path, d)) out.push_back(l);
  }
  return out;
}

std::vector<std::string> OutputFailures::lines(const std::filesystem::path& dir) const {
  std::vector<std::string> out;
  for (const LostOutput& l : lost(dir)) {
    std::string what;
    if (l.rows_lost > 0) what = fmt::format("{} rows not written", l.rows_lost);
    if (l.file_lost) what += what.empty() ? "not written" : ", file incomplete";
    out.push_back(fmt::format("{}: {} ({})", l.path.string(), what, l.error));
  }
  return out;
}

void OutputFailures::clear() {
  std::lock_guard lock(mutex_);
  lost_.clear();
}

OutputFailures& output_failures() {
  static OutputFailures failures;
  return failures;
}

bool write_output(const std::filesystem::path& path, const std::string& what, const std::function<void()>& write,
                  OutputFailures& failures) {
  try {
    write();
    return true;
  } catch (const std::exception& e) {
    // The writers' messages name the file already (NiftiError, write_text_atomically); say it here in case.
    std::string error = e.what();
    if (error.find(path.filename().string()) == std::string::npos) error = path.string() + ": " + error;
    spdlog::error("{}: not written: {}", what, error);
    failures.file_lost(path, error);
    return false;
  }
}

std::string errno_message(const std::string& what, const std::filesystem::path& path) {
  const int e = errno;
  return fmt::format("{} {}: {}", what, path.string(), std::system_category().message(e));
}

}  // namespace rtf::stream
