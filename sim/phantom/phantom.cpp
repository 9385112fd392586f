// make_phantom: template -> tissue model -> design, regions, motion -> ground truth on volume 0's grid -> synthesis.
#include "sim/phantom/phantom.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <system_error>

#include "core/io/nifti_io.hpp"
#include "core/temporal/slice_order.hpp"
#include "sim/phantom/motion_trajectory.hpp"
#include "sim/phantom/synthesis.hpp"
#include "sim/phantom/template_channels.hpp"
#include "sim/phantom/tissue_model.hpp"

namespace rtf::sim {
namespace {

TsnrSummary summarise(std::vector<double> values) {
  TsnrSummary s;
  std::erase_if(values, [](double v) { return !std::isfinite(v); });
  s.voxels = static_cast<int64_t>(values.size());
  if (values.empty()) return s;
  double sum = 0.0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  s.median = n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
  return s;
}

// Samples every channel of `volume` into the unmoved EPI grid: result[voxel * channels + c].
std::vector<float> sample_unmoved(const ChannelVolume& volume, const EpiGrid& grid, int supersample) {
  const VoxelSampler sampler(volume, grid, supersample);
  const Eigen::Matrix4d g = sampler.epi_to_template(Eigen::Matrix4d::Identity());
  const int64_t nx = grid.dims[0];
  std::vector<float> out(static_cast<size_t>(grid.voxels() * volume.channels), 0.0f);
  for (int64_t z = 0; z < grid.dims[2]; ++z) {
    for (int64_t y = 0; y < grid.dims[1]; ++y) {
      sampler.sample_row(g, y, z, out.data() + ((z * grid.dims[1] + y) * nx) * volume.channels);
    }
  }
  return out;
}

}  // namespace

PhantomResult make_phantom(const PhantomSpec& spec) {
  std::error_code ec;
  if (spec.template_path.empty()) {
    throw std::runtime_error(
        "phantom: no template given (the default is mricron/ch2bet.nii.gz from scripts/fetch-data.sh)");
  }
  if (!std::filesystem::is_regular_file(spec.template_path, ec)) {
    throw std::runtime_error(fmt::format(
        "phantom: template '{}' not found; install Colin27 (Debian package mricron-data) with scripts/fetch-data.sh "
        "build/data, or pass another brain-extracted T1 with --template",
        spec.template_path.string()));
  }
  return make_phantom(spec, read_nifti(spec.template_path));
}

PhantomResult make_phantom(const PhantomSpec& spec_in, const Image& t1) {
  const auto start = std::chrono::steady_clock::now();
  PhantomResult r;
  r.spec = spec_in;
  PhantomSpec& spec = r.spec;
  if (spec.regions.empty()) spec.regions = default_regions();
  const double run_s = static_cast<double>(spec.volumes) * spec.tr_s;
  if (spec.design == "block") spec.events = block_events(spec.block_on_s, spec.block_off_s, run_s);
  validate(spec);

  const TissueModel tissue = build_tissue_model(t1);
  r.tissue_centres = tissue.centres;
  r.template_counts = tissue.counts;
  const Eigen::Vector3d centre = spec.centre_mm
                                     ? Eigen::Vector3d((*spec.centre_mm)[0], (*spec.centre_mm)[1], (*spec.centre_mm)[2])
                                     : default_grid_centre(tissue, spec.grid, spec.voxel_mm);
  spec.centre_mm = std::array<double, 3>{centre.x(), centre.y(), centre.z()};
  r.grid = make_epi_grid(spec.grid, spec.voxel_mm, centre);

  r.design = Design(spec.events, spec.volumes, spec.tr_s, spec.microtime);
  r.regions = resolve_regions(spec.regions, r.design, spec.psc);
  r.region_gm_mm3 = region_gm_volume_mm3(tissue, r.regions);
  const int conditions = static_cast<int>(r.design.conditions().size());

  if (!spec.motion_override.empty()) {
    r.motion.assign(spec.motion_override.begin(), spec.motion_override.begin() + spec.volumes);
  } else {
    r.motion =
        make_motion(spec.motion, spec.volumes, spec.tr_s, spec.max_translation_mm, spec.max_rotation_deg, spec.seed);
  }
  const auto nz = static_cast<int>(spec.grid[2]);
  r.slice_times_s = spec.slice_order == "none" ? std::vector<double>(static_cast<size_t>(nz), 0.0)
                                               : slice_times(parse_slice_order(spec.slice_order), nz, spec.tr_s);
  r.levels = noise_levels(spec);

  // Ground truth on the unmoved grid.
  const ChannelVolume signal = signal_channels(tissue, spec.baseline, spec.physio_weight, r.regions, conditions);
  const int64_t nvox = r.grid.voxels();
  const auto unmoved_signal = sample_unmoved(signal, r.grid, spec.supersample);
  {
    const ChannelVolume truth = truth_channels(tissue, r.regions);
    const auto t = sample_unmoved(truth, r.grid, spec.supersample);
    const auto& s = unmoved_signal;
    const ImageHeader h3 = r.grid.header(1, 0.0);
    r.brain_mask = Image(h3);
    r.brain_mask.header().source_type = DataType::kUint8;
    r.tissue_labels = r.brain_mask;
    r.activation_fraction = Image(h3);
    r.activation_mask = r.brain_mask;
    ImageHeader h_frac = h3;
    h_frac.num_volumes = 3;
    r.tissue_fractions = Image(h_frac);
    ImageHeader h_psc = h3;
    h_psc.num_volumes = std::max(1, conditions);
    r.activation_psc = Image(h_psc);
    for (int64_t v = 0; v < nvox; ++v) {
      const float* tv = t.data() + v * truth.channels;
      const float* sv = s.data() + v * signal.channels;
      const auto i = static_cast<size_t>(v);
      const float brain = tv[kCsf] + tv[kGm] + tv[kWm];
      for (int k = 0; k < 3; ++k) r.tissue_fractions.data()[static_cast<size_t>(k * nvox + v)] = tv[k];
      if (brain >= 0.5f) {
        r.brain_mask.data()[i] = 1.0f;
        const int hard = static_cast<int>(std::max_element(tv, tv + 3) - tv);
        r.tissue_labels.data()[i] = static_cast<float>(hard + 1);
      }
      r.activation_fraction.data()[i] = tv[kActivatedChannel];
      if (tv[kActivatedChannel] >= spec.activation_mask_threshold) r.activation_mask.data()[i] = 1.0f;
      for (int c = 0; c < conditions; ++c) {
        const float base = sv[kBaselineChannel];
        r.activation_psc.data()[static_cast<size_t>(c * nvox + v)] =
            base > 0.0f ? 100.0f * sv[kFirstActivationChannel + c] / base : 0.0f;
      }
    }
  }

  // Calibrate the noise so that the median predicted tSNR of grey-matter voxels (GM fraction >= 0.5) is the target.
  {
    std::vector<float> base, weight;
    for (int64_t v = 0; v < nvox; ++v) {
      if (r.tissue_fractions.data()[static_cast<size_t>(kGm * nvox + v)] < 0.5f) continue;
      const float* sv = unmoved_signal.data() + v * signal.channels;
      base.push_back(sv[kBaselineChannel]);
      weight.push_back(sv[kPhysioChannel]);
    }
    r.levels = calibrate_noise(r.levels, base, weight, spec.tsnr);
  }

  SynthesisInputs in;
  in.levels = r.levels;
  in.spec = &spec;
  in.grid = &r.grid;
  in.signal = &signal;
  in.motion = &r.motion;
  in.design = &r.design;
  in.slice_times_s = r.slice_times_s;
  in.measure.resize(static_cast<size_t>(nvox));
  for (int64_t v = 0; v < nvox; ++v)
    in.measure[static_cast<size_t>(v)] = r.brain_mask.data()[static_cast<size_t>(v)] > 0;
  SynthesisResult syn = synthesize(in);
  r.bold = std::move(syn.bold);
  r.bold.header().description = "rtfmri sim phantom";
  r.threads = syn.threads;
  r.seconds_synthesis = syn.seconds;

  std::vector<double> csf, gm, wm, gm_core;
  const auto& f = r.tissue_fractions.data();
  for (int64_t v = 0; v < nvox; ++v) {
    const double ts = syn.tsnr[static_cast<size_t>(v)];
    if (!std::isfinite(ts)) continue;
    if (f[static_cast<size_t>(kCsf * nvox + v)] >= 0.5f) csf.push_back(ts);
    if (f[static_cast<size_t>(kGm * nvox + v)] >= 0.5f) gm.push_back(ts);
    if (f[static_cast<size_t>(kWm * nvox + v)] >= 0.5f) wm.push_back(ts);
    if (f[static_cast<size_t>(kGm * nvox + v)] >= 0.8f) gm_core.push_back(ts);
  }
  r.tsnr_csf = summarise(std::move(csf));
  r.tsnr_gm = summarise(std::move(gm));
  r.tsnr_wm = summarise(std::move(wm));
  r.tsnr_gm_core = summarise(std::move(gm_core));
  r.seconds_total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace rtf::sim
