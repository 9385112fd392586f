// `rtfmri qa BOLD --out PREFIX [--mask M] [--motion FILE]` or `rtfmri qa SESSION_DIR`: the data quality of a 4D run
// (core/qa/qa_command.hpp, docs/algorithms/qa.md).
#include <filesystem>
#include <memory>
#include <stdexcept>

#include "cli/command_support.hpp"
#include "core/qa/qa_command.hpp"

namespace {

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto o = std::make_shared<rtf::QaCommandOptions>();
  auto* cmd = app.add_subcommand(
      "qa",
      "Data quality of a 4D run (or of every run of a recorded session) on the device: per volume the global signal, "
      "DVARS, AFNI 3dToutcount's outlier "
      "fraction, 3dTqual's quality index and slice drop-out/spike z-scores; mean, SD and tSNR maps; a summary with "
      "MRIQC's names (docs/algorithms/qa.md)");
  cmd->add_option("BOLD", o->input,
                  "4D NIfTI (at least 2 volumes), or a recorded session's folder (rtfmri run's SESSION_DIR): each of "
                  "its runs/<run>/bold.nii.gz, the files written beside it (qa.tsv, qa.json, qa_*.nii.gz), its "
                  "motion.tsv as --motion")
      ->required()
      ->check(CLI::ExistingPath);
  cmd->add_option(
      "--out", o->out,
      "Output prefix (a NIfTI input): PREFIX_qa.tsv, PREFIX_qa.json, PREFIX_qa_mean/_sd/_tsnr/_mask.nii.gz");
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
  auto fd_filter = std::make_shared<std::string>("none");
  auto censor = std::make_shared<std::string>("firmm");
  cmd->add_option("--motion", o->motion,
                  "Motion parameters, one row per volume (rtfmri's motion.tsv / PREFIX_fd.tsv, or FSL's .par): adds "
                  "FD (Power, 50 mm) per volume and FIRMM's usable-data tally to the outputs")
      ->check(CLI::ExistingFile);
  cmd->add_option("--tr", o->tr_s, "TR in seconds (default: the header's)")->check(rtf::cli::positive());
  cmd->add_option("--fd-filter", *fd_filter,
                  "Respiration filter of the motion parameters before FD, for fast TRs (Fair et al. 2020): notch over "
                  "--fd-band-low..--fd-band-high, or lowpass below --fd-cutoff")
      ->check(CLI::IsMember({"none", "notch", "lowpass"}))
      ->capture_default_str();
  cmd->add_option("--fd-band-low", o->fd_filter.band_low_bpm, "Notch: lowest respiration rate, breaths per minute")
      ->check(rtf::cli::positive())
      ->capture_default_str();
  cmd->add_option("--fd-band-high", o->fd_filter.band_high_bpm, "Notch: highest respiration rate, breaths per minute")
      ->check(rtf::cli::positive())
      ->capture_default_str();
  cmd->add_option("--fd-cutoff", o->fd_filter.cutoff_bpm, "Low-pass cutoff, breaths per minute")
      ->check(rtf::cli::positive())
      ->capture_default_str();
  cmd->add_option("--fd-thresholds", o->fd_thresholds, "FD thresholds (mm) of the usable-data tally")
      ->delimiter(',')
      ->check(rtf::cli::positive())
      ->capture_default_str();
  cmd->add_option("--target-minutes", o->target_minutes, "Usable minutes sought: the tally predicts the time to them")
      ->check(rtf::cli::positive())
      ->capture_default_str();
  cmd->add_option("--censor", *censor,
                  "firmm: keep frames with FD below the threshold (FIRMM); power2014: also censor the frame before and "
                  "the two after, then runs of fewer than 5 frames")
      ->check(CLI::IsMember({"firmm", "power2014"}))
      ->capture_default_str();
  cmd->callback([o, fd_filter, censor, &globals] {
    o->fd_filter.kind = rtf::parse_fd_filter(*fd_filter);
    o->censor = rtf::parse_censor_rule(*censor);
    const rtf::DeviceOpener open = [&globals] { return rtf::cli::open_device(globals); };
    if (std::filesystem::is_directory(o->input)) {
      if (!o->out.empty()) throw std::invalid_argument("--out: a session's files go into its runs/<run>/ folders");
      rtf::run_qa_session(*o, open);
    } else {
      if (o->out.empty()) throw std::invalid_argument("--out PREFIX is required for a NIfTI input");
      rtf::run_qa_command(*o, open);
    }
  });
}

RTF_REGISTER_COMMAND(62, setup);

}  // namespace
