// OUT.partial: cleared but for its chunks/ folder before a run and after a failed write, renamed to OUT when whole.
#include "core/diffusion/bedpost_folder.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/io/atomic_file.hpp"
#include "core/io/checked_file.hpp"

namespace rtf {

namespace fs = std::filesystem;

namespace {

// Removes everything in OUT.partial but its finished blocks (chunks/).
void remove_all_but_chunks(const fs::path& partial, const fs::path& chunk_dir) {
  for (const fs::directory_entry& e : fs::directory_iterator(partial)) {
    if (e.path() != chunk_dir) fs::remove_all(e.path());
  }
}

}  // namespace

void prepare_partial_folder(const fs::path& partial, const fs::path& chunk_dir) {
  if (fs::exists(partial)) {
    spdlog::warn("bedpost: {} left by an interrupted run: its finished blocks are reused, its other files removed",
                 partial.string());
    remove_all_but_chunks(partial, chunk_dir);
  }
  fs::create_directories(partial);
}

PartialFolder::~PartialFolder() {
  if (complete_) return;
  try {
    remove_all_but_chunks(partial_, chunk_dir_);
    spdlog::warn("bedpost: no output kept; the finished blocks stay in {} for the same command run again",
                 chunk_dir_.string());
  } catch (...) {  // never throws from a destructor
  }
}

void PartialFolder::complete(const fs::path& out) {
  complete_ = true;
  fs::remove_all(chunk_dir_);
  fs::rename(partial_, out);
  io::fsync_directory(out.parent_path());
}

void copy_text_file(const fs::path& from, const fs::path& to) {
  std::ifstream in(from, std::ios::binary);
  std::ostringstream text;
  if (!in || !(text << in.rdbuf())) throw std::runtime_error(fmt::format("{}: cannot be read again", from.string()));
  write_text_atomically(to, text.str());
}

}  // namespace rtf
