// DVARS and the motion files.
#include "core/motion/motion_metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "core/io/atomic_file.hpp"

namespace rtf {

double dvars(std::span<const float> previous, std::span<const float> current, std::span<const uint8_t> mask) {
  if (previous.size() != current.size() || mask.size() != current.size()) {
    throw std::invalid_argument("dvars: volumes and mask differ in size");
  }
  double sum = 0.0;
  int64_t n = 0;
  for (size_t i = 0; i < current.size(); ++i) {
    if (mask[i] == 0) continue;
    const double d = static_cast<double>(current[i]) - static_cast<double>(previous[i]);
    if (!std::isfinite(d)) continue;  // NaN voxels (in either volume) are left out
    sum += d * d;
    ++n;
  }
  if (n == 0) return std::count(mask.begin(), mask.end(), uint8_t{0}) == std::ssize(mask) ? 0.0 : std::nan("");
  return std::sqrt(sum / static_cast<double>(n));
}

void write_fsl_par(const std::filesystem::path& path, const std::vector<VolumeMotion>& motion) {
  std::string text;
  for (const auto& m : motion) {
    const auto p = to_fsl_par(m.params);
    text += fmt::format("{:.8f}  {:.8f}  {:.8f}  {:.6f}  {:.6f}  {:.6f}\n", p[0], p[1], p[2], p[3], p[4], p[5]);
  }
  write_text_atomically(path, text);
}

void write_afni_1d(const std::filesystem::path& path, const std::vector<VolumeMotion>& motion) {
  std::string text;
  for (const auto& m : motion) {
    const auto p = to_afni_dfile(m.params);
    text += fmt::format("{:.6f} {:.6f} {:.6f} {:.6f} {:.6f} {:.6f}\n", p[0], p[1], p[2], p[3], p[4], p[5]);
  }
  write_text_atomically(path, text);
}

std::string motion_tsv_header() {
  return "volume\tfd_mm\tdvars\ttrans_x_mm\ttrans_y_mm\ttrans_z_mm\trot_x_deg\trot_y_deg\trot_z_deg\tconverged\t"
         "iterations\trms_residual\n";
}

std::string motion_tsv_row(int64_t volume, const VolumeMotion& m) {
  return fmt::format("{}\t{:.6f}\t{:.4f}\t{:.6f}\t{:.6f}\t{:.6f}\t{:.6f}\t{:.6f}\t{:.6f}\t{}\t{}\t{:.4f}\n", volume,
                     m.fd_mm, m.dvars, m.params.translation_mm[0], m.params.translation_mm[1],
                     m.params.translation_mm[2], m.params.rotation_deg[0], m.params.rotation_deg[1],
                     m.params.rotation_deg[2], m.converged ? 1 : 0, m.iterations, m.rms_residual);
}

void write_motion_tsv(const std::filesystem::path& path, const std::vector<VolumeMotion>& motion) {
  std::string text = motion_tsv_header();
  for (size_t t = 0; t < motion.size(); ++t) text += motion_tsv_row(static_cast<int64_t>(t), motion[t]);
  write_text_atomically(path, text);
}

}  // namespace rtf
