// Registry of rtfmri subcommands. Each cli/cmd_*.cpp registers one subcommand with
// RTF_REGISTER_COMMAND(order, setup_fn); setup_fn adds a CLI11 subcommand and its callback.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

namespace rtf::cli {

struct GlobalOptions {
  std::string device;   // --device: gpu, cpu, or P:D (else RTFMRI_DEVICE, else auto)
  std::string devices;  // --devices: several devices (core/scale/device_list.hpp); empty: --device alone
  bool verbose = false;
};

using CommandSetup = std::function<void(CLI::App& app, GlobalOptions& globals)>;

struct CommandEntry {
  int order;  // position in --help
  CommandSetup setup;
};

std::vector<CommandEntry>& command_registry();

struct CommandRegistrar {
  CommandRegistrar(int order, CommandSetup setup) { command_registry().push_back({order, std::move(setup)}); }
};

}  // namespace rtf::cli

#define RTF_CLI_CONCAT_INNER(a, b) a##b
#define RTF_CLI_CONCAT(a, b) RTF_CLI_CONCAT_INNER(a, b)
#define RTF_REGISTER_COMMAND(order, fn) \
  static const ::rtf::cli::CommandRegistrar RTF_CLI_CONCAT(rtf_command_registrar_, __LINE__)(order, fn)
