// Writes a qa_report.html from synthetic inputs for the browser check (ctest qa.report_browser, which then runs
// tests/qa/check_report_in_browser.py on it): an odd 37x29x11 grid, 53 volumes at TR 2 s, every trace of the live QA
// (with NaN at undefined volumes and thresholds where there are some), a carpet of 700 voxels with a grey-matter split,
// a NaN voxel and a motion spike, a tSNR map with a NaN inside the mask, MRIQC's metrics (one n/a), a usable-data tally
// that is reached / never / pending, two flagged slices and notes that need escaping.
// Usage: qa_report_fixture OUT.html
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <limits>
#include <random>

#include "core/io/atomic_file.hpp"
#include "core/qa/qa_report.hpp"

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kNx = 37, kNy = 29, kNz = 11, kVolumes = 53, kVoxels = 700, kGreyMatter = 250;

rtf::QaReportInput synthetic_run() {
  rtf::QaReportInput in;
  in.title = "sub-07 <rest> & \"fixture\" run";
  in.tr_s = 2;
  in.volumes = kVolumes;
  std::mt19937 rng(2017);
  std::normal_distribution<double> noise(0, 1);
  rtf::QaTrace fd{"FD (mm)", {}, 0.3}, dvars{"DVARS", {}, kNaN}, outliers{"outlier fraction", {}, 0.05};
  rtf::QaTrace global{"global signal", {}, kNaN}, quality{"quality index", {}, kNaN};
  rtf::QaTrace slice_z{"worst slice z", {}, 8};
  for (int64_t t = 0; t < kVolumes; ++t) {
    const bool spike = t == 30;
    fd.values.push_back(t == 0 ? kNaN : 0.08 + 0.04 * std::abs(noise(rng)) + (spike ? 0.9 : 0.0));
    dvars.values.push_back(t == 0 ? kNaN : 18 + noise(rng) + (spike ? 25 : 0));
    outliers.values.push_back(t < 3 ? kNaN : 0.002 * std::abs(noise(rng)) + (spike ? 0.08 : 0.0));
    global.values.push_back(812 + 1.5 * noise(rng) - (spike ? 9 : 0));
    quality.values.push_back(0.012 + 0.002 * std::abs(noise(rng)) + (spike ? 0.03 : 0.0));
    slice_z.values.push_back(t < 10 ? kNaN : t == 30 ? -17.5 : t == 45 ? 23.25 : 1.5 * noise(rng));
  }
  in.traces = {fd, dvars, outliers, global, quality, slice_z};
  in.carpet_rows = kVoxels;
  in.carpet_split = kGreyMatter;
  in.carpet.resize(static_cast<size_t>(kVoxels * kVolumes));
  for (int64_t r = 0; r < kVoxels; ++r) {
    const double base = 400 + 300 * std::abs(noise(rng));
    for (int64_t t = 0; t < kVolumes; ++t) {
      const double slow = std::sin(0.2 * static_cast<double>(t) + 0.01 * static_cast<double>(r));
      in.carpet[static_cast<size_t>(r * kVolumes + t)] =
          static_cast<float>(base + 4 * slow + 3 * noise(rng) + (t == 30 ? 25 : 0));
    }
  }
  in.carpet[static_cast<size_t>(5 * kVolumes + 17)] = std::numeric_limits<float>::quiet_NaN();
  in.dims = {kNx, kNy, kNz};
  in.tsnr.resize(static_cast<size_t>(kNx * kNy * kNz));
  in.mask.resize(in.tsnr.size());
  for (int64_t z = 0; z < kNz; ++z) {
    for (int64_t y = 0; y < kNy; ++y) {
      for (int64_t x = 0; x < kNx; ++x) {
        const auto i = static_cast<size_t>((z * kNy + y) * kNx + x);
        const double r = std::hypot((static_cast<double>(x) - 18) / 16.0, (static_cast<double>(y) - 14) / 12.5,
                                    (static_cast<double>(z) - 5) / 6.5);
        in.mask[i] = r < 1 ? 1 : 0;
        in.tsnr[i] = static_cast<float>(70 * (1 - 0.6 * r) + 4 * noise(rng));
      }
    }
  }
  in.tsnr[static_cast<size_t>((5 * kNy + 14) * kNx + 18)] = std::numeric_limits<float>::quiet_NaN();
  in.metrics = {{"tsnr", 51.3},    {"aor", 0.0031}, {"aqi", 0.0131},   {"dvars_mean", 18.9},
                {"fd_mean", 0.12}, {"fd_num", 1},   {"fd_perc", 1.92}, {"gsr_x", kNaN}};
  in.usable = {{0.2, 1.67, 12.5, 0, 50},
               {0.3, 0, 12.5, std::numeric_limits<double>::infinity(), 0},
               {0.5, 1.73, 12.5, 10.77, 52}};
  in.usable[0].minutes = 13.2;  // reached
  in.flagged = {{30, 4, -17.5}, {45, 9, 23.25}};
  in.notes = {{"input", "/data/sub-07/func/sub-07_task-rest_bold.nii.gz"},
              {"mask", "brain mask of the mean volume (3012 voxels)"},
              {"device", "synthetic: no device"},
              {"<windowed>", "moments over the last 40 volumes & outliers over the run"}};
  return in;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.html\n", argv[0]);
    return 2;
  }
  try {
    const std::filesystem::path out(argv[1]);
    if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
    const std::string html = rtf::qa_report_html(synthetic_run());
    rtf::write_text_atomically(out, html);
    std::printf("wrote %s (%zu bytes)\n", out.c_str(), html.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qa_report_fixture: %s\n", e.what());
    return 1;
  }
  return 0;
}
