// `rtfmri info FILE...`: header and simple statistics of NIfTI images (dims, voxel size, TR,
// datatype, affine, mean intensity, median temporal SNR inside a quick intensity mask).
#include <memory>

#include "cli/command_support.hpp"
#include "core/io/info_command.hpp"

namespace {

void setup(CLI::App& app, rtf::cli::GlobalOptions&) {
  auto files = std::make_shared<std::vector<std::string>>();
  auto* cmd = app.add_subcommand("info", "Print NIfTI header fields and simple statistics (mean, median tSNR)");
  cmd->add_option("FILES", *files, "NIfTI files")->required()->check(CLI::ExistingFile);
  cmd->callback([files] { rtf::run_info_command(*files); });
}

RTF_REGISTER_COMMAND(20, setup);

}  // namespace
