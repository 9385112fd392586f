// `rtfmri help [--markdown]`: the help of every subcommand. Plain: what `rtfmri --help` prints; with --markdown: the
// whole command reference in Markdown, generated from the options each command declares (cli/command_support.hpp):
// docs/cli.md is that output.
#include <fmt/format.h>

#include <memory>

#include "cli/command_support.hpp"

namespace {

void setup(CLI::App& app, rtf::cli::GlobalOptions& /*globals*/) {
  auto markdown = std::make_shared<bool>(false);
  auto* cmd =
      app.add_subcommand("help", "Print the help of rtfmri, or with --markdown every subcommand's (docs/cli.md)");
  cmd->add_flag("--markdown", *markdown,
                "The command reference in Markdown: every subcommand at any depth, its description, arguments and "
                "options with their types, defaults and help (docs/cli.md is this output)");
  cmd->callback([&app, markdown] { fmt::print("{}", *markdown ? rtf::cli::cli_reference_markdown(app) : app.help()); });
}

RTF_REGISTER_COMMAND(200, setup);

}  // namespace
