// `rtfmri replay`'s work: a recorded session through the live pipeline (stream/pipeline/session_replay.hpp), as fast
// as the device allows, every volume analysed; the per-run files go to the output session directory and the outputs
// (PUB, TCP) can feed a viewer. A line per run on stdout; a file that could not be written (whole) is named.
#pragma once

#include <string>
#include <vector>

#include "core/device/device_opener.hpp"
#include "stream/pipeline/pipeline_config.hpp"

namespace rtf::stream {

struct ReplayCommandOptions {
  std::string session_dir;        // written by rtfmri run
  std::string out;                // "": SESSION_DIR/replay
  std::vector<std::string> runs;  // empty: all
  PipelineConfig config;          // the effective configuration (its session_dir is replaced by the output's)
};

// Replays the session into the output directory. Throws std::runtime_error naming how many outputs were not written
// whole (each listed on stdout), std::invalid_argument for a bad configuration or a directory without runs.
void run_replay_command(const ReplayCommandOptions& options, const DeviceOpener& open_device);

}  // namespace rtf::stream
