// `rtfmri scanner watch`: a scanner's export folder to protocol 1 (issue 18). The folder watcher says which files are
// complete, the series assembler turns them into volumes, and the reliable VolumeSender sends each volume, with its
// affine, TR and slice times, to the ingest server as soon as it is complete: one run per series. A run is closed
// (END_OF_RUN) when it reaches --volumes or when it has been idle for --end-after seconds; a run still open when the
// watch stops stays open (the server keeps it), so that a watch started again over the folder continues it.
// Files that cannot be used are logged and skipped; a file that is not readable yet is offered again by the watcher.
// docs/scanner.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "scanner/assemble/series_assembler.hpp"
#include "scanner/watch/folder_watcher.hpp"
#include "stream/sender/volume_sender.hpp"

namespace rtf::scanner {

// When a volume passed each step (steady clock, ns): its last file reported complete by the watcher, the volume
// assembled (files read and decoded), handed to the sender (encoded and transmitted), and its ACK taken.
struct VolumeTimes {
  int64_t ready_ns = 0, assembled_ns = 0, sent_ns = 0, acked_ns = 0;
};

struct ScannerWatchOptions {
  std::filesystem::path folder;
  WatchOptions watch;
  dicom::AssemblerOptions assembler;
  stream::SenderOptions sender;  // address, resend timeout
  std::string session = "scanner";
  double tr_s = 0.0;  // > 0: the TR of every volume, instead of the files' (some exports get it wrong: Philips XTC
                      // dumps say 1 ms); 0: the files' TR, and a volume without one is refused
  int64_t volumes_per_run = 0;   // END_OF_RUN once a run holds this many volumes (0: not known)
  double end_after_s = 0.0;      // END_OF_RUN once a run has had no new volume for this long (0: only at the end)
  double finish_timeout_s = 30;  // waiting for the last ACKs and each END_OF_RUN's ACK
  int64_t stop_after = 0;  // stop once this many volumes are acknowledged (tests, benchmarks); 0: run until stop()
  // Called on the watch's thread for each volume acknowledged (the latency benchmark).
  std::function<void(const std::string& run, int64_t index, const VolumeTimes& times)> on_acknowledged;
};

struct ScannerWatchReport {
  int64_t files = 0;                      // files the watcher reported complete
  int64_t volumes = 0;                    // volumes sent
  int64_t acked = 0;                      // volumes acknowledged
  int64_t skipped = 0;                    // files (or volumes) skipped, each logged with its reason
  std::vector<std::string> skip_reasons;  // those reasons, in order (each names its file or volume)
  int64_t duplicates = 0;                 // files that repeated an instance already used
  int64_t retries = 0;                    // files offered again after they could not be read yet
  std::vector<std::string> runs_closed;
  std::vector<std::string> runs_left_open;  // with the reason
  std::vector<std::string> failures;        // volumes the sender gave up
  stream::SenderStats stats;
};

class ScannerWatch {
 public:
  // Starts watching at once (files already in the folder count). Throws std::runtime_error when the folder cannot
  // be watched, std::invalid_argument for unusable options.
  ScannerWatch(ScannerWatchOptions options, zmq::context_t& context);

  // Watches, assembles and sends until stop() (or stop_after), then waits for the pending ACKs.
  ScannerWatchReport run();
  void stop();  // any thread

 private:
  struct RunState {
    int64_t sent = 0;
    int64_t highest = -1;
    double last_volume_s = 0.0;
    bool closed = false;
  };

  void send(dicom::AssembledVolume&& volume, VolumeTimes times);
  void close_run(const std::string& run, RunState& state, ScannerWatchReport& report);
  void note_acknowledged(ScannerWatchReport& report);
  static void note_skipped(ScannerWatchReport& report, const std::string& reason);

  ScannerWatchOptions options_;
  FolderWatcher watcher_;
  dicom::SeriesAssembler assembler_;
  stream::VolumeSender sender_;
  std::map<std::string, RunState> runs_;
  std::map<std::pair<std::string, int64_t>, VolumeTimes> times_;  // (run, index) -> its steps so far
  size_t acknowledged_seen_ = 0;
  std::atomic<bool> stop_{false};
};

}  // namespace rtf::scanner
