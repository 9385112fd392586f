// `rtfmri info`'s work (core/io/info_command.hpp).
#include "core/io/info_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/io/nifti_io.hpp"

namespace rtf {
namespace {

struct SeriesStats {
  double mean = 0.0;
  double median_tsnr = 0.0;  // over voxels whose mean exceeds 10% of the largest voxel mean
};

SeriesStats series_stats(const Image& image) {
  const auto nvox = static_cast<size_t>(image.header().voxels_per_volume());
  std::vector<double> sum(nvox, 0.0), sum_sq(nvox, 0.0);
  for (int64_t t = 0; t < image.nt(); ++t) {
    const auto v = image.volume(t);
    for (size_t i = 0; i < nvox; ++i) {
      sum[i] += v[i];
      sum_sq[i] += static_cast<double>(v[i]) * v[i];
    }
  }
  SeriesStats s;
  const double n = static_cast<double>(image.nt());
  double max_mean = 0.0, total = 0.0;
  for (size_t i = 0; i < nvox; ++i) {
    total += sum[i] / n;
    max_mean = std::max(max_mean, sum[i] / n);
  }
  s.mean = total / static_cast<double>(nvox);
  if (image.nt() < 3) return s;
  std::vector<double> tsnr;
  for (size_t i = 0; i < nvox; ++i) {
    const double m = sum[i] / n;
    if (m <= 0.1 * max_mean) continue;
    const double var = std::max(0.0, (sum_sq[i] - n * m * m) / (n - 1.0));
    if (var > 0.0) tsnr.push_back(m / std::sqrt(var));
  }
  if (!tsnr.empty()) {
    std::nth_element(tsnr.begin(), tsnr.begin() + static_cast<long>(tsnr.size() / 2), tsnr.end());
    s.median_tsnr = tsnr[tsnr.size() / 2];
  }
  return s;
}

void print_info(const std::string& file) {
  const Image image = read_nifti(file);
  const auto& h = image.header();
  fmt::print("{}\n", file);
  fmt::print("  dims:      {} x {} x {} x {}\n", h.dims[0], h.dims[1], h.dims[2], h.num_volumes);
  fmt::print("  voxel:     {:.4g} x {:.4g} x {:.4g} mm\n", h.voxel_mm[0], h.voxel_mm[1], h.voxel_mm[2]);
  fmt::print("  TR:        {:.4g} s\n", h.tr_s);
  fmt::print("  datatype:  {}\n", to_string(h.source_type));
  for (int r = 0; r < 3; ++r) {
    fmt::print("  {}[{:9.4f} {:9.4f} {:9.4f} {:9.4f}]\n", r == 0 ? "affine:    " : "           ", h.affine(r, 0),
               h.affine(r, 1), h.affine(r, 2), h.affine(r, 3));
  }
  const SeriesStats s = series_stats(image);
  fmt::print("  mean:      {:.6g}\n", s.mean);
  if (image.nt() >= 3)
    fmt::print("  tSNR:      {:.2f} (median over voxels above 10% of the brightest mean)\n", s.median_tsnr);
}

}  // namespace

void run_info_command(const std::vector<std::string>& files) {
  for (const auto& f : files) print_info(f);
}

}  // namespace rtf
