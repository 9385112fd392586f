// TempDir: a uniquely named temporary directory for one test, removed with its contents on destruction.
#pragma once

#include <filesystem>
#include <string_view>

namespace rtf::test {

class TempDir {
 public:
  // Creates <system temp dir>/<prefix>-XXXXXX; throws std::runtime_error if that fails.
  explicit TempDir(std::string_view prefix = "rtf-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace rtf::test
