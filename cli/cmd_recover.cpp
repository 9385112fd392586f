// `rtfmri recover SESSION_DIR`: rebuild every run's 4D NIfTI from its journal after a crash (docs/recording.md).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

#include "cli/command_registry.hpp"
#include "stream/recording/recovery.hpp"

namespace {

std::string join(const std::vector<int64_t>& values) {
  if (values.empty()) return "none";
  return fmt::format("{}", fmt::join(values, ","));
}

void run(const std::string& session_dir) {
  const rtf::stream::RecoveryReport report = rtf::stream::recover_session(session_dir);
  if (!report.error.empty()) throw std::runtime_error(report.error);
  int incomplete = 0;
  for (const auto& r : report.runs) {
    fmt::print("run {}: {} of {} journaled volumes recovered{}{}\n", r.run, r.recovered, r.journaled,
               r.ended ? "" : " (run had not ended)", r.torn_tail ? " (torn last journal line ignored)" : "");
    fmt::print("  missing indices: {}\n", join(r.missing));
    fmt::print("  corrupt entries: {}\n", r.corrupt.size());
    for (const auto& c : r.corrupt) fmt::print("    volume {}: {}\n", c.index, c.reason);
    for (const auto& line : r.bad_lines) fmt::print("    unreadable journal {}\n", line);
    if (!r.error.empty()) fmt::print("  error: {}\n", r.error);
    fmt::print("  output: {}\n", r.nifti.empty() ? std::string("none") : r.nifti.string());
    if (!r.complete()) ++incomplete;
  }
  if (report.runs.empty()) fmt::print("no runs in {}\n", session_dir);
  if (incomplete > 0) {
    throw std::runtime_error(
        fmt::format("{} of {} runs not fully recovered (corrupt or unreadable journal entries, or a bold.nii.gz "
                    "that could not be written: see above)",
                    incomplete, report.runs.size()));
  }
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& /*globals*/) {
  auto session_dir = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand(
      "recover", "Rebuild each run's bold.nii.gz in a session directory from its journal (after a crash)");
  cmd->add_option("SESSION_DIR", *session_dir, "Session directory written by the recorder")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->callback([session_dir] { run(*session_dir); });
}

RTF_REGISTER_COMMAND(70, setup);

}  // namespace
