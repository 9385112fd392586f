// `rtfmri batch normalize|glm (--list FILE | --bids ROOT) --out DIR [-- OPTIONS]`, the whole command (cli/cmd_batch.cpp
// declares the options): one command over many subjects, spread over the devices and MPI ranks: a chunk is a subject,
// run by this same program as a child process on the chunk's device; rank 0 writes each subject's files under DIR as
// they arrive, keeps a chunk file per finished subject (a stopped batch started again skips them) and ends with
// DIR/batch.json. docs/scale.md.
#pragma once

#include <string>
#include <vector>

#include "core/scale/workers_opening.hpp"

namespace rtf {

struct BatchOptions {
  std::string command;               // normalize or glm
  std::string list, bids, out;       // one of list and bids
  std::vector<std::string> options;  // after "--": passed to every subject's command
};

// Throws std::invalid_argument for neither or both of list and bids, an option batch sets itself, or a bad list;
// std::runtime_error naming the failed subjects (their files and logs written, their chunk files removed).
void run_batch(const BatchOptions& options, const DeviceChoice& devices);

}  // namespace rtf
