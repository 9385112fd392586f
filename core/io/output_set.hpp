// The outputs of one command, made visible together or not at all. add(FINAL) names where to write each file: the
// same file name in a hidden folder beside it (DIR/.rtfmri-partial-PID-N/NAME, so the writers see the real
// extension); commit() then fsyncs every file, renames them all to their final names and fsyncs the folders. No final
// name is touched before commit(): a failure (an exception: the set is destroyed uncommitted) removes what was
// written, as does SIGINT, SIGTERM or SIGHUP (core/io/output_signals.hpp); a signal that arrives while commit() renames
// is held until the renames are done, so an interrupted command leaves either none or all of its outputs. Only SIGKILL
// or a crash can leave the hidden folder behind (never a final name). Use:
//   io::OutputSet out;
//   write_nifti(out.add(prefix + "_beta.nii.gz"), beta);
//   write_text_atomically(out.add(prefix + "_glm.json"), json);
//   out.commit();
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <vector>

namespace rtf::io {

class OutputSet {
 public:
  OutputSet();
  ~OutputSet();  // uncommitted: abort()
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  // The temporary path to write `final_path` to (the same one when a path is added twice). Creates the hidden folder
  // beside it on first use; throws std::runtime_error naming it, with the system's reason, when it cannot.
  std::filesystem::path add(const std::filesystem::path& final_path);

  // Every file under its final name (an existing file of that name replaced), the hidden folders removed. Throws
  // naming the file and the reason when one was not written or cannot be synced or renamed; the files already renamed
  // are then removed again, so that no partial set is left. `after_rename(k)`, when given, runs after the k-th rename
  // (tests: a signal delivered in the middle of the renames).
  void commit(const std::function<void(size_t)>& after_rename = {});

  // Removes the temporaries (and the hidden folders); never throws. Nothing to do after commit().
  void abort() noexcept;

  // The final paths, in the order they were added.
  const std::vector<std::filesystem::path>& files() const { return finals_; }

 private:
  struct Folder {
    std::filesystem::path path;  // the hidden folder
    int slot = -1;               // its place in the signal handler's table
  };
  std::filesystem::path folder_for(const std::filesystem::path& dir);
  void remove_folders() noexcept;

  std::vector<std::filesystem::path> finals_, temps_;
  std::map<std::filesystem::path, Folder> folders_;  // by the outputs' folder
  bool done_ = false;
};

}  // namespace rtf::io
