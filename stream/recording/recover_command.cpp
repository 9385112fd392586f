// `rtfmri recover`'s work (stream/recording/recover_command.hpp).
#include "stream/recording/recover_command.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

#include "stream/recording/recovery.hpp"

namespace rtf::stream {
namespace {

std::string join(const std::vector<int64_t>& values) {
  if (values.empty()) return "none";
  return fmt::format("{}", fmt::join(values, ","));
}

}  // namespace

void run_recover_command(const std::string& session_dir) {
  const RecoveryReport report = recover_session(session_dir);
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

}  // namespace rtf::stream
