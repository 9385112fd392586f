// bedpost's output folder built as OUT.partial and renamed to OUT when every file is there
// (core/diffusion/bedpost.hpp): what an interrupted run left there cleared but its finished blocks
// (OUT.partial/chunks/), and a failed write removing its files but the finished blocks, so that the command run again
// only writes.
#pragma once

#include <filesystem>

namespace rtf {

// Clears what an interrupted run left in `partial` except its finished blocks (`chunk_dir`), which this run reuses.
void prepare_partial_folder(const std::filesystem::path& partial, const std::filesystem::path& chunk_dir);

// While the outputs are written into OUT.partial: destroyed before complete() (a failure, e.g. a full disk), it removes
// the files written so far, which may be what filled the disk, and keeps the finished blocks.
class PartialFolder {
 public:
  PartialFolder(std::filesystem::path partial, std::filesystem::path chunk_dir)
      : partial_(std::move(partial)), chunk_dir_(std::move(chunk_dir)) {}
  ~PartialFolder();
  PartialFolder(const PartialFolder&) = delete;
  PartialFolder& operator=(const PartialFolder&) = delete;
  // Every file is written: the finished blocks go, and OUT.partial becomes `out` (its parent folder synced).
  void complete(const std::filesystem::path& out);

 private:
  std::filesystem::path partial_, chunk_dir_;
  bool complete_ = false;
};

// Copies a text file (bvals, bvecs) into the output folder, written whole or not at all.
void copy_text_file(const std::filesystem::path& from, const std::filesystem::path& to);

}  // namespace rtf
