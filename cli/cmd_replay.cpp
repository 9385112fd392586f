// `rtfmri replay SESSION_DIR [--config F] [--out DIR]`: a recorded session through the live pipeline, as fast as the
// device allows, every volume analysed; the per-run files (motion.tsv, feedback.tsv, final maps) go to --out
// (default SESSION_DIR/replay) for comparison with the live run's, and the outputs (PUB, TCP) can feed a viewer.
// A file of --out that could not be written (whole) is named and the exit status is 1. docs/live.md.
#include <fmt/format.h>

#include <memory>
#include <stdexcept>

#include "cli/cli_support.hpp"
#include "cli/command_registry.hpp"
#include "cli/pipeline_flags.hpp"
#include "stream/output/output_failures.hpp"
#include "stream/pipeline/session_replay.hpp"

namespace {

struct ReplayCli {
  std::string session_dir;
  std::string out;
  std::vector<std::string> runs;
  rtf::cli::PipelineFlags pipeline;
};

void run(const ReplayCli& o, const CLI::App& cmd, const rtf::cli::GlobalOptions& globals) {
  using namespace rtf::stream;
  const rtf::cli::Stopwatch clock;
  PipelineConfig c = rtf::cli::pipeline_config_from(o.pipeline, cmd);
  const std::filesystem::path out =
      o.out.empty() ? std::filesystem::path(o.session_dir) / "replay" : std::filesystem::path(o.out);
  // A replay publishes only when asked to (a live server may hold the default ports).
  if (o.pipeline.config_file.empty()) {
    if (cmd.count("--results-pub") == 0) c.results_pub.clear();
    if (cmd.count("--feedback-tcp") == 0) c.feedback_tcp.clear();
  }
  c.session_dir = out.string();
  validate(c);
  auto device = rtf::cli::open_device(globals);
  zmq::context_t context(1);
  LiveOutputs outputs(context, c);
  const auto runs = replay_session(*device, c, o.session_dir, out, &outputs, o.runs);
  outputs.stop();
  for (const ReplayedRun& r : runs) {
    fmt::print("replay: run {}: {} volumes in {:.2f} s ({:.1f} ms per volume){}\n", r.run, r.volumes, r.seconds,
               r.volumes > 0 ? 1e3 * r.seconds / static_cast<double>(r.volumes) : 0.0,
               r.corrupt > 0 ? fmt::format(", {} corrupt volumes left out", r.corrupt) : "");
  }
  const std::vector<std::string> lost = rtf::stream::output_failures().lines(out);
  if (!lost.empty()) {
    for (const std::string& line : lost) fmt::print("replay: not written: {}\n", line);
    throw std::runtime_error(
        fmt::format("replay: {} of the outputs in {} not written whole (listed above)", lost.size(), out.string()));
  }
  fmt::print("replay: wrote {} ({:.2f} s)\n", out.string(), clock.seconds());
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto o = std::make_shared<ReplayCli>();
  auto* cmd = app.add_subcommand("replay", "Run a recorded session through the live pipeline, as fast as possible");
  cmd->add_option("SESSION_DIR", o->session_dir, "Session directory written by rtfmri run")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--out", o->out, "Output session directory (default: SESSION_DIR/replay)");
  cmd->add_option("--run", o->runs, "Only these runs (repeatable; default: all)");
  rtf::cli::add_pipeline_flags(*cmd, o->pipeline);
  cmd->callback([o, cmd, &globals] { run(*o, *cmd, globals); });
}

RTF_REGISTER_COMMAND(101, setup);

}  // namespace
