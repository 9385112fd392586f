// `rtfmri qa`'s work (core/qa/qa_command.hpp): the whole run on the device at once (outliers, the median volume, every
// volume's quality index), then volume by volume through one staging buffer (moments, slice means, DVARS); the files
// written as one set.
#include "core/qa/qa_command.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "core/image/same_grid.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"
#include "core/mask/brain_mask.hpp"
#include "core/motion/device_dvars.hpp"
#include "core/motion/motion_files.hpp"
#include "core/motion/motion_metrics.hpp"
#include "core/qa/outlier_count.hpp"
#include "core/qa/quality_index.hpp"
#include "core/qa/slice_means.hpp"
#include "core/qa/voxel_moments.hpp"
#include "core/util/progress_log.hpp"
#include "core/util/stopwatch.hpp"

namespace rtf {

namespace {

struct VolumeRow {
  double global = 0, dvars = 0, outlier_fraction = 0, quality = 0;
  double fd = std::numeric_limits<double>::quiet_NaN();  // with --motion
  int64_t outliers = 0;
  SliceZ slices;
};

std::vector<uint8_t> read_mask(const QaCommandOptions& o, const Image& bold) {
  const Image image = read_nifti(o.mask);
  require_same_grid(bold.header(), o.input, image.header(), o.mask);
  const auto v = image.volume(0);
  std::vector<uint8_t> mask(v.size());
  std::transform(v.begin(), v.end(), mask.begin(), [](float x) { return x != 0.0f ? 1 : 0; });
  return mask;
}

// A value for the TSV: "n/a" (BIDS) where it is undefined.
std::string cell(double x) {
  return std::isfinite(x) ? fmt::format("{:.6g}", x) : "n/a";
}

std::string table(const std::vector<VolumeRow>& rows, bool with_fd) {
  std::string out =
      "volume\tglobal_signal\tdvars\toutliers\toutlier_fraction\tquality_index\tslice_z_worst\tworst_slice\t"
      "flagged_slices";
  out += with_fd ? "\tfd\n" : "\n";
  for (size_t t = 0; t < rows.size(); ++t) {
    const VolumeRow& r = rows[t];
    std::string flagged;
    for (const int z : r.slices.flagged) flagged += (flagged.empty() ? "" : ",") + std::to_string(z);
    out += fmt::format(
        "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}", t, cell(r.global), cell(r.dvars), r.outliers, cell(r.outlier_fraction),
        cell(r.quality), r.slices.worst_slice < 0 ? "n/a" : cell(r.slices.worst_z),
        r.slices.worst_slice < 0 ? "n/a" : std::to_string(r.slices.worst_slice), flagged.empty() ? "n/a" : flagged);
    out += with_fd ? "\t" + cell(r.fd) + "\n" : "\n";
  }
  return out;
}

// The mean of the finite values (NaN when none).
double finite_mean(const std::vector<double>& values) {
  double sum = 0;
  int64_t n = 0;
  for (const double x : values) {
    if (std::isfinite(x)) {
      sum += x;
      ++n;
    }
  }
  return n > 0 ? sum / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

std::string qa_file(const std::string& out, const std::string& name) {
  return !out.empty() && out.back() == '/' ? out + name : out + "_" + name;
}

namespace {

// One run; `device()` opens the device on first use (after the inputs are checked) and keeps it.
void qa_one(const QaCommandOptions& o, const std::function<Device&()>& device_of) {
  const Stopwatch clock;
  const SliceZScores check_options(o.slices);  // refuses bad options before the input is read
  const std::vector<RigidParams> motion = o.motion.empty() ? std::vector<RigidParams>{} : read_motion_file(o.motion);
  for (const double threshold : o.fd_thresholds) {
    if (!(threshold > 0) || !std::isfinite(threshold)) {
      throw std::invalid_argument(fmt::format("FD thresholds must be numbers > 0 mm (got {})", threshold));
    }
  }
  nlohmann::json timing;  // seconds per phase, for the summary
  Stopwatch phase;
  const auto lap = [&](const char* name) {
    timing[name] = phase.seconds();
    phase = Stopwatch();
  };
  const Image bold = read_nifti(o.input);
  if (bold.nt() < 2) {
    throw std::invalid_argument(
        fmt::format("{}: qa needs a 4D series of at least 2 volumes (it has {})", o.input, bold.nt()));
  }
  const double tr_s = o.tr_s > 0 ? o.tr_s : bold.header().tr_s;
  if (!motion.empty() && motion.size() != static_cast<size_t>(bold.nt())) {
    throw std::invalid_argument(
        fmt::format("{}: {} rows of motion for {} volumes of {}", o.motion, motion.size(), bold.nt(), o.input));
  }
  if (!motion.empty() && !(tr_s > 0)) {
    throw std::invalid_argument(
        fmt::format("{} has no TR in its header: give --tr for the usable-data tally", o.input));
  }
  std::optional<MotionFilter> motion_filter;
  if (!motion.empty()) motion_filter.emplace(o.fd_filter, tr_s);  // refuses a band it cannot design at this TR
  std::vector<uint8_t> mask = o.mask.empty() ? std::vector<uint8_t>{} : read_mask(o, bold);
  lap("read");
  Device* device = &device_of();
  lap("device");
  if (mask.empty()) mask = compute_brain_mask(*device, bold, {.volume = -1}).inside;
  lap("mask");
  const auto mask_voxels = std::count_if(mask.begin(), mask.end(), [](uint8_t m) { return m != 0; });
  if (mask_voxels == 0) {
    throw std::invalid_argument(fmt::format("{}: the mask has no voxel inside", o.mask.empty() ? o.input : o.mask));
  }
  const ImageHeader& h = bold.header();
  const int64_t voxels = h.voxels_per_volume();
  const auto nt = static_cast<int>(bold.nt());
  spdlog::info("qa: {} volumes of {}x{}x{}, {} voxels in the mask{}", nt, h.dims[0], h.dims[1], h.dims[2], mask_voxels,
               o.mask.empty() ? " (brain mask of the mean volume)" : "");

  // The whole run against its own series: outliers (3dToutcount) and the median volume (3dTqual's reference).
  const cl_command_queue q = device->queue();
  DeviceBuffer<float> run(*device, static_cast<size_t>(voxels) * static_cast<size_t>(nt));
  run.write(q, std::span<const float>(bold.data()));
  lap("upload");
  DeviceOutlierCount outliers(*device, mask, nt);
  const std::vector<int64_t> outlier_counts = outliers.count_every_volume(run, nt);
  lap("outliers");
  DeviceBuffer<float> median(*device, static_cast<size_t>(voxels));
  median.fill(q, 0.0f);
  outliers.medians(run, nt, median);
  DeviceQualityIndex quality(*device, mask);
  quality.set_reference(median);
  const std::vector<double> qualities_per_volume = quality.quality_every_volume(run, nt);
  lap("quality_index");

  // Volume by volume.
  DeviceVoxelMoments moments(*device, voxels);
  DeviceSliceMeans slice_means(*device, h.dims, mask);
  DeviceDvars dvars(*device, mask);
  SliceZScores slice_z(o.slices);
  DeviceBuffer<float> volume(*device, static_cast<size_t>(voxels));
  std::vector<VolumeRow> rows(static_cast<size_t>(nt));
  ProgressLog progress("qa volumes");
  for (int t = 0; t < nt; ++t) {
    volume.write(q, bold.volume(t));
    VolumeRow& r = rows[static_cast<size_t>(t)];
    moments.add(volume);
    const SliceMeans means = slice_means.measure(volume);
    r.global = means.global;
    r.slices = slice_z.next(means.slice);
    r.dvars = dvars.next(volume);
    r.quality = qualities_per_volume[static_cast<size_t>(t)];
    r.outliers = outlier_counts[static_cast<size_t>(t)];
    r.outlier_fraction = static_cast<double>(r.outliers) / static_cast<double>(mask_voxels);
    progress(t + 1, nt);
  }
  const MomentMaps maps = moments.read_maps();
  lap("volumes");

  // The summary, MRIQC's names where it has them.
  std::vector<double> tsnr_in_mask, fractions, qualities, dvars_values;
  for (int64_t v = 0; v < voxels; ++v) {
    if (mask[static_cast<size_t>(v)] != 0 && std::isfinite(maps.tsnr[static_cast<size_t>(v)])) {
      tsnr_in_mask.push_back(maps.tsnr[static_cast<size_t>(v)]);
    }
  }
  nlohmann::json flagged = nlohmann::json::array();
  for (size_t t = 0; t < rows.size(); ++t) {
    fractions.push_back(rows[t].outlier_fraction);
    qualities.push_back(rows[t].quality);
    dvars_values.push_back(rows[t].dvars);
    for (const int z : rows[t].slices.flagged) {
      flagged.push_back({{"volume", t}, {"slice", z}, {"z", rows[t].slices.z[static_cast<size_t>(z)]}});
    }
  }
  double tsnr_median = std::numeric_limits<double>::quiet_NaN();
  if (!tsnr_in_mask.empty()) {
    const size_t k = tsnr_in_mask.size() / 2;
    std::nth_element(tsnr_in_mask.begin(), tsnr_in_mask.begin() + static_cast<std::ptrdiff_t>(k), tsnr_in_mask.end());
    tsnr_median = tsnr_in_mask[k];
    if (tsnr_in_mask.size() % 2 == 0) {
      tsnr_median = 0.5 * (tsnr_median + *std::max_element(tsnr_in_mask.begin(),
                                                           tsnr_in_mask.begin() + static_cast<std::ptrdiff_t>(k)));
    }
  }
  const auto json_number = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
  nlohmann::json summary = {{"input", o.input},
                            {"volumes", nt},
                            {"mask_voxels", mask_voxels},
                            {"mask", o.mask.empty() ? "brain mask of the mean volume" : o.mask},
                            {"tsnr", json_number(tsnr_median)},
                            {"aor", json_number(finite_mean(fractions))},
                            {"aqi", json_number(finite_mean(qualities))},
                            {"dvars_mean", json_number(finite_mean(dvars_values))},
                            {"slice_threshold", o.slices.threshold},
                            {"flagged_slices", flagged},
                            {"timing", timing},
                            {"seconds", clock.seconds()}};
  if (!motion.empty()) {
    // FD of the filtered parameters (Power et al. 2012, 50 mm), MRIQC's summaries of it, FIRMM's tally.
    std::vector<double> fd;
    RigidParams previous;
    for (size_t t = 0; t < motion.size(); ++t) {
      const RigidParams p = motion_filter->next(motion[t]);
      fd.push_back(t == 0 ? 0.0 : framewise_displacement(previous, p, 50.0));
      rows[t].fd = fd.back();
      previous = p;
    }
    const auto over = std::count_if(fd.begin(), fd.end(), [](double x) { return x > 0.2; });
    summary["fd_mean"] = json_number(finite_mean(fd));
    summary["fd_num"] = over;
    summary["fd_perc"] = 100.0 * static_cast<double>(over) / static_cast<double>(fd.size());
    summary["fd_filter"] = o.fd_filter.kind == FdFilterKind::kNone    ? "none"
                           : o.fd_filter.kind == FdFilterKind::kNotch ? "notch"
                                                                      : "lowpass";
    summary["censor"] = o.censor == CensorRule::kFirmm ? "firmm" : "power2014";
    nlohmann::json usable = nlohmann::json::array();
    for (const UsableTally& u : usable_tally(fd, tr_s, o.fd_thresholds, o.target_minutes, o.censor)) {
      usable.push_back({{"fd_threshold_mm", u.threshold_mm},
                        {"frames", u.frames},
                        {"minutes", u.minutes},
                        {"target_minutes", o.target_minutes},
                        {"minutes_to_target", json_number(u.minutes_to_target)}});
    }
    summary["usable"] = usable;
  }

  io::OutputSet outputs;  // every file under its final name only when all are written
  write_text_atomically(outputs.add(qa_file(o.out, "qa.tsv")), table(rows, !o.motion.empty()));
  write_text_atomically(outputs.add(qa_file(o.out, "qa.json")), summary.dump(2) + "\n");
  ImageHeader map_header = h;
  map_header.num_volumes = 1;
  map_header.tr_s = 0.0;
  map_header.description = "rtfmri qa";
  write_nifti(outputs.add(qa_file(o.out, "qa_mean.nii.gz")), Image(map_header, maps.mean));
  write_nifti(outputs.add(qa_file(o.out, "qa_sd.nii.gz")), Image(map_header, maps.sd));
  write_nifti(outputs.add(qa_file(o.out, "qa_tsnr.nii.gz")), Image(map_header, maps.tsnr));
  write_nifti(outputs.add(qa_file(o.out, "qa_mask.nii.gz")),
              Image(map_header, std::vector<float>(mask.begin(), mask.end())), DataType::kUint8);
  outputs.commit();
  spdlog::info(
      "qa: read {:.2f} s, mask {:.2f} s, upload {:.2f} s, outliers {:.2f} s, quality index {:.2f} s, volumes "
      "{:.2f} s, writing {:.2f} s",
      timing["read"].get<double>(), timing["mask"].get<double>(), timing["upload"].get<double>(),
      timing["outliers"].get<double>(), timing["quality_index"].get<double>(), timing["volumes"].get<double>(),
      phase.seconds());
  spdlog::info(
      "qa: tSNR {:.1f} (median in the mask), outliers {:.4f} of the mask a volume, quality index {:.4f}, {} "
      "slice(s) flagged -> {}qa.tsv, qa.json, qa_mean/_sd/_tsnr/_mask.nii.gz ({:.2f} s)",
      tsnr_median, finite_mean(fractions), finite_mean(qualities), flagged.size(), qa_file(o.out, ""), clock.seconds());
}

}  // namespace

void run_qa_command(const QaCommandOptions& options, const DeviceOpener& open_device) {
  std::unique_ptr<Device> device;
  qa_one(options, [&]() -> Device& {
    if (!device) device = open_device();
    return *device;
  });
}

void run_qa_session(const QaCommandOptions& options, const DeviceOpener& open_device) {
  const std::filesystem::path runs = std::filesystem::path(options.input) / "runs";
  std::vector<std::filesystem::path> bolds;
  if (std::filesystem::is_directory(runs)) {
    for (const auto& entry : std::filesystem::directory_iterator(runs)) {
      if (std::filesystem::is_regular_file(entry.path() / "bold.nii.gz")) bolds.push_back(entry.path() / "bold.nii.gz");
    }
  }
  if (bolds.empty()) {
    throw std::invalid_argument(fmt::format(
        "{}: no runs/<run>/bold.nii.gz in this folder (a session's runs are written when they end; `rtfmri recover` "
        "writes them for a session that was stopped)",
        options.input));
  }
  std::sort(bolds.begin(), bolds.end());
  std::unique_ptr<Device> device;  // one for every run
  const auto device_of = [&]() -> Device& {
    if (!device) device = open_device();
    return *device;
  };
  for (const auto& bold : bolds) {
    QaCommandOptions o = options;
    o.input = bold.string();
    o.out = bold.parent_path().string() + "/";
    const auto motion = bold.parent_path() / "motion.tsv";
    if (o.motion.empty() && std::filesystem::is_regular_file(motion)) o.motion = motion.string();
    spdlog::info("qa: run {}", bold.parent_path().filename().string());
    qa_one(o, device_of);
  }
}

}  // namespace rtf
