// The QA files of one run: the table, the summary and the report from one QaRun, written as one OutputSet (the maps
// on threads of their own while the report is made).
#include "core/qa/qa_outputs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <future>

#include "core/io/atomic_file.hpp"
#include "core/io/nifti_io.hpp"

namespace rtf {

namespace {

// A value for the TSV: "n/a" (BIDS) where it is undefined.
std::string cell(double x) {
  return std::isfinite(x) ? fmt::format("{:.6g}", x) : "n/a";
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

nlohmann::json json_number(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}

template <typename F>
std::vector<double> column(const QaRun& run, F&& value) {
  std::vector<double> out;
  out.reserve(run.rows.size());
  for (const QaVolumeRow& r : run.rows) out.push_back(value(r));
  return out;
}

std::vector<double> fd_column(const QaRun& run) {
  return column(run, [](const QaVolumeRow& r) { return r.fd; });
}

}  // namespace

std::string qa_file(const std::string& out, const std::string& name) {
  return !out.empty() && out.back() == '/' ? out + name : out + "_" + name;
}

double median_in_mask(const std::vector<float>& map, const std::vector<uint8_t>& mask) {
  std::vector<double> values;
  for (size_t v = 0; v < map.size() && v < mask.size(); ++v) {
    if (mask[v] != 0 && std::isfinite(map[v])) values.push_back(map[v]);
  }
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  const size_t k = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  double median = values[k];
  if (values.size() % 2 == 0) {
    median = 0.5 * (median + *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k)));
  }
  return median;
}

double quantile_in_mask(const std::vector<float>& map, const std::vector<uint8_t>& mask, double q) {
  std::vector<float> values;
  for (size_t v = 0; v < map.size() && v < mask.size(); ++v) {
    if (mask[v] != 0 && std::isfinite(map[v])) values.push_back(map[v]);
  }
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  const auto k = static_cast<size_t>(std::floor(std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1)));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

std::string qa_table(const QaRun& run) {
  std::string out =
      "volume\tglobal_signal\tdvars\tdvars_std\tdvars_vstd\toutliers\toutlier_fraction\tquality_index\t"
      "slice_z_worst\tworst_slice\tflagged_slices";
  out += run.with_fd ? "\tfd\n" : "\n";
  for (const QaVolumeRow& r : run.rows) {
    std::string flagged;
    for (const int z : r.slices.flagged) flagged += (flagged.empty() ? "" : ",") + std::to_string(z);
    out += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}", r.volume, cell(r.global), cell(r.dvars),
                       cell(r.dvars_std), cell(r.dvars_vstd), r.outliers, cell(r.outlier_fraction), cell(r.quality),
                       r.slices.worst_slice < 0 ? "n/a" : cell(r.slices.worst_z),
                       r.slices.worst_slice < 0 ? "n/a" : std::to_string(r.slices.worst_slice),
                       flagged.empty() ? "n/a" : flagged);
    out += run.with_fd ? "\t" + cell(r.fd) + "\n" : "\n";
  }
  return out;
}

nlohmann::json qa_summary(const QaRun& run) {
  nlohmann::json flagged = nlohmann::json::array();
  for (const QaVolumeRow& r : run.rows) {
    for (const int z : r.slices.flagged) {
      flagged.push_back({{"volume", r.volume}, {"slice", z}, {"z", r.slices.z[static_cast<size_t>(z)]}});
    }
  }
  const auto mask_voxels = std::count_if(run.mask.begin(), run.mask.end(), [](uint8_t m) { return m != 0; });
  nlohmann::json s = {
      {"input", run.title},
      {"volumes", run.rows.size()},
      {"mask_voxels", mask_voxels},
      {"mask", run.mask_source},
      {"tsnr", json_number(median_in_mask(run.maps.tsnr, run.mask))},
      {"aor", json_number(finite_mean(column(run, [](const QaVolumeRow& r) { return r.outlier_fraction; })))},
      {"aqi", json_number(finite_mean(column(run, [](const QaVolumeRow& r) { return r.quality; })))},
      {"dvars_mean", json_number(finite_mean(column(run, [](const QaVolumeRow& r) { return r.dvars; })))},
      {"dvars_std", json_number(finite_mean(column(run, [](const QaVolumeRow& r) { return r.dvars_std; })))},
      {"dvars_vstd", json_number(finite_mean(column(run, [](const QaVolumeRow& r) { return r.dvars_vstd; })))},
      {"efc", json_number(run.image.efc)},
      {"fber", json_number(run.image.fber)},
      {"snr", json_number(run.image.snr)},
      {"gsr_x", json_number(run.image.gsr_x)},
      {"gsr_y", json_number(run.image.gsr_y)},
      {"fwhm_x", json_number(run.image.fwhm_x)},
      {"fwhm_y", json_number(run.image.fwhm_y)},
      {"fwhm_z", json_number(run.image.fwhm_z)},
      {"fwhm_avg", json_number(run.image.fwhm_avg)},
      {"gcor", json_number(run.gcor)},
      {"slice_threshold", run.slice_threshold},
      {"flagged_slices", flagged}};
  if (run.with_fd) {
    const std::vector<double> fd = fd_column(run);
    const auto over = std::count_if(fd.begin(), fd.end(), [](double x) { return x > 0.2; });
    s["fd_mean"] = json_number(finite_mean(fd));
    s["fd_num"] = over;
    s["fd_perc"] = fd.empty() ? nlohmann::json(nullptr)
                              : nlohmann::json(100.0 * static_cast<double>(over) / static_cast<double>(fd.size()));
    s["fd_filter"] = run.fd_filter;
    s["censor"] = run.censor;
    nlohmann::json usable = nlohmann::json::array();
    if (run.tr_s > 0) {
      for (const UsableTally& u : usable_tally(fd, run.tr_s, run.fd_thresholds, run.target_minutes, run.censor_rule)) {
        usable.push_back({{"fd_threshold_mm", u.threshold_mm},
                          {"frames", u.frames},
                          {"minutes", u.minutes},
                          {"target_minutes", run.target_minutes},
                          {"minutes_to_target", json_number(u.minutes_to_target)}});
      }
    }
    s["usable"] = usable;
  }
  if (!run.cnr.empty()) {
    s["cnr_p95"] = json_number(quantile_in_mask(run.cnr, run.mask, 0.95));
    s["cnr_contrast"] = run.cnr_contrast;
  }
  s.update(run.extra);
  return s;
}

QaReportInput qa_report_input(const QaRun& run) {
  QaReportInput in;
  in.title = run.title;
  in.tr_s = run.tr_s;
  in.volumes = static_cast<int64_t>(run.rows.size());
  const auto threshold = [](double t) { return t > 0 ? t : std::numeric_limits<double>::quiet_NaN(); };
  if (run.with_fd) in.traces.push_back({"FD (mm)", fd_column(run), threshold(run.thresholds.fd_mm)});
  in.traces.push_back({"DVARS", column(run, [](const QaVolumeRow& r) { return r.dvars; })});
  in.traces.push_back({"DVARS (standardised)", column(run, [](const QaVolumeRow& r) { return r.dvars_std; })});
  in.traces.push_back({"Outlier fraction", column(run, [](const QaVolumeRow& r) { return r.outlier_fraction; }),
                       threshold(run.thresholds.outlier_fraction)});
  in.traces.push_back({"Global signal", column(run, [](const QaVolumeRow& r) { return r.global; })});
  in.traces.push_back({"Quality index", column(run, [](const QaVolumeRow& r) { return r.quality; })});
  in.traces.push_back({"Worst slice |z|",
                       column(run,
                              [](const QaVolumeRow& r) {
                                return r.slices.worst_slice < 0 ? std::numeric_limits<double>::quiet_NaN()
                                                                : std::abs(r.slices.worst_z);
                              }),
                       threshold(run.slice_threshold)});
  in.carpet = run.carpet;
  in.carpet_rows = run.carpet_rows;
  in.carpet_split = run.carpet_split;
  for (int i = 0; i < 3; ++i) in.dims[static_cast<size_t>(i)] = run.grid.dims[static_cast<size_t>(i)];
  in.tsnr = run.maps.tsnr;
  in.mask = run.mask;
  const nlohmann::json summary = qa_summary(run);
  for (const char* name :
       {"tsnr", "dvars_std", "dvars_vstd", "fd_mean", "fd_num", "fd_perc", "aor", "aqi", "gsr_x", "gsr_y", "fber",
        "efc", "snr", "gcor", "cnr_p95", "fwhm_x", "fwhm_y", "fwhm_z", "fwhm_avg"}) {
    if (!summary.contains(name)) continue;
    const nlohmann::json& v = summary[name];
    in.metrics.emplace_back(name, v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN());
  }
  if (summary.contains("usable")) {
    for (const nlohmann::json& u : summary["usable"]) {
      in.usable.push_back({u["fd_threshold_mm"].get<double>(), u["minutes"].get<double>(),
                           u["target_minutes"].get<double>(),
                           u["minutes_to_target"].is_number() ? u["minutes_to_target"].get<double>()
                                                              : std::numeric_limits<double>::infinity(),
                           u["frames"].get<int64_t>()});
    }
  }
  for (const QaVolumeRow& r : run.rows) {
    for (const int z : r.slices.flagged) in.flagged.push_back({r.volume, z, r.slices.z[static_cast<size_t>(z)]});
  }
  in.notes = run.notes;
  in.notes.emplace_back("Mask", run.mask_source);
  return in;
}

void write_qa_files(const QaRun& run, const std::string& prefix, io::OutputSet& outputs) {
  write_text_atomically(outputs.add(qa_file(prefix, "qa.tsv")), qa_table(run));
  write_text_atomically(outputs.add(qa_file(prefix, "qa.json")), qa_summary(run).dump(2) + "\n");
  // The maps (one gzip member each: one core each) are compressed and written on threads of their own while the report
  // is made here. Their paths are added on this thread, in the same order as ever; each writer is waited for in that
  // order, the first failure among them thrown (naming its file) before the report is written, and no writer
  // outlives this function (an exception waits for the others in ~future): the set's abort() then removes them all.
  ImageHeader map_header = run.grid;
  map_header.num_volumes = 1;
  map_header.tr_s = 0.0;
  map_header.description = "rtfmri qa";
  std::vector<std::future<void>> maps;
  const auto write_map = [&](const char* name, std::vector<float> values, DataType type) {
    maps.push_back(std::async(std::launch::async,
                              [path = outputs.add(qa_file(prefix, name)), &map_header, values = std::move(values),
                               type]() mutable { write_nifti(path, Image(map_header, std::move(values)), type); }));
  };
  if (!run.maps.mean.empty()) {
    write_map("qa_mean.nii.gz", run.maps.mean, DataType::kFloat32);
    write_map("qa_sd.nii.gz", run.maps.sd, DataType::kFloat32);
    write_map("qa_tsnr.nii.gz", run.maps.tsnr, DataType::kFloat32);
  }
  if (!run.cnr.empty()) write_map("qa_cnr.nii.gz", run.cnr, DataType::kFloat32);
  write_map("qa_mask.nii.gz", std::vector<float>(run.mask.begin(), run.mask.end()), DataType::kUint8);
  const std::filesystem::path report = outputs.add(qa_file(prefix, "qa_report.html"));
  const std::string html = qa_report_html(qa_report_input(run));
  for (std::future<void>& map : maps) map.get();
  write_text_atomically(report, html);
}

}  // namespace rtf
