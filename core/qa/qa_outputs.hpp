// The files of a run's data quality, one set for `rtfmri qa` and for the end of every live or replayed run
// (docs/algorithms/qa.md): PREFIX_ below is PREFIX followed by "_", or PREFIX itself when it ends in '/':
//   PREFIX_qa.tsv          one row per volume (columns in docs/algorithms/qa.md)
//   PREFIX_qa.json         the summary with MRIQC's names (tsnr, aor, aqi, dvars std/vstd, fd_mean, fd_num, fd_perc,
//                          gsr_x/gsr_y, fber, efc, snr, gcor, fwhm) and FIRMM's usable-data tally
//   PREFIX_qa_mean.nii.gz, PREFIX_qa_sd.nii.gz, PREFIX_qa_tsnr.nii.gz, PREFIX_qa_mask.nii.gz
//   PREFIX_qa_cnr.nii.gz   live runs with a design only: the CNR of the design's published contrast
//   PREFIX_qa_report.html  one self-contained page (core/qa/qa_report.hpp)
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/image/image.hpp"
#include "core/io/output_set.hpp"
#include "core/qa/image_quality.hpp"
#include "core/qa/qa_report.hpp"
#include "core/qa/slice_zscores.hpp"
#include "core/qa/usable_frames.hpp"
#include "core/qa/voxel_moments.hpp"

namespace rtf {

// Alarm thresholds (0: that alarm off); also drawn on the report's traces.
struct QaThresholds {
  double fd_mm = 0.5;
  double outlier_fraction = 0.05;  // of the mask's voxels
  double tsnr_min = 0.0;           // median tSNR in the mask below it, once tsnr_min_volumes have been seen
  int64_t tsnr_min_volumes = 30;
  bool usable_target = true;  // an alarm when the usable minutes (first FD threshold) reach the target
};

struct QaVolumeRow {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  int64_t volume = 0;
  double global = kNaN, dvars = kNaN, outlier_fraction = kNaN, quality = kNaN, fd = kNaN;
  double dvars_std = kNaN, dvars_vstd = kNaN;
  int64_t outliers = 0;
  SliceZ slices;
};

// Everything the files say about one run.
struct QaRun {
  std::string title;  // the input file or the run
  ImageHeader grid;   // the maps' geometry
  double tr_s = 0;
  std::vector<QaVolumeRow> rows;
  bool with_fd = false;    // rows carry FD (a motion file, or the live motion stage)
  MomentMaps maps;         // mean, SD, tSNR over the run
  std::vector<float> cnr;  // the design contrast's CNR map (empty without a design)
  std::string cnr_contrast;
  std::vector<uint8_t> mask;
  std::string mask_source;
  ImageQuality image;  // of maps.mean
  double gcor = std::numeric_limits<double>::quiet_NaN();
  double slice_threshold = 0;
  std::vector<double> fd_thresholds;
  double target_minutes = 0;
  std::string fd_filter, censor;
  CensorRule censor_rule = CensorRule::kFirmm;
  QaThresholds thresholds;
  std::vector<float> carpet;  // carpet_rows x rows.size(), voxel-major (see QaReportInput)
  int64_t carpet_rows = 0, carpet_split = 0;
  nlohmann::json extra = nlohmann::json::object();  // merged into the summary (input, timing, windowed measures...)
  std::vector<std::pair<std::string, std::string>> notes;  // for the report
};

// The path of output `name` ("qa.tsv", ...) for the prefix `out`: out + "_" + name, or out + name when it ends in '/'.
std::string qa_file(const std::string& out, const std::string& name);

// qa.tsv's text.
std::string qa_table(const QaRun& run);
// qa.json's object.
nlohmann::json qa_summary(const QaRun& run);
// The report's input.
QaReportInput qa_report_input(const QaRun& run);
// Adds every file of the set to `outputs` (the caller commits).
void write_qa_files(const QaRun& run, const std::string& prefix, io::OutputSet& outputs);

// The median of the finite values of `map` inside `mask` (NaN when none).
double median_in_mask(const std::vector<float>& map, const std::vector<uint8_t>& mask);
// Their `q`-quantile, 0 <= q <= 1 (the value at rank floor(q (n - 1)) of the sorted values; NaN when none).
double quantile_in_mask(const std::vector<float>& map, const std::vector<uint8_t>& mask, double q);

}  // namespace rtf
