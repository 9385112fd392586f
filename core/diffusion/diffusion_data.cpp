// Reading and validating a bedpostx input directory; gathering the mask voxels' signals.
#include "core/diffusion/diffusion_data.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/io/nifti_io.hpp"
#include "core/util/host_threads.hpp"

namespace rtf {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const fs::path& file, const std::string& problem) {
  throw std::invalid_argument(fmt::format("{}: {}", file.string(), problem));
}

// The non-empty lines of a whitespace-separated numeric text file, each a row of finite numbers (or NaN, where
// `allow_nan`); each row's line number (from 1) in *line_numbers where given.
std::vector<std::vector<double>> read_rows(const fs::path& path, bool allow_nan = false,
                                           std::vector<int>* line_numbers = nullptr) {
  if (!fs::exists(path)) fail(path, "missing");
  std::ifstream in(path);
  if (!in) fail(path, "cannot be opened");
  std::vector<std::vector<double>> rows;
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    std::istringstream tokens(line);
    std::vector<double> row;
    std::string token;
    while (tokens >> token) {
      std::string_view text = token;
      if (text.size() > 1 && text[0] == '+') text.remove_prefix(1);  // from_chars rejects a leading '+'
      double value = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      const bool usable = std::isfinite(value) || (allow_nan && std::isnan(value));
      if (ec != std::errc{} || end != text.data() + text.size() || !usable) {
        fail(path, fmt::format("line {}, value {}: '{}' is not a finite number", line_number, row.size() + 1, token));
      }
      row.push_back(value);
    }
    if (row.empty()) continue;
    rows.push_back(std::move(row));
    if (line_numbers != nullptr) line_numbers->push_back(line_number);
  }
  if (rows.empty()) fail(path, "holds no numbers");
  return rows;
}

fs::path first_existing(const fs::path& dir, const char* name, const char* alternative) {
  if (fs::exists(dir / name)) return dir / name;
  if (fs::exists(dir / alternative)) return dir / alternative;
  fail(dir / name, fmt::format("missing (nor is there {})", alternative));
}

}  // namespace

DiffusionScheme read_bvals_bvecs(const fs::path& bvals_path, const fs::path& bvecs_path, int64_t volumes) {
  DiffusionScheme scheme;
  const std::vector<std::vector<double>> bval_rows = read_rows(bvals_path);
  if (bval_rows.size() == 1) {
    scheme.bvals = bval_rows[0];
  } else {
    for (const std::vector<double>& row : bval_rows) {
      if (row.size() != 1) {
        fail(bvals_path, fmt::format("expected one row of b-values or one column, found {} rows", bval_rows.size()));
      }
      scheme.bvals.push_back(row[0]);
    }
  }
  if (static_cast<int64_t>(scheme.bvals.size()) != volumes) {
    fail(bvals_path, fmt::format("{} b-values for {} volumes of data", scheme.bvals.size(), volumes));
  }

  // dipy writes a b = 0 volume's gradient as "nan nan nan" (FSL as 0 0 0): NaN is read, and allowed only there.
  std::vector<int> vec_lines;
  const std::vector<std::vector<double>> vec_rows = read_rows(bvecs_path, true, &vec_lines);
  bool rows_of_three = true;
  for (const std::vector<double>& row : vec_rows) rows_of_three = rows_of_three && row.size() == 3;
  const bool three_rows =
      vec_rows.size() == 3 && vec_rows[0].size() == vec_rows[1].size() && vec_rows[0].size() == vec_rows[2].size();
  if (!three_rows && !rows_of_three) {
    fail(bvecs_path, fmt::format("expected 3 rows of N values or N rows of 3, found {} rows", vec_rows.size()));
  }
  const size_t count = three_rows ? vec_rows[0].size() : vec_rows.size();
  if (static_cast<int64_t>(count) != volumes) {
    fail(bvecs_path, fmt::format("{} gradient directions for {} volumes of data", count, volumes));
  }
  scheme.bvecs.resize(count);
  for (size_t k = 0; k < count; ++k) {
    for (size_t c = 0; c < 3; ++c) scheme.bvecs[k][c] = three_rows ? vec_rows[c][k] : vec_rows[k][c];
  }

  bool has_b0 = false;
  int nan_b0 = 0;
  for (size_t k = 0; k < count; ++k) {
    const double b = scheme.bvals[k];
    if (b < 0) fail(bvals_path, fmt::format("b-value {} of volume {} (counting from 0) is negative", b, k));
    std::array<double, 3>& g = scheme.bvecs[k];
    const auto nan_at = std::find_if(g.begin(), g.end(), [](double v) { return std::isnan(v); });
    if (nan_at != g.end()) {
      const auto c = static_cast<size_t>(nan_at - g.begin());
      if (b > kB0Threshold) {
        fail(bvecs_path, fmt::format("line {}, value {}: NaN in the gradient of volume {} (counting from 0), whose "
                                     "b = {}: only a b = 0 volume's gradient may be NaN",
                                     vec_lines[three_rows ? c : k], (three_rows ? k : c) + 1, k, b));
      }
      g = {0.0, 0.0, 0.0};
      ++nan_b0;
    }
    if (b <= kB0Threshold) {
      has_b0 = true;
      continue;
    }
    const double norm = std::sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
    if (!(std::abs(norm - 1.0) <= 1e-2)) {
      fail(bvecs_path, fmt::format("the gradient of volume {} (counting from 0; {} {}) has norm {:.6g}, not 1 "
                                   "(b = {})",
                                   k, three_rows ? "column" : "row", k + 1, norm, b));
    }
    for (double& c : g) c /= norm;
  }
  if (!has_b0) {
    fail(bvals_path, fmt::format("no b = 0 volume (b <= {}): one is needed for S0", kB0Threshold));
  }
  if (nan_b0 > 0) {
    spdlog::info("{}: {} gradient(s) of b = 0 volumes given as NaN (as dipy writes them), read as 0 0 0",
                 bvecs_path.string(), nan_b0);
  }
  return scheme;
}

DiffusionInput read_bedpost_dir(const fs::path& dir) {
  DiffusionInput input;
  const fs::path data_path = first_existing(dir, "data.nii.gz", "data.nii");
  const fs::path bvals_path = dir / "bvals", bvecs_path = dir / "bvecs";
  if (!fs::exists(bvals_path)) fail(bvals_path, "missing");
  if (!fs::exists(bvecs_path)) fail(bvecs_path, "missing");
  const fs::path mask_path = first_existing(dir, "nodif_brain_mask.nii.gz", "nodif_brain_mask.nii");

  input.data = read_nifti(data_path);
  const ImageHeader& h = input.data.header();
  if (h.num_volumes < 2) {
    fail(data_path, fmt::format("has {} volume; expected a 4D series (x, y, z, measurement)", h.num_volumes));
  }
  input.scheme = read_bvals_bvecs(bvals_path, bvecs_path, h.num_volumes);

  const Image mask = read_nifti(mask_path);
  const ImageHeader& m = mask.header();
  if (m.num_volumes != 1) fail(mask_path, fmt::format("has {} volumes; expected a 3D mask", m.num_volumes));
  if (m.dims != h.dims) {
    fail(mask_path, fmt::format("is {}x{}x{} but {} is {}x{}x{}: they must share one voxel grid", m.dims[0], m.dims[1],
                                m.dims[2], data_path.filename().string(), h.dims[0], h.dims[1], h.dims[2]));
  }
  if (!h.same_grid(m, 1e-3)) {
    fail(mask_path, fmt::format("has the dimensions of {} but a different affine (voxel-to-world)",
                                data_path.filename().string()));
  }
  const std::span<const float> values = mask.volume(0);
  input.mask.resize(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const bool inside = values[i] != 0.0f && !std::isnan(values[i]);
    input.mask[i] = inside ? 1 : 0;
    if (inside) input.voxels.push_back(static_cast<int64_t>(i));
  }
  if (input.voxels.empty()) fail(mask_path, "is empty (no non-zero voxel)");
  return input;
}

std::vector<float> gather_mask_signals(const DiffusionInput& input) {
  const size_t n = static_cast<size_t>(input.data.nt());
  const size_t grid = static_cast<size_t>(input.data.header().voxels_per_volume());
  const size_t voxels = input.voxels.size();
  const std::vector<float>& data = input.data.data();
  std::vector<float> out(voxels * n);
  host_ranges(voxels, host_thread_count(), [&](size_t begin, size_t end, size_t) {
    for (size_t v = begin; v < end; ++v) {
      const size_t index = static_cast<size_t>(input.voxels[v]);
      for (size_t t = 0; t < n; ++t) out[v * n + t] = data[t * grid + index];
    }
  });
  return out;
}

}  // namespace rtf
