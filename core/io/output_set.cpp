// OutputSet: hidden folders beside the outputs, each registered with the signal handler; commit = fsync, rename all
// under a CommitGuard, remove the folders, fsync the outputs' folders.
#include "core/io/output_set.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <stdexcept>
#include <system_error>

#include "core/io/checked_file.hpp"
#include "core/io/output_signals.hpp"

namespace rtf::io {

namespace fs = std::filesystem;

OutputSet::OutputSet() {
  output_signals::install();
}

OutputSet::~OutputSet() {
  abort();
}

fs::path OutputSet::folder_for(const fs::path& dir) {
  if (auto it = folders_.find(dir); it != folders_.end()) return it->second.path;
  static std::atomic<uint64_t> counter{0};
  fs::path folder = dir / fmt::format(".rtfmri-partial-{}-{}", ::getpid(), counter++);
  if (::mkdir(folder.c_str(), 0700) != 0) throw_io_error(folder, "create the folder", errno);
  folders_.emplace(dir, Folder{folder, output_signals::register_folder(folder)});
  return folder;
}

void OutputSet::remove_folders() noexcept {
  for (const auto& [dir, folder] : folders_) {
    std::error_code ignored;
    fs::remove_all(folder.path, ignored);
    output_signals::unregister_folder(folder.slot);
  }
}

fs::path OutputSet::add(const fs::path& final_path) {
  if (done_) throw std::logic_error(fmt::format("{}: added to an output set already committed", final_path.string()));
  if (!final_path.has_filename()) throw std::invalid_argument(fmt::format("{}: not a file name", final_path.string()));
  for (size_t k = 0; k < finals_.size(); ++k) {
    if (finals_[k] == final_path) return temps_[k];
  }
  fs::path temp = folder_for(final_path.parent_path()) / final_path.filename();
  finals_.push_back(final_path);
  temps_.push_back(temp);
  return temp;
}

void OutputSet::commit(const std::function<void(size_t)>& after_rename) {
  if (done_) throw std::logic_error("output set committed twice");
  // The bytes on the disk first (whichever writer wrote them), while an interruption still removes everything.
  for (size_t k = 0; k < finals_.size(); ++k) {
    try {
      fsync_file(temps_[k]);
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("cannot write {}: {}", finals_[k].string(), e.what()));
    }
  }
  const output_signals::CommitGuard guard;  // a signal from here on waits for the renames
  for (size_t k = 0; k < finals_.size(); ++k) {
    if (std::rename(temps_[k].c_str(), finals_[k].c_str()) != 0) {
      const int error = errno;
      for (size_t r = 0; r < k; ++r) {  // no partial set: the files renamed so far go again
        std::error_code ignored;
        fs::remove(finals_[r], ignored);
      }
      throw_io_error(finals_[k], "rename into place", error);  // abort() removes the rest
    }
    if (after_rename) after_rename(k);
  }
  done_ = true;
  remove_folders();  // empty now
  for (const auto& [dir, folder] : folders_) fsync_directory(dir);
}

void OutputSet::abort() noexcept {
  if (done_) return;
  done_ = true;
  size_t written = 0;
  for (const fs::path& temp : temps_) {
    std::error_code ignored;
    written += fs::exists(temp, ignored) ? 1 : 0;
  }
  remove_folders();
  if (written == 0) return;
  try {
    spdlog::warn("no output kept: removed the {} of {} output file(s) written before the failure", written,
                 finals_.size());
  } catch (...) {  // logging must not throw out of a destructor
  }
}

}  // namespace rtf::io
