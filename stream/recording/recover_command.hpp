// `rtfmri recover`'s work: every run's 4D NIfTI of a session directory rebuilt from its journal after a crash, with a
// report per run on stdout (stream/recording/recovery.hpp, docs/recording.md).
#pragma once

#include <string>

namespace rtf::stream {

// Throws std::runtime_error when the session cannot be read or some run was not fully recovered.
void run_recover_command(const std::string& session_dir);

}  // namespace rtf::stream
