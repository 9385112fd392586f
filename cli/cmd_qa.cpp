// `rtfmri qa BOLD --out PREFIX [--mask M]`: the data quality of a 4D run (core/qa/qa_command.hpp,
// docs/algorithms/qa.md).
#include <memory>

#include "cli/command_support.hpp"
#include "core/qa/qa_command.hpp"

namespace {

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto o = std::make_shared<rtf::QaCommandOptions>();
  auto* cmd = app.add_subcommand(
      "qa",
      "Data quality of a 4D run on the device: per volume the global signal, DVARS, AFNI 3dToutcount's outlier "
      "fraction, 3dTqual's quality index and slice drop-out/spike z-scores; mean, SD and tSNR maps; a summary with "
      "MRIQC's names (docs/algorithms/qa.md)");
  cmd->add_option("BOLD", o->input, "4D NIfTI (at least 2 volumes)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--out", o->out, "Output prefix: PREFIX_qa.tsv, PREFIX_qa.json, PREFIX_mean/_sd/_tsnr/_mask.nii.gz")
      ->required();
  cmd->add_option("--mask", o->mask, "Mask on the input's grid (default: a brain mask of the mean volume)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--slice-history", o->slices.history, "Volumes each slice's mean is compared with (the latest)")
      ->check(CLI::Range(2, 100000))
      ->capture_default_str();
  cmd->add_option("--slice-min-history", o->slices.min_history, "Volumes of history before slices are scored")
      ->check(CLI::Range(2, 100000))
      ->capture_default_str();
  cmd->add_option("--slice-threshold", o->slices.threshold, "|z| above which a slice is flagged (drop-out or spike)")
      ->check(rtf::cli::positive())
      ->capture_default_str();
  cmd->callback([o, &globals] { rtf::run_qa_command(*o, [&globals] { return rtf::cli::open_device(globals); }); });
}

RTF_REGISTER_COMMAND(62, setup);

}  // namespace
