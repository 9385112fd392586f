// Loading a recorded session directory (rtfmri run's SESSION_DIR) for `rtfmri-view --replay`: the run's volumes
// (bold.nii.gz), per-TR motion (motion.tsv), feedback (feedback.tsv) and latency (latency.jsonl), and the run's final
// maps and R x R matrix. The maps are the run's final ones (the PUB stream's per-TR maps are not recorded).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "viewer/viewer_data.hpp"

namespace rtf::viewer {

struct RecordedSession {
  std::string run;
  std::vector<TrUpdate> updates;            // one per analysed TR, in order; the first carries the maps
  std::vector<std::vector<float>> volumes;  // bold.nii.gz, volume t at index t
};

// `run` empty: the first run (by name). Throws std::runtime_error naming what is missing or malformed.
RecordedSession load_recorded_session(const std::filesystem::path& session_dir, const std::string& run = "");

}  // namespace rtf::viewer
