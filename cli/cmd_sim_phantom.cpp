// `rtfmri sim phantom --out DIR [...]`: synthetic BOLD from the Colin27 template with known motion, activation and
// noise, and its ground truth (docs/algorithms/phantom.md).
#include <memory>

#include "cli/command_support.hpp"
#include "sim/phantom/phantom_command.hpp"

namespace {

using rtf::sim::PhantomCommandOptions;

// The output, the template and the acquisition: grid, voxels, volumes, TR, slice order, baselines.
void add_acquisition_options(CLI::App* cmd, PhantomCommandOptions* c) {
  auto& s = c->spec;
  cmd->add_option("--out", c->out, "Output directory")->required();
  cmd->add_option(
         "--template", c->template_path,
         "Brain-extracted T1 template (default: mricron/ch2bet.nii.gz in $RTFMRI_DATA_DIR or the build's data)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--grid", c->grid, "EPI matrix NXxNYxNZ")->capture_default_str();
  cmd->add_option("--voxel", c->voxel, "Voxel size in mm: one number, or AxBxC")->capture_default_str();
  cmd->add_option("--centre", c->centre, "World mm (x,y,z) of the grid centre (default: on the brain)");
  cmd->add_option("--volumes", s.volumes, "Number of volumes")->capture_default_str()->check(rtf::cli::positive());
  cmd->add_option("--tr", s.tr_s, "Repetition time in seconds")->capture_default_str()->check(rtf::cli::positive());
  cmd->add_option("--slice-order", s.slice_order,
                  "none (every slice at t*TR) or ascending|descending|interleaved|interleaved-siemens")
      ->capture_default_str();
  cmd->add_option("--supersample", s.supersample, "Sub-samples per axis per voxel (partial volume)")
      ->capture_default_str()
      ->check(CLI::Range(1, 8));
  cmd->add_option("--baseline", c->baseline, "EPI baselines of pure CSF,GM,WM in output units [15000,10000,7500]");
}

void add_motion_options(CLI::App* cmd, PhantomCommandOptions* c) {
  auto& s = c->spec;
  cmd->add_option("--motion", c->motion, "Head motion")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "drift", "realistic"}));
  cmd->add_option("--max-translation", s.max_translation_mm, "Bound on |translation| per axis, mm")
      ->capture_default_str()
      ->check(rtf::cli::non_negative());
  cmd->add_option("--max-rotation", s.max_rotation_deg, "Bound on |rotation| per axis, degrees")
      ->capture_default_str()
      ->check(rtf::cli::non_negative());
  cmd->add_option("--motion-file", c->motion_file,
                  "Use this trajectory: a motion.tsv like the phantom writes, or an FSL .par (one row per volume)")
      ->check(CLI::ExistingFile);
}

// Where and when the brain is active.
void add_activation_options(CLI::App* cmd, PhantomCommandOptions* c) {
  auto& s = c->spec;
  cmd->add_option("--region", c->regions,
                  "Activation sphere x,y,z,radius[,trial_type[,psc]] in template mm (repeatable; default: bilateral "
                  "M1 and V1). Negative first value: --region=-38,-24,56,8")
      ->allow_extra_args(false);
  cmd->add_option("--design", s.design, "block or events (--events implies events)")
      ->capture_default_str()
      ->check(CLI::IsMember({"block", "events"}));
  cmd->add_option("--block-on", s.block_on_s, "Block design: seconds on")
      ->capture_default_str()
      ->check(rtf::cli::positive());
  cmd->add_option("--block-off", s.block_off_s, "Block design: seconds off (the run starts with rest)")
      ->capture_default_str()
      ->check(rtf::cli::non_negative());
  cmd->add_option("--events", c->events_file, "BIDS events.tsv (onset, duration[, trial_type])")
      ->check(CLI::ExistingFile);
  cmd->add_option("--psc", s.psc, "Peak percent signal change of pure grey matter")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--mask-threshold", s.activation_mask_threshold,
                  "activation_mask: voxels whose activated grey-matter fraction is at least this")
      ->capture_default_str()
      ->check(CLI::Range(1e-6, 1.0));
  cmd->add_option("--microtime", s.microtime, "Regressor time bins per TR")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
}

// Noise and drift, the seed, the output's datatype and the threads.
void add_noise_options(CLI::App* cmd, PhantomCommandOptions* c) {
  auto& s = c->spec;
  cmd->add_option(
         "--tsnr", s.tsnr,
         "Grey-matter temporal SNR: median over voxels with GM fraction >= 0.5 of mean / noise sd (0: no thermal "
         "or physiological noise)")
      ->capture_default_str()
      ->check(rtf::cli::non_negative());
  cmd->add_option("--physio-share", s.physio_share, "Share of the GM noise variance that is physiological")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.99));
  cmd->add_option("--cardiac-hz", s.cardiac_hz, "Mean heart rate")->capture_default_str()->check(rtf::cli::positive());
  cmd->add_option("--respiratory-hz", s.respiratory_hz, "Mean breathing rate")
      ->capture_default_str()
      ->check(rtf::cli::positive());
  cmd->add_option("--drift", s.drift_percent, "Peak slow drift in percent of the signal (0: none)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 50.0));
  cmd->add_option("--noise", c->noise, "Thermal noise: rician (magnitude image) or gaussian")
      ->capture_default_str()
      ->check(CLI::IsMember({"rician", "gaussian"}));
  cmd->add_flag("--no-noise", c->no_noise, "No thermal, physiological or drift component (same as --tsnr 0 --drift 0)");
  cmd->add_option("--seed", s.seed, "Random seed (same seed, same output)")->capture_default_str();
  cmd->add_option("--datatype", c->datatype, "bold.nii.gz voxel type")
      ->capture_default_str()
      ->check(CLI::IsMember({"int16", "float32"}));
  cmd->add_option("--threads", s.threads, "Worker threads (0: all cores)")
      ->capture_default_str()
      ->check(rtf::cli::non_negative());
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& /*globals*/) {
  auto c = std::make_shared<PhantomCommandOptions>();
  auto* cmd = rtf::cli::sim_group(app).add_subcommand(
      "phantom", "Synthetic BOLD from the Colin27 template with known motion, activation and noise, plus ground truth");
  add_acquisition_options(cmd, c.get());
  add_motion_options(cmd, c.get());
  add_activation_options(cmd, c.get());
  add_noise_options(cmd, c.get());
  cmd->callback([c] { rtf::sim::run_phantom_command(*c); });
}

RTF_REGISTER_COMMAND(82, setup);

}  // namespace
