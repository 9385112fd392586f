// `rtfmri scanner watch DIR --to ADDR`: a scanner's DICOM (or PAR/REC) export folder to an ingest server, one run per
// series, each volume sent as soon as its files are complete (scanner/watch/scanner_watch.hpp, docs/scanner.md).
// Stops on SIGINT/SIGTERM (or --stop-after) once what is pending is acknowledged; runs not ended by --volumes or
// --end-after stay open on the server, and a watch started again continues them.
#include <memory>

#include "cli/command_support.hpp"
#include "scanner/watch/watch_command.hpp"

namespace {

void setup(CLI::App& app, rtf::cli::GlobalOptions& /*globals*/) {
  auto c = std::make_shared<rtf::scanner::WatchCommandOptions>();
  auto& o = c->watch;
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
  cmd->callback([c] { rtf::scanner::run_watch_command(*c); });
}

}  // namespace

RTF_REGISTER_COMMAND(83, setup);
