// The subjects of `rtfmri batch` (docs/scale.md): from a list file (one per line: "PATH", "ID PATH" or
// "ID PATH EVENTS"; '#' starts a comment) or from a BIDS folder (sub-*/[ses-*/]anat/*_T1w.nii[.gz] or
// sub-*/[ses-*/]func/*_bold.nii[.gz] with the run's *_events.tsv beside it).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace rtf {

struct BatchSubject {
  std::string id;      // "sub-01_ses-1_task-motor_run-1": the input's name without its suffix and extension
  std::string input;   // the T1 or BOLD image
  std::string events;  // BIDS events.tsv of a BOLD run ("" when none)
  std::string folder;  // the outputs' folder relative to the output root: BIDS "sub-01/anat", a list's "ID"
};

// The input's name without the BIDS suffix (`suffix`: "T1w", "bold"; none: just the extension).
std::string subject_id_from_path(const std::string& path, const std::string& suffix);

// Throws std::invalid_argument naming the list and line for a missing image or events file, a duplicate ID, more
// than three fields, or an empty list.
std::vector<BatchSubject> read_subject_list(const std::filesystem::path& list, const std::string& suffix);

// `suffix` "T1w" (anat) or "bold" (func). Throws std::invalid_argument when the folder holds no such image.
std::vector<BatchSubject> find_bids_subjects(const std::filesystem::path& root, const std::string& suffix);

}  // namespace rtf
