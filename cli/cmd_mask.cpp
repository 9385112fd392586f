// `rtfmri mask IN OUT`: brain mask from a BOLD series (smooth, threshold at a fraction of the mean), or with
// `--template`, the template's brain mask pulled into the subject by registration (for T1s with skull and EPIs).
#include <spdlog/spdlog.h>

#include "cli/cli_support.hpp"
#include "cli/option_checks.hpp"
#include "core/io/data_lookup.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"
#include "core/mask/brain_mask.hpp"
#include "core/mask/template_mask.hpp"

namespace {

struct MaskArgs {
  std::string input, output, template_head, template_brain, cost = "mi";
  rtf::BrainMaskSpec spec;
  bool use_mean = false;
};

// The mean of all volumes, or one volume, as a 3D image.
rtf::Image pick_volume(const rtf::Image& series, int64_t volume) {
  if (volume >= series.nt()) {
    throw std::invalid_argument(fmt::format("--volume {}: the input has {} volume(s)", volume, series.nt()));
  }
  if (volume >= 0) return series.extract_volume(volume);
  rtf::Image mean = series.extract_volume(0);
  for (int64_t t = 1; t < series.nt(); ++t) {
    const auto v = series.volume(t);
    for (size_t i = 0; i < v.size(); ++i) mean.data()[i] += v[i];
  }
  for (float& x : mean.data()) x /= static_cast<float>(series.nt());
  return mean;
}

void run_template(const MaskArgs& args, const rtf::Image& series, rtf::Device& device,
                  const rtf::cli::Stopwatch& clock) {
  std::filesystem::path head = args.template_head, brain = args.template_brain;
  if (args.template_head == "colin27") {
    head = rtf::find_installed_data("mricron/ch2.nii.gz", rtf::executable_dir());
    if (brain.empty()) brain = rtf::find_installed_data("mricron/ch2bet.nii.gz", rtf::executable_dir());
  } else if (brain.empty()) {
    throw std::invalid_argument("--template PATH needs --template-brain (the template's brain mask or brain image)");
  }
  const rtf::Image subject = pick_volume(series, args.use_mean ? -1 : args.spec.volume);
  rtf::TemplateMaskSpec spec;
  spec.registration.cost = args.cost == "ncc" ? rtf::LinearCost::kNcc : rtf::LinearCost::kMi;
  const rtf::TemplateMask mask =
      rtf::template_brain_mask(device, subject, rtf::read_nifti(head), rtf::read_nifti(brain), spec);
  rtf::ImageHeader h = subject.header();
  h.description = "rtfmri brain mask (template)";
  rtf::io::OutputSet outputs;  // removed, not left half-written, on a failure or Ctrl-C
  rtf::write_nifti(outputs.add(args.output), rtf::Image(h, std::vector<float>(mask.inside.begin(), mask.inside.end())),
                   rtf::DataType::kUint8);
  outputs.commit();
  const double percent = 100.0 * static_cast<double>(mask.count) / static_cast<double>(mask.inside.size());
  const bool mi = spec.registration.cost == rtf::LinearCost::kMi;
  spdlog::info("mask: {} of {} voxels ({:.1f}%) inside {}'s brain after registration ({} {:.4f}) -> {} ({:.2f} s)",
               mask.count, mask.inside.size(), percent, head.string(), mi ? "MI" : "NCC",
               mi ? mask.registration.mi : mask.registration.ncc, args.output, clock.seconds());
}

void run(const MaskArgs& args, const rtf::cli::GlobalOptions& globals) {
  rtf::cli::Stopwatch clock;
  const rtf::Image series = rtf::read_nifti(args.input);
  auto device = rtf::cli::open_device(globals);
  if (!args.template_head.empty()) {
    run_template(args, series, *device, clock);
    return;
  }
  rtf::BrainMaskSpec spec = args.spec;
  if (args.use_mean) spec.volume = -1;
  const rtf::BrainMask mask = rtf::compute_brain_mask(*device, series, spec);
  rtf::ImageHeader h = series.header();
  h.num_volumes = 1;
  h.description = "rtfmri brain mask";
  rtf::Image out(h, std::vector<float>(mask.inside.begin(), mask.inside.end()));
  rtf::io::OutputSet outputs;  // removed, not left half-written, on a failure or Ctrl-C
  rtf::write_nifti(outputs.add(args.output), out, rtf::DataType::kUint8);
  outputs.commit();
  const double percent = 100.0 * static_cast<double>(mask.count) / static_cast<double>(mask.inside.size());
  spdlog::info("mask: {} of {} voxels ({:.1f}%) above {:.4g} -> {} ({:.2f} s)", mask.count, mask.inside.size(), percent,
               mask.threshold, args.output, clock.seconds());
  if (mask.count == 0) spdlog::warn("the mask is empty: check the input or lower --fraction");
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto args = std::make_shared<MaskArgs>();
  auto* cmd = app.add_subcommand(
      "mask", "Brain mask from a BOLD series: smooth one volume, keep voxels above a fraction of its mean");
  cmd->add_option("IN", args->input, "Input NIfTI (3D or 4D)")->required()->check(CLI::ExistingFile);
  cmd->add_option("OUT", args->output, "Output mask NIfTI (uint8, 1 inside)")->required();
  cmd->add_option("--fwhm", args->spec.fwhm_mm, "Smoothing FWHM in mm before thresholding")
      ->capture_default_str()
      ->check(rtf::cli::non_negative());
  cmd->add_option("--fraction", args->spec.fraction, "Threshold as a fraction of the smoothed volume's mean")
      ->capture_default_str()
      ->check(rtf::cli::positive());
  auto* volume = cmd->add_option("--volume", args->spec.volume, "Volume to build the mask from (0-based)")
                     ->capture_default_str()
                     ->check(rtf::cli::non_negative());
  cmd->add_flag("--mean", args->use_mean, "Build the mask from the temporal mean of all volumes")->excludes(volume);
  cmd->add_option("--template", args->template_head,
                  "Pull a template's brain mask into IN by registration (12 dof) instead of thresholding: colin27 "
                  "(Debian's mricron-data, with its brain ch2bet) or a template head NIfTI (then --template-brain)");
  cmd->add_option("--template-brain", args->template_brain,
                  "With --template PATH: the template's brain mask or brain-extracted image (nonzero = brain)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--cost", args->cost, "With --template: registration cost, mi (any contrast, e.g. EPI) or ncc (T1)")
      ->capture_default_str()
      ->check(CLI::IsMember({"mi", "ncc"}));
  cmd->callback([args, &globals] { run(*args, globals); });
}

RTF_REGISTER_COMMAND(60, setup);

}  // namespace
