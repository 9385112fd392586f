// The command-line reference, generated from the CLI11 declarations themselves (as MRtrix3 generates its command
// reference from each command's usage()): `rtfmri help --markdown` prints it, and docs/cli.md is that output,
// checked against the binary by scripts/check_cli_docs.sh.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace rtf::cli {

// Markdown: the program's description and global options, a table of contents, then every subcommand at any depth (in
// --help's order) with its description, usage line, arguments and options: names, value type with its checks,
// default, help text, and whether it is required, repeatable, read from the environment or excludes others.
std::string cli_reference_markdown(const CLI::App& app);

}  // namespace rtf::cli
