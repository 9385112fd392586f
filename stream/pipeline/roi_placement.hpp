// RoiPlacement: a session's regions on one run's EPI grid. The atlas's regions, the seed's voxels and each feedback
// ROI's voxels, each placed through the geometry that joins template space to the EPI's world (identity, the inverse
// of [connectivity] atlas_transform, or the subject's registration chain), each with the reason when it cannot be
// placed (the stage it feeds is then off). Also the label images that go to the run directory and to viewers: the
// atlas labels on the grid, and the ROIs as bits (bit k set: the voxel is in ROI k; the feedback ROIs in order, then
// the seed). docs/live.md ("Subject-space ROIs").
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/connectivity/atlas.hpp"
#include "core/device/device.hpp"
#include "core/registration/displacement_field.hpp"
#include "stream/pipeline/pipeline_config.hpp"

namespace rtf::stream {

// How the template's space reaches a grid: `chain` maps EPI world points to template world points (empty: one space).
// With `device`, labels and masks are pulled through the chain on it (rtf::resample, nearest); without, on the host
// (the chain must then hold affines only).
struct TemplateGeometry {
  std::vector<SpatialTransform> chain;
  Device* device = nullptr;
  bool registered = false;  // the chain comes from the subject's registration (files are written for it)
};

// The geometry of a session without [registration]: the inverse of atlas_transform, or one space.
TemplateGeometry unregistered_geometry(const PipelineConfig& config);

// The ROIs as bits per voxel (x fastest; float32 holds integers below 2^24 exactly, so at most 24 ROIs): bit k set
// when the voxel lies in ROI `names[k]`. `version` changes when another set of ROIs replaces these (a new run).
struct RoiLabels {
  std::vector<float> bits;
  std::vector<std::string> names;
  int64_t version = 0;
};
inline constexpr size_t kMaxLabelledRois = 24;

struct PlacedRois {
  std::optional<RoiSet> atlas;  // the atlas on the grid (null: atlas off or not placed: atlas_error)
  std::string atlas_error;
  std::optional<std::vector<int32_t>> seed;  // null: no seed, or seed_error
  std::string seed_error;
  // One voxel list per config.feedback_rois (empty: feedback ROIs off, or feedback_error).
  std::vector<std::vector<int32_t>> feedback;
  std::string feedback_error;
  std::shared_ptr<const RoiLabels> labels;  // the seed and feedback ROIs that were placed (null: none)
  Image atlas_labels;                       // the atlas's labels on the grid (empty without an atlas)
  double seconds = 0.0;                     // time spent placing them
};

// The session's atlas ("aal" from config.data_dir, or a label NIfTI with its names); throws naming the file.
LabelAtlas load_atlas(const PipelineConfig& config);

// Places every region the config names on `grid`. `atlas`: the loaded atlas (null when config.atlas is "" or it could
// not be loaded: `atlas_error` then says why). Never throws for a region that cannot be placed (its error is set).
PlacedRois place_rois(const PipelineConfig& config, const ImageHeader& grid, const LabelAtlas* atlas,
                      const std::string& atlas_error, const TemplateGeometry& geometry);

// Writes runs/<run>/atlas_in_epi.nii.gz (int16 labels, when the atlas was placed through a transform),
// rois_in_epi.nii.gz (one uint8 mask volume per ROI of `labels`) and rois_in_epi.tsv (volume, name, voxels). Each
// file that cannot be written is logged and reported to output_failures() (stream/output/output_failures.hpp), the
// others still written; never throws for a write.
void write_placed_rois(const std::filesystem::path& run_dir, const ImageHeader& grid, const PlacedRois& rois,
                       bool atlas_transformed);

}  // namespace rtf::stream
