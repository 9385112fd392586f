// `rtfmri recover SESSION_DIR`: rebuild every run's 4D NIfTI from its journal after a crash (docs/recording.md).
#include <memory>

#include "cli/command_support.hpp"
#include "stream/recording/recover_command.hpp"

namespace {

void setup(CLI::App& app, rtf::cli::GlobalOptions& /*globals*/) {
  auto session_dir = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand(
      "recover", "Rebuild each run's bold.nii.gz in a session directory from its journal (after a crash)");
  cmd->add_option("SESSION_DIR", *session_dir, "Session directory written by the recorder")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->callback([session_dir] { rtf::stream::run_recover_command(*session_dir); });
}

RTF_REGISTER_COMMAND(70, setup);

}  // namespace
