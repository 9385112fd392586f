// `rtfmri mask`'s work (core/mask/mask_command.hpp).
#include "core/mask/mask_command.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

#include "core/io/data_lookup.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"
#include "core/mask/template_mask.hpp"
#include "core/util/stopwatch.hpp"

namespace rtf {
namespace {

// The mean of all volumes, or one volume, as a 3D image.
Image pick_volume(const Image& series, int64_t volume) {
  if (volume >= series.nt()) {
    throw std::invalid_argument(fmt::format("--volume {}: the input has {} volume(s)", volume, series.nt()));
  }
  if (volume >= 0) return series.extract_volume(volume);
  Image mean = series.extract_volume(0);
  for (int64_t t = 1; t < series.nt(); ++t) {
    const auto v = series.volume(t);
    for (size_t i = 0; i < v.size(); ++i) mean.data()[i] += v[i];
  }
  for (float& x : mean.data()) x /= static_cast<float>(series.nt());
  return mean;
}

void run_template(const MaskCommandOptions& args, const Image& series, Device& device, const Stopwatch& clock) {
  std::filesystem::path head = args.template_head, brain = args.template_brain;
  if (args.template_head == "colin27") {
    head = find_installed_data("mricron/ch2.nii.gz", executable_dir());
    if (brain.empty()) brain = find_installed_data("mricron/ch2bet.nii.gz", executable_dir());
  } else if (brain.empty()) {
    throw std::invalid_argument("--template PATH needs --template-brain (the template's brain mask or brain image)");
  }
  const Image subject = pick_volume(series, args.use_mean ? -1 : args.spec.volume);
  TemplateMaskSpec spec;
  spec.registration.cost = args.cost == "ncc" ? LinearCost::kNcc : LinearCost::kMi;
  const TemplateMask mask = template_brain_mask(device, subject, read_nifti(head), read_nifti(brain), spec);
  ImageHeader h = subject.header();
  h.description = "rtfmri brain mask (template)";
  io::OutputSet outputs;  // removed, not left half-written, on a failure or Ctrl-C
  write_nifti(outputs.add(args.output), Image(h, std::vector<float>(mask.inside.begin(), mask.inside.end())),
              DataType::kUint8);
  outputs.commit();
  const double percent = 100.0 * static_cast<double>(mask.count) / static_cast<double>(mask.inside.size());
  const bool mi = spec.registration.cost == LinearCost::kMi;
  spdlog::info("mask: {} of {} voxels ({:.1f}%) inside {}'s brain after registration ({} {:.4f}) -> {} ({:.2f} s)",
               mask.count, mask.inside.size(), percent, head.string(), mi ? "MI" : "NCC",
               mi ? mask.registration.mi : mask.registration.ncc, args.output, clock.seconds());
}

}  // namespace

void run_mask_command(const MaskCommandOptions& args, const DeviceOpener& open_device) {
  Stopwatch clock;
  const Image series = read_nifti(args.input);
  auto device = open_device();
  if (!args.template_head.empty()) {
    run_template(args, series, *device, clock);
    return;
  }
  BrainMaskSpec spec = args.spec;
  if (args.use_mean) spec.volume = -1;
  const BrainMask mask = compute_brain_mask(*device, series, spec);
  ImageHeader h = series.header();
  h.num_volumes = 1;
  h.description = "rtfmri brain mask";
  Image out(h, std::vector<float>(mask.inside.begin(), mask.inside.end()));
  io::OutputSet outputs;  // removed, not left half-written, on a failure or Ctrl-C
  write_nifti(outputs.add(args.output), out, DataType::kUint8);
  outputs.commit();
  const double percent = 100.0 * static_cast<double>(mask.count) / static_cast<double>(mask.inside.size());
  spdlog::info("mask: {} of {} voxels ({:.1f}%) above {:.4g} -> {} ({:.2f} s)", mask.count, mask.inside.size(), percent,
               mask.threshold, args.output, clock.seconds());
  if (mask.count == 0) spdlog::warn("the mask is empty: check the input or lower --fraction");
}

}  // namespace rtf
