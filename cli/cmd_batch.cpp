// `rtfmri batch normalize|glm (--list FILE | --bids ROOT) --out DIR [-- OPTIONS]`: the options; the work is run_batch
// (core/scale/batch.hpp). docs/scale.md.
#include <memory>

#include "cli/command_support.hpp"
#include "core/scale/batch.hpp"

namespace {

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto args = std::make_shared<rtf::BatchOptions>();
  auto* cmd = app.add_subcommand(
      "batch",
      "Run normalize (T1s) or glm (BOLD runs) over many subjects, spread over --devices and mpirun/srun ranks; "
      "each subject's files under --out, a stopped batch restarts where it was (docs/scale.md)");
  cmd->add_option("COMMAND", args->command, "normalize or glm")->required()->check(CLI::IsMember({"normalize", "glm"}));
  cmd->add_option("--list", args->list,
                  "Subject list: one per line, PATH, ID PATH, or (glm) ID PATH EVENTS; relative paths from the "
                  "list's folder; '#' comments")
      ->check(CLI::ExistingFile);
  cmd->add_option("--bids", args->bids,
                  "BIDS folder: sub-*/[ses-*/]anat/*_T1w.nii[.gz] (normalize) or func/*_bold.nii[.gz] with "
                  "*_events.tsv beside (glm); outputs keep the sub-*/[ses-*/]anat|func folders")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--out,-o", args->out,
                  "Output folder: FOLDER/ID_<the command's files>, FOLDER/ID_batch.log, batch.json (per subject: "
                  "status, seconds, files); .chunks/ while running")
      ->required();
  cmd->add_option("OPTIONS", args->options,
                  "After '--': options for every subject's command (e.g. -- --template mni152, or -- --contrast "
                  "'a-b' --noise ar1)");
  cmd->callback([args, &globals] { rtf::run_batch(*args, {globals.device, globals.devices}); });
}

RTF_REGISTER_COMMAND(90, setup);

}  // namespace
