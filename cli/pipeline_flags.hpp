// The live pipeline's command-line flags, shared by `rtfmri run` and `rtfmri replay`: --config FILE and the flags
// that override it (run shape, stages, outputs). add_pipeline_flags registers them; pipeline_config_from builds the
// effective configuration: the file's, then each flag that was given.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "stream/pipeline/pipeline_config.hpp"

namespace rtf::cli {

struct PipelineFlags {
  std::string config_file;
  stream::PipelineConfig values;  // the flags' values (applied only where given)
  std::string feedback_roi;       // "x,y,z[,radius]"
  std::string roi_space;          // of --feedback-roi: template | epi ("": the default, RoiSpace::kAuto)
  bool no_warp = false;           // --registration-affine-only
  bool no_motion = false;
  bool no_outputs = false;
};

void add_pipeline_flags(CLI::App& cmd, PipelineFlags& flags);

// The configuration, with windows longer than the ring shortened (with a warning) and the data directory found
// (for the AAL atlas). Throws std::invalid_argument for a malformed flag or config file.
stream::PipelineConfig pipeline_config_from(const PipelineFlags& flags, const CLI::App& cmd);

}  // namespace rtf::cli
