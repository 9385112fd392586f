// Atlases (label images) for ROI x ROI connectivity: reading a label image and its region names (the format of
// mricron's aal.nii.txt: "<label> <name> [...]" per line), nearest-neighbour resampling of the labels onto an EPI grid
// through the two affines, and the resulting ROI set: each EPI voxel's region. docs/algorithms/connectivity.md.
//
// Resampling (resample_labels_nearest): for EPI voxel p = (i, j, k), world = A_epi * p (mm), then
// u = A_atlas^-1 * world (atlas voxel coordinates); the label is the atlas voxel floor(u + 0.5) on each axis (the
// nearest voxel centre; exact halves round up), or 0 (background) when that voxel lies outside the atlas. Labels are
// never interpolated: every EPI voxel takes exactly one atlas voxel's label. Both affines are the images' own
// (sform, else qform, else voxel sizes: read_nifti), so the atlas and the EPI must be in the same world space (e.g.
// the EPI normalised to MNI, or an atlas already warped to the subject).
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/image/image.hpp"

namespace rtf {

struct AtlasRegion {
  int32_t label = 0;  // voxel value in the label image (> 0)
  std::string name;
};

struct LabelAtlas {
  Image labels;                      // 3D, non-negative integer values, 0 = background
  std::vector<AtlasRegion> regions;  // the regions, in order (the names file's order, else ascending label)
};

// Paths of the default atlas, AAL (116 regions, MNI 1 mm) from Debian's mricron-data, relative to the data directory
// that scripts/fetch-data.sh fills (build/data).
inline constexpr const char* kAalImage = "mricron/aal.nii.gz";
inline constexpr const char* kAalNames = "mricron/aal.nii.txt";

// Reads "<label> <name> [anything else]" lines (aal.nii.txt: index, name, AAL code); blank lines and lines starting
// with '#' are skipped. Throws std::runtime_error naming the file and line for a malformed line, a label <= 0 or a
// label listed twice.
std::vector<AtlasRegion> read_label_names(const std::filesystem::path& path);

// Validates a label image and pairs it with its regions: 3D, every value a finite non-negative integer below 2^24
// (exact in float32); otherwise std::invalid_argument naming the first bad voxel. Without `regions`, every distinct
// nonzero label is a region named by its value. With `regions`, voxels whose label is not listed count as
// background (logged as a warning with their number).
LabelAtlas make_atlas(Image labels, std::optional<std::vector<AtlasRegion>> regions = std::nullopt);

// read_nifti + read_label_names (if `names` is given) + make_atlas.
LabelAtlas read_atlas(const std::filesystem::path& image,
                      const std::optional<std::filesystem::path>& names = std::nullopt);

// AAL from `data_dir` (kAalImage, kAalNames).
LabelAtlas read_aal(const std::filesystem::path& data_dir);

// The labels looked up at every voxel of `grid` (nearest neighbour, as described above): a 3D image on `grid`.
// Throws std::invalid_argument when either affine is not invertible or `labels` is not 3D.
// `grid_to_atlas_world` (optional) maps the grid's world positions into the atlas's world first (e.g. the inverse of a
// template -> EPI registration, for an atlas in template space and an EPI in scanner space).
Image resample_labels_nearest(const Image& labels, const ImageHeader& grid,
                              const Eigen::Matrix4d& grid_to_atlas_world = Eigen::Matrix4d::Identity());

// Regions of an atlas on an EPI grid.
struct RoiSet {
  std::array<int64_t, 3> dims{0, 0, 0};
  std::vector<AtlasRegion> regions;   // region index -> label and name
  std::vector<int32_t> roi_of_voxel;  // per grid voxel (x fastest): region index, or -1 for none
  std::vector<int64_t> voxel_counts;  // per region: voxels on the grid (0: the region is missing)

  int64_t size() const { return static_cast<int64_t>(regions.size()); }
  int64_t present() const;                   // regions with at least one voxel
  std::vector<std::string> missing() const;  // names of the regions with no voxel on the grid
};

enum class AtlasPlacement {
  kResample,  // nearest-neighbour resampling onto the grid through the affines (any atlas grid)
  kSameGrid,  // the label image must already be on the grid (same dims and affine within 1e-4 mm), else an error
};

// The ROI set of `atlas` on `grid`. Regions with no voxel on the grid stay in the set (voxel count 0) and are logged
// as a warning with their names; their rows of every connectivity matrix are NaN. Throws std::invalid_argument for a
// label image on another grid under kSameGrid, or an atlas without regions.
RoiSet rois_on_grid(const LabelAtlas& atlas, const ImageHeader& grid,
                    AtlasPlacement placement = AtlasPlacement::kResample,
                    const Eigen::Matrix4d& grid_to_atlas_world = Eigen::Matrix4d::Identity());

}  // namespace rtf
