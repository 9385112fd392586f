// `rtfmri scanner watch DIR --to ADDR`: a scanner's DICOM (or PAR/REC) export folder to an ingest server, one run per
// series, each volume sent as soon as its files are complete (scanner/watch/scanner_watch.hpp, docs/scanner.md).
// Stops on SIGINT/SIGTERM (or --stop-after) once what is pending is acknowledged; runs not ended by --volumes or
// --end-after stay open on the server, and a watch started again continues them.
#include <fmt/format.h>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>
#include <memory>
#include <stdexcept>
#include <thread>

#include "cli/command_registry.hpp"
#include "cli/option_checks.hpp"
#include "scanner/watch/scanner_watch.hpp"

namespace {

struct WatchCli {
  WatchCli() { options.watch.recursive = true; }  // GE writes a folder per series
  rtf::scanner::ScannerWatchOptions options;
  std::string format = "auto";
  std::string mode = "auto";
  int series = -1;
};

void print_report(const rtf::scanner::ScannerWatchReport& r) {
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

void run(WatchCli& c) {
  auto format = rtf::dicom::scanner_format_from_string(c.format);
  if (!format) throw std::invalid_argument("--format must be auto, siemens-mosaic, enhanced, ge or philips");
  c.options.assembler.format = *format;
  if (c.series >= 0) c.options.assembler.series = c.series;
  if (c.mode == "auto") {
    c.options.watch.mode = rtf::scanner::WatchMode::kAuto;
  } else if (c.mode == "inotify") {
    c.options.watch.mode = rtf::scanner::WatchMode::kInotify;
  } else if (c.mode == "poll") {
    c.options.watch.mode = rtf::scanner::WatchMode::kPoll;
  } else {
    throw std::invalid_argument("--watch must be auto, inotify or poll");
  }
  // SIGINT/SIGTERM are taken by this thread only (sigtimedwait); the watch runs on its own thread.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  zmq::context_t context(1);
  rtf::scanner::ScannerWatch watch(c.options, context);
  spdlog::info("watching {} -> {} (session {})", c.options.folder.string(), c.options.sender.address,
               c.options.session);
  rtf::scanner::ScannerWatchReport report;
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
    timespec wait{0, 50'000'000};
    siginfo_t info;
    if (sigtimedwait(&stop_signals, &info, &wait) > 0) {
      spdlog::info("signal {}: stopping once what is pending is acknowledged", info.si_signo);
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

void setup(CLI::App& app, rtf::cli::GlobalOptions& /*globals*/) {
  auto c = std::make_shared<WatchCli>();
  auto& o = c->options;
  CLI::App* group = nullptr;
  for (CLI::App* existing : app.get_subcommands({})) {
    if (existing->get_name() == "scanner") group = existing;
  }
  if (group == nullptr) {
    group = app.add_subcommand("scanner", "Scanner adapters: read what a scanner console writes");
    group->require_subcommand(1);
  }
  auto* cmd = group->add_subcommand(
      "watch",
      "Watch a scanner's export folder (DICOM: Siemens mosaic, enhanced multi-frame, GE/Philips single slices; "
      "Philips PAR/REC) and send each volume to an ingest server as soon as its files are complete, with its "
      "affine (dcm2niix's), TR and slice times. One run per series (series-NNN). docs/scanner.md");
  cmd->add_option("DIR", o.folder, "Export folder (watched with its subfolders)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--to", o.sender.address, "Ingest server endpoint (protocol 1)")->capture_default_str();
  cmd->add_option("--series", c->series, "Only this SeriesNumber (default: every series, one run each)");
  cmd->add_option("--format", c->format,
                  "auto, siemens-mosaic, enhanced, ge or philips (single-slice DICOM or PAR/REC)")
      ->capture_default_str();
  cmd->add_option("--session", o.session, "Session id of the runs")->capture_default_str();
  cmd->add_option("--tr", o.tr_s,
                  "TR in seconds for every volume, instead of the files' (needed where the files carry none or a "
                  "wrong one: Philips XTC dumps say 1 ms)")
      ->check(rtf::cli::positive());
  cmd->add_option("--slices", o.assembler.slices_per_volume,
                  "Slices per volume for single-slice files whose headers do not say (no ImagesInAcquisition)")
      ->check(rtf::cli::positive());
  cmd->add_option("--volumes", o.volumes_per_run, "Volumes per run: END_OF_RUN once a run has them (default: unknown)")
      ->check(rtf::cli::positive());
  cmd->add_option("--end-after", o.end_after_s,
                  "Close a run (END_OF_RUN) once no new volume came for this many seconds (default: never; a run still "
                  "open when the watch stops stays open on the server, and a watch started again continues it); keep "
                  "it well above the TR")
      ->check(rtf::cli::positive());
  cmd->add_option("--watch", c->mode, "auto (inotify, or polling on network/FUSE mounts), inotify or poll")
      ->capture_default_str();
  cmd->add_option("--poll-interval", o.watch.poll_interval_s, "Seconds between scans when polling")
      ->check(rtf::cli::positive())
      ->capture_default_str();
  cmd->add_option("--settle", o.watch.settle_s,
                  "Polling: a file is complete once its size and time stayed the same this many seconds (on NFS, above "
                  "the mount's attribute cache time, actimeo)")
      ->check(rtf::cli::positive())
      ->capture_default_str();
  cmd->add_option("--give-up", o.watch.give_up_s,
                  "Seconds a file that is not whole yet (still being written, or cut short) is offered again before it "
                  "is skipped with a warning")
      ->check(rtf::cli::positive())
      ->capture_default_str();
  cmd->add_option("--resend-timeout", o.sender.resend_timeout_s, "Seconds without a reply before a volume is resent")
      ->check(rtf::cli::positive())
      ->capture_default_str();
  cmd->add_option("--stop-after", o.stop_after,
                  "Stop once this many volumes are acknowledged (default: run until "
                  "Ctrl-C)")
      ->check(rtf::cli::positive());
  cmd->callback([c] { run(*c); });
}

}  // namespace

RTF_REGISTER_COMMAND(83, setup);
