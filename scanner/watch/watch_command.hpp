// `rtfmri scanner watch`'s work: the options as the command line gives them, the watch run on a thread of its own
// until SIGINT/SIGTERM (or --stop-after) once what is pending is acknowledged, and its summary on stdout.
#pragma once

#include <string>

#include "scanner/watch/scanner_watch.hpp"

namespace rtf::scanner {

struct WatchCommandOptions {
  WatchCommandOptions() { watch.watch.recursive = true; }  // GE writes a folder per series
  ScannerWatchOptions watch;
  std::string format = "auto";  // auto, siemens-mosaic, enhanced, ge or philips
  std::string mode = "auto";    // of watching: auto, inotify or poll
  int series = -1;              // >= 0: only this SeriesNumber
};

// Watches and sends until stopped, then prints what happened. Throws std::invalid_argument for a bad format or mode,
// std::runtime_error when volumes were not delivered.
void run_watch_command(WatchCommandOptions options);

}  // namespace rtf::scanner
