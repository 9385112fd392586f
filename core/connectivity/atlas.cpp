// Label images: names files, validation, nearest-neighbour resampling onto an EPI grid, ROI sets.
#include "core/connectivity/atlas.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "core/io/nifti_io.hpp"

namespace rtf {
namespace {

constexpr double kMaxLabel = 16777216.0;  // 2^24: integers above are not all exact in float32

Eigen::Matrix4d checked_inverse(const Eigen::Matrix4d& affine, const char* what) {
  if (!(std::abs(affine.topLeftCorner<3, 3>().determinant()) > 1e-12) || !affine.allFinite()) {
    throw std::invalid_argument(fmt::format("atlas: the {} affine is not invertible", what));
  }
  return affine.inverse();
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::vector<AtlasRegion> read_label_names(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("atlas names {}: cannot open", path.string()));
  std::vector<AtlasRegion> regions;
  std::set<int32_t> seen;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    std::istringstream fields(line);
    long long label = 0;
    std::string name;
    if (!(fields >> label) || !(fields >> name)) {
      throw std::runtime_error(
          fmt::format("atlas names {} line {}: expected '<label> <name>', got '{}'", path.string(), line_no, line));
    }
    if (label <= 0 || static_cast<double>(label) >= kMaxLabel) {
      throw std::runtime_error(
          fmt::format("atlas names {} line {}: label {} is not in 1..2^24-1", path.string(), line_no, label));
    }
    if (!seen.insert(static_cast<int32_t>(label)).second) {
      throw std::runtime_error(
          fmt::format("atlas names {} line {}: label {} listed twice", path.string(), line_no, label));
    }
    regions.push_back({static_cast<int32_t>(label), name});
  }
  if (regions.empty()) throw std::runtime_error(fmt::format("atlas names {}: no regions", path.string()));
  return regions;
}

LabelAtlas make_atlas(Image labels, std::optional<std::vector<AtlasRegion>> regions) {
  const ImageHeader& h = labels.header();
  if (h.num_volumes != 1) {
    throw std::invalid_argument(fmt::format("atlas: a label image is 3D, this one has {} volumes", h.num_volumes));
  }
  std::set<int32_t> present;
  for (size_t i = 0; i < labels.data().size(); ++i) {
    const double v = labels.data()[i];
    if (!(std::isfinite(v) && v >= 0.0 && v < kMaxLabel && v == std::floor(v))) {
      const auto nx = static_cast<size_t>(h.dims[0]), ny = static_cast<size_t>(h.dims[1]);
      throw std::invalid_argument(fmt::format(
          "atlas: not a label image: voxel ({}, {}, {}) is {} (labels are non-negative integers below 2^24)", i % nx,
          (i / nx) % ny, i / (nx * ny), v));
    }
    if (v > 0.0) present.insert(static_cast<int32_t>(v));
  }
  LabelAtlas atlas;
  if (regions) {
    if (regions->empty()) throw std::invalid_argument("atlas: empty region list");
    std::set<int32_t> listed;
    for (const auto& r : *regions) {
      if (r.label <= 0) throw std::invalid_argument(fmt::format("atlas: region '{}' has label {}", r.name, r.label));
      if (!listed.insert(r.label).second) throw std::invalid_argument(fmt::format("atlas: label {} twice", r.label));
    }
    int64_t unlisted = 0;
    for (float v : labels.data()) {
      if (v > 0.0f && !listed.contains(static_cast<int32_t>(v))) ++unlisted;
    }
    if (unlisted > 0)
      spdlog::warn("atlas: {} voxels carry labels not in the region list; treated as background", unlisted);
    atlas.regions = std::move(*regions);
  } else {
    if (present.empty()) throw std::invalid_argument("atlas: the label image has no nonzero label");
    for (int32_t label : present) atlas.regions.push_back({label, std::to_string(label)});
  }
  atlas.labels = std::move(labels);
  return atlas;
}

LabelAtlas read_atlas(const std::filesystem::path& image, const std::optional<std::filesystem::path>& names) {
  std::optional<std::vector<AtlasRegion>> regions;
  if (names) regions = read_label_names(*names);
  return make_atlas(read_nifti(image), std::move(regions));
}

LabelAtlas read_aal(const std::filesystem::path& data_dir) {
  return read_atlas(data_dir / kAalImage, data_dir / kAalNames);
}

Image resample_labels_nearest(const Image& labels, const ImageHeader& grid,
                              const Eigen::Matrix4d& grid_to_atlas_world) {
  const ImageHeader& a = labels.header();
  if (a.num_volumes != 1) throw std::invalid_argument("atlas: resampling needs a 3D label image");
  checked_inverse(grid_to_atlas_world, "grid -> atlas transform's");
  const Eigen::Matrix4d to_atlas = checked_inverse(a.affine, "label image's") * grid_to_atlas_world * grid.affine;
  checked_inverse(grid.affine, "EPI grid's");
  ImageHeader out_header = grid;
  out_header.num_volumes = 1;
  out_header.tr_s = 0.0;
  out_header.description = "labels resampled (nearest neighbour)";
  Image out(out_header, 0.0f);
  for (int64_t k = 0; k < grid.dims[2]; ++k) {
    for (int64_t j = 0; j < grid.dims[1]; ++j) {
      for (int64_t i = 0; i < grid.dims[0]; ++i) {
        const Eigen::Vector4d u =
            to_atlas * Eigen::Vector4d(static_cast<double>(i), static_cast<double>(j), static_cast<double>(k), 1.0);
        std::array<int64_t, 3> v{};
        bool inside = true;
        for (int d = 0; d < 3; ++d) {
          const double r = std::floor(u[d] + 0.5);
          inside = inside && r >= 0.0 && r < static_cast<double>(a.dims[static_cast<size_t>(d)]);
          v[static_cast<size_t>(d)] = inside ? static_cast<int64_t>(r) : 0;
        }
        if (inside) out.at(i, j, k) = labels.at(v[0], v[1], v[2]);
      }
    }
  }
  return out;
}

int64_t RoiSet::present() const {
  return std::count_if(voxel_counts.begin(), voxel_counts.end(), [](int64_t c) { return c > 0; });
}

std::vector<std::string> RoiSet::missing() const {
  std::vector<std::string> names;
  for (size_t r = 0; r < regions.size(); ++r) {
    if (voxel_counts[r] == 0) names.push_back(regions[r].name);
  }
  return names;
}

RoiSet rois_on_grid(const LabelAtlas& atlas, const ImageHeader& grid, AtlasPlacement placement,
                    const Eigen::Matrix4d& grid_to_atlas_world) {
  if (atlas.regions.empty()) throw std::invalid_argument("atlas: no regions");
  const ImageHeader& lh = atlas.labels.header();
  if (placement == AtlasPlacement::kSameGrid && !(lh.same_grid(grid) && lh.num_volumes == 1)) {
    throw std::invalid_argument(fmt::format(
        "atlas: the label image ({}x{}x{}) is not on the EPI grid ({}x{}x{}, same affine within 1e-4 mm); resample it "
        "(AtlasPlacement::kResample) or supply labels on the EPI grid",
        lh.dims[0], lh.dims[1], lh.dims[2], grid.dims[0], grid.dims[1], grid.dims[2]));
  }
  const Image resampled = placement == AtlasPlacement::kSameGrid
                              ? Image()
                              : resample_labels_nearest(atlas.labels, grid, grid_to_atlas_world);
  const std::vector<float>& labels = placement == AtlasPlacement::kSameGrid ? atlas.labels.data() : resampled.data();

  std::unordered_map<int32_t, int32_t> index_of;
  for (size_t r = 0; r < atlas.regions.size(); ++r) index_of[atlas.regions[r].label] = static_cast<int32_t>(r);
  RoiSet set;
  set.dims = grid.dims;
  set.regions = atlas.regions;
  set.voxel_counts.assign(atlas.regions.size(), 0);
  set.roi_of_voxel.assign(labels.size(), -1);
  for (size_t v = 0; v < labels.size(); ++v) {
    if (labels[v] <= 0.0f) continue;
    const auto it = index_of.find(static_cast<int32_t>(labels[v]));
    if (it == index_of.end()) continue;
    set.roi_of_voxel[v] = it->second;
    ++set.voxel_counts[static_cast<size_t>(it->second)];
  }
  const auto missing = set.missing();
  if (!missing.empty()) {
    spdlog::warn("atlas: {} of {} regions have no voxel on the {}x{}x{} grid (their connectivity rows are NaN): {}",
                 missing.size(), set.regions.size(), grid.dims[0], grid.dims[1], grid.dims[2], join(missing));
  }
  return set;
}

}  // namespace rtf
