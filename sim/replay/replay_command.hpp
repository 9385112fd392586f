// `rtfmri sim replay`'s work: a 4D NIfTI sent to an ingest server at TR pace (or N times faster, or in lockstep with
// the server's feedback lines), with optional fault injection; prints what happened (sim/replay/replay.hpp).
#pragma once

#include <string>

#include "sim/replay/replay.hpp"

namespace rtf::sim {

struct ReplayCommandOptions {
  std::string file;                     // 4D NIfTI
  ReplayOptions options;                // address, pace, run, faults, timeouts
  std::string corrupt_target = "both";  // what --corrupt damages: header, payload or both
  std::string lockstep;                 // HOST:PORT of the server's feedback lines; "": paced by speed only
};

// Sends the file. Throws std::runtime_error unless every volume was acknowledged (and the run closed when asked).
void run_replay_command(const ReplayCommandOptions& options);

}  // namespace rtf::sim
