// `rtfmri replay SESSION_DIR [--config F] [--out DIR]`: a recorded session through the live pipeline, as fast as the
// device allows, every volume analysed; the per-run files (motion.tsv, feedback.tsv, final maps) go to --out
// (default SESSION_DIR/replay) for comparison with the live run's, and the outputs (PUB, TCP) can feed a viewer.
// A file of --out that could not be written (whole) is named and the exit status is 1. docs/live.md.
#include <memory>

#include "cli/command_support.hpp"
#include "stream/pipeline/replay_command.hpp"

namespace {

struct ReplayCli {
  rtf::stream::ReplayCommandOptions replay;
  rtf::cli::PipelineFlags pipeline;
};

// The configuration: --config and the flags; a replay publishes only when asked to (a live server may hold the
// default ports).
rtf::stream::PipelineConfig replay_config(const rtf::cli::PipelineFlags& flags, const CLI::App& cmd) {
  rtf::stream::PipelineConfig c = rtf::cli::pipeline_config_from(flags, cmd);
  if (flags.config_file.empty()) {
    if (cmd.count("--results-pub") == 0) c.results_pub.clear();
    if (cmd.count("--feedback-tcp") == 0) c.feedback_tcp.clear();
  }
  return c;
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto o = std::make_shared<ReplayCli>();
  auto* cmd = app.add_subcommand("replay", "Run a recorded session through the live pipeline, as fast as possible");
  cmd->add_option("SESSION_DIR", o->replay.session_dir, "Session directory written by rtfmri run")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--out", o->replay.out, "Output session directory (default: SESSION_DIR/replay)");
  cmd->add_option("--run", o->replay.runs, "Only these runs (repeatable; default: all)");
  rtf::cli::add_pipeline_flags(*cmd, o->pipeline);
  cmd->callback([o, cmd, &globals] {
    o->replay.config = replay_config(o->pipeline, *cmd);
    rtf::stream::run_replay_command(o->replay, [&globals] { return rtf::cli::open_device(globals); });
  });
}

RTF_REGISTER_COMMAND(101, setup);

}  // namespace
