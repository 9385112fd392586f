// Replay of a recorded session through the live pipeline (`rtfmri replay`): every run's volumes, read back from its
// journal and payload file (CRC-checked; a repeated index counts once), go through the same LiveStage as fast as the
// device allows, each one analysed (none skipped). The outputs land in another session directory, so that a live
// run and its replay can be compared file by file. docs/live.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/device/device.hpp"
#include "stream/pipeline/live_outputs.hpp"
#include "stream/pipeline/live_stage.hpp"

namespace rtf::stream {

struct ReplayedRun {
  std::string run;
  int64_t volumes = 0;  // analysed
  int64_t corrupt = 0;  // journal entries whose payload failed its CRC (left out)
  double seconds = 0.0;
};

// Replays `session_dir` with `config` (its session_dir is ignored: outputs go to `out_dir`). `runs` limits the replay
// to those runs (empty: all, in name order). Throws std::invalid_argument for a directory without runs.
std::vector<ReplayedRun> replay_session(Device& device, const PipelineConfig& config,
                                        const std::filesystem::path& session_dir, const std::filesystem::path& out_dir,
                                        LiveOutputs* outputs, const std::vector<std::string>& runs = {},
                                        std::function<void(const TrResult&)> observer = nullptr);

}  // namespace rtf::stream
