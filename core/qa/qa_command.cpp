// `rtfmri qa`'s work (core/qa/qa_command.hpp): the whole run on the device at once (outliers, the median volume, every
// volume's quality index), then volume by volume from the run on the device (moments, slice means, DVARS:
// core/qa/run_measures.hpp), MRIQC's series measures on host threads meanwhile; the files written as one set.
#include "core/qa/qa_command.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "core/device/pinned_upload.hpp"
#include "core/image/same_grid.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"
#include "core/mask/brain_mask.hpp"
#include "core/motion/motion_files.hpp"
#include "core/motion/motion_metrics.hpp"
#include "core/qa/carpet_column.hpp"
#include "core/qa/image_quality.hpp"
#include "core/qa/outlier_count.hpp"
#include "core/qa/qa_outputs.hpp"
#include "core/qa/quality_index.hpp"
#include "core/qa/run_measures.hpp"
#include "core/qa/voxel_moments.hpp"
#include "core/util/stopwatch.hpp"

namespace rtf {

namespace {

std::vector<uint8_t> read_mask(const QaCommandOptions& o, const Image& bold) {
  const Image image = read_nifti(o.mask);
  require_same_grid(bold.header(), o.input, image.header(), o.mask);
  const auto v = image.volume(0);
  std::vector<uint8_t> mask(v.size());
  std::transform(v.begin(), v.end(), mask.begin(), [](float x) { return x != 0.0f ? 1 : 0; });
  return mask;
}

// One run; `device_of()` opens the device on first use (while the input is read) and keeps it.
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
  // The device opens on a thread of its own while the input is read. An input refused below is still what is
  // reported (the opening is waited for, its own failure then dropped), as when the device opened after the checks.
  std::future<Device*> opening = std::async(std::launch::async, [&device_of] { return &device_of(); });
  Image bold = read_nifti(o.input);
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
  Device* device = opening.get();
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
  upload_pinned(*device, run, std::span<const float>(bold.data()));
  lap("upload");
  // MRIQC's measures of the series (core/qa/image_quality.hpp) on the host's cores while the device works.
  std::future<SeriesQuality> series =
      std::async(std::launch::async, [&] { return series_quality(bold.data(), nt, voxels, mask); });
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

  // Volume by volume, from the run already on the device (core/qa/run_measures.hpp).
  RunMeasures measured = measure_run_volumes(*device, run, nt, h.dims, mask, o.slices);
  std::vector<QaVolumeRow>& rows = measured.rows;
  for (int t = 0; t < nt; ++t) {
    QaVolumeRow& r = rows[static_cast<size_t>(t)];
    r.quality = qualities_per_volume[static_cast<size_t>(t)];
    r.outliers = outlier_counts[static_cast<size_t>(t)];
    r.outlier_fraction = static_cast<double>(r.outliers) / static_cast<double>(mask_voxels);
  }
  const MomentMaps& maps = measured.maps;
  lap("volumes");

  // The set of files: the table, the summary with MRIQC's names, the maps, the report (core/qa/qa_outputs.hpp).
  QaRun qa;
  qa.title = o.input;
  qa.grid = h;
  qa.tr_s = tr_s;
  qa.rows = std::move(rows);
  qa.maps = maps;
  qa.mask = mask;
  qa.mask_source = o.mask.empty() ? "brain mask of the mean volume" : o.mask;
  qa.slice_threshold = o.slices.threshold;
  qa.fd_thresholds = o.fd_thresholds;
  qa.target_minutes = o.target_minutes;
  qa.censor_rule = o.censor;
  qa.censor = o.censor == CensorRule::kFirmm ? "firmm" : "power2014";
  qa.fd_filter = o.fd_filter.kind == FdFilterKind::kNone    ? "none"
                 : o.fd_filter.kind == FdFilterKind::kNotch ? "notch"
                                                            : "lowpass";
  {
    // MRIQC's image-quality metrics (core/qa/image_quality.hpp): of the mean EPI in the mask, and of the series.
    qa.image = image_quality(maps.mean, mask, h.dims, h.voxel_mm);
    const SeriesQuality sq = series.get();
    qa.gcor = sq.gcor;
    for (size_t t = 0; t < qa.rows.size(); ++t) {
      qa.rows[t].dvars_std = sq.dvars_std[t];
      qa.rows[t].dvars_vstd = sq.dvars_vstd[t];
    }
    lap("iqms");
  }
  if (!motion.empty()) {
    // FD of the filtered parameters (Power et al. 2012, 50 mm); the summary adds MRIQC's and FIRMM's measures of it.
    qa.with_fd = true;
    RigidParams previous;
    for (size_t t = 0; t < motion.size(); ++t) {
      const RigidParams p = motion_filter->next(motion[t]);
      qa.rows[t].fd = t == 0 ? 0.0 : framewise_displacement(previous, p, 50.0);
      previous = p;
    }
  }
  // The carpet: up to 800 voxels of the mask, their series (Power 2017).
  const CarpetVoxels carpet = carpet_voxels(mask, 800);
  qa.carpet_rows = static_cast<int64_t>(carpet.indices.size());
  qa.carpet.resize(carpet.indices.size() * static_cast<size_t>(nt));
  for (size_t r = 0; r < carpet.indices.size(); ++r) {
    for (int t = 0; t < nt; ++t) {
      qa.carpet[r * static_cast<size_t>(nt) + static_cast<size_t>(t)] =
          bold.volume(t)[static_cast<size_t>(carpet.indices[r])];
    }
  }
  qa.extra["timing"] = timing;
  // The run's 2 GB on the host are given back on a thread of their own while the files are written.
  std::future<void> freeing = std::async(
      std::launch::async, [values = std::move(bold.data())]() mutable { std::vector<float>().swap(values); });

  io::OutputSet outputs;  // every file under its final name only when all are written
  write_qa_files(qa, o.out, outputs);
  outputs.commit();
  const nlohmann::json summary = qa_summary(qa);
  spdlog::info(
      "qa: read {:.2f} s, mask {:.2f} s, upload {:.2f} s, outliers {:.2f} s, quality index {:.2f} s, volumes "
      "{:.2f} s, MRIQC measures {:.2f} s, writing {:.2f} s",
      timing["read"].get<double>(), timing["mask"].get<double>(), timing["upload"].get<double>(),
      timing["outliers"].get<double>(), timing["quality_index"].get<double>(), timing["volumes"].get<double>(),
      timing["iqms"].get<double>(), phase.seconds());
  const auto number = [&](const char* key) {
    return summary[key].is_number() ? summary[key].get<double>() : std::numeric_limits<double>::quiet_NaN();
  };
  spdlog::info(
      "qa: tSNR {:.1f} (median in the mask), outliers {:.4f} of the mask a volume, quality index {:.4f}, {} "
      "slice(s) flagged -> {}qa.tsv, qa.json, qa_mean/_sd/_tsnr/_mask.nii.gz, qa_report.html ({:.2f} s)",
      number("tsnr"), number("aor"), number("aqi"), summary["flagged_slices"].size(), qa_file(o.out, ""),
      clock.seconds());
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
