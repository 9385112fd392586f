// `rtfmri scanner watch`'s work (scanner/watch/watch_command.hpp).
#include "scanner/watch/watch_command.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <thread>

#include "core/util/stop_signals.hpp"

namespace rtf::scanner {
namespace {

void print_report(const ScannerWatchReport& r) {
  fmt::print(
      "scanner watch: {} files, {} volumes sent, {} acknowledged; {} files skipped, {} duplicates, {} offered again\n",
      r.files, r.volumes, r.acked, r.skipped, r.duplicates, r.retries);
  for (const auto& run : r.runs_closed) fmt::print("  run {} closed\n", run);
  for (const auto& run : r.runs_left_open) fmt::print("  run left open: {}\n", run);
  for (const auto& f : r.failures) fmt::print(stderr, "  failed: {}\n", f);
  constexpr size_t kListed = 10;  // each was logged when it happened; the summary repeats the first few
  for (size_t k = 0; k < std::min(r.skip_reasons.size(), kListed); ++k)
    fmt::print("  skipped: {}\n", r.skip_reasons[k]);
  if (r.skip_reasons.size() > kListed) fmt::print("  ... and {} more skipped\n", r.skip_reasons.size() - kListed);
}

WatchMode parse_watch_mode(const std::string& mode) {
  if (mode == "auto") return WatchMode::kAuto;
  if (mode == "inotify") return WatchMode::kInotify;
  if (mode == "poll") return WatchMode::kPoll;
  throw std::invalid_argument("--watch must be auto, inotify or poll");
}

}  // namespace

void run_watch_command(WatchCommandOptions c) {
  auto format = dicom::scanner_format_from_string(c.format);
  if (!format) throw std::invalid_argument("--format must be auto, siemens-mosaic, enhanced, ge or philips");
  c.watch.assembler.format = *format;
  if (c.series >= 0) c.watch.assembler.series = c.series;
  c.watch.watch.mode = parse_watch_mode(c.mode);
  // SIGINT/SIGTERM are taken by this thread only (sigtimedwait); the watch runs on its own thread.
  const sigset_t stop_signals = block_stop_signals();
  zmq::context_t context(1);
  ScannerWatch watch(c.watch, context);
  spdlog::info("watching {} -> {} (session {})", c.watch.folder.string(), c.watch.sender.address, c.watch.session);
  ScannerWatchReport report;
  std::exception_ptr failure;
  std::atomic<bool> finished{false};
  std::thread worker([&] {
    try {
      report = watch.run();
    } catch (...) {
      failure = std::current_exception();
    }
    finished.store(true);
  });
  while (!finished.load()) {
    if (const auto signal = wait_for_stop_signal(stop_signals, std::chrono::milliseconds(50))) {
      spdlog::info("signal {}: stopping once what is pending is acknowledged", *signal);
      watch.stop();
      break;
    }
  }
  worker.join();
  if (failure) std::rethrow_exception(failure);
  print_report(report);
  if (!report.failures.empty()) {
    throw std::runtime_error(fmt::format("{} volumes were not delivered", report.failures.size()));
  }
}

}  // namespace rtf::scanner
