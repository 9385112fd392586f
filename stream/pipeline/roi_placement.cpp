// RoiPlacement: the atlas, the seed and the feedback ROIs on a run's grid, in the space each one is given in.
#include "stream/pipeline/roi_placement.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <variant>

#include "core/connectivity/seed.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/nifti_io.hpp"
#include "core/registration/itk_transform.hpp"
#include "core/registration/resample.hpp"
#include "core/registration/subject_space.hpp"
#include "stream/output/output_failures.hpp"

namespace rtf::stream {

namespace {

// Pulls template-space images onto the grid and evaluates template-space spheres, computing each voxel's template
// position once, when a sphere first needs them.
class TemplatePlacer {
 public:
  TemplatePlacer(const ImageHeader& grid, const TemplateGeometry& geometry) : grid_(grid), geometry_(geometry) {}

  Image pull(const Image& image) const {
    if (geometry_.device != nullptr) return pull_to_grid(*geometry_.device, image, grid_, geometry_.chain);
    Eigen::Matrix4d to_template = Eigen::Matrix4d::Identity();
    for (const SpatialTransform& t : geometry_.chain) {
      const auto* affine = std::get_if<Eigen::Matrix4d>(&t);
      if (affine == nullptr) throw std::logic_error("a displacement field needs a device to pull images through");
      to_template = *affine * to_template;
    }
    return resample_labels_nearest(image, grid_, to_template);
  }

  std::vector<int32_t> sphere(const Eigen::Vector3d& centre, double radius) {
    if (geometry_.chain.empty()) return seed_from_sphere(grid_, centre, radius);
    if (positions_.empty()) positions_ = template_positions(grid_, geometry_.chain);
    return template_sphere_voxels(positions_, grid_, centre, radius);
  }

 private:
  const ImageHeader& grid_;
  const TemplateGeometry& geometry_;
  std::vector<Eigen::Vector3d> positions_;
};

// Voxels of a region spec on the grid.
std::vector<int32_t> roi_voxels(const PipelineConfig& config, const RoiSpec& spec, const ImageHeader& grid,
                                const RoiSet* atlas, TemplatePlacer& placer) {
  const bool in_template = config.space_of(spec) == RoiSpace::kTemplate;
  if (spec.sphere_mm) {
    const Eigen::Vector3d c((*spec.sphere_mm)[0], (*spec.sphere_mm)[1], (*spec.sphere_mm)[2]);
    return in_template ? placer.sphere(c, spec.radius_mm) : seed_from_sphere(grid, c, spec.radius_mm);
  }
  if (!spec.mask.empty()) {
    const Image mask = read_nifti(spec.mask);
    return seed_from_mask(in_template ? placer.pull(mask) : mask, grid);
  }
  if (atlas == nullptr)
    throw std::invalid_argument(fmt::format("ROI {}: an atlas region needs [connectivity] atlas", spec.name));
  for (int64_t r = 0; r < atlas->size(); ++r) {
    if (atlas->regions[static_cast<size_t>(r)].name != spec.atlas_region) continue;
    std::vector<int32_t> v;
    for (size_t i = 0; i < atlas->roi_of_voxel.size(); ++i) {
      if (atlas->roi_of_voxel[i] == r) v.push_back(static_cast<int32_t>(i));
    }
    if (v.empty())
      throw std::invalid_argument(fmt::format("ROI {}: the atlas region has no voxel on this grid", spec.name));
    return v;
  }
  throw std::invalid_argument(fmt::format("ROI {}: no atlas region named '{}'", spec.name, spec.atlas_region));
}

std::shared_ptr<const RoiLabels> label_bits(const PipelineConfig& config, const ImageHeader& grid,
                                            const PlacedRois& placed) {
  auto labels = std::make_shared<RoiLabels>();
  labels->bits.assign(static_cast<size_t>(grid.voxels_per_volume()), 0.0f);
  auto add = [&](const std::string& name, const std::vector<int32_t>& voxels) {
    const size_t bit = labels->names.size();
    if (bit >= kMaxLabelledRois) return;
    labels->names.push_back(name);
    const auto flag = static_cast<float>(uint32_t{1} << bit);
    for (int32_t v : voxels) labels->bits[static_cast<size_t>(v)] += flag;
  };
  for (size_t r = 0; r < placed.feedback.size(); ++r) add(config.feedback_rois[r].name, placed.feedback[r]);
  if (placed.seed) add(config.seed->name.empty() ? "seed" : config.seed->name, *placed.seed);
  if (labels->names.empty()) return nullptr;
  return labels;
}

}  // namespace

TemplateGeometry unregistered_geometry(const PipelineConfig& config) {
  TemplateGeometry g;
  if (!config.atlas_transform.empty()) {
    // An atlas in template space reaches a scanner-space EPI through the inverse of the template -> EPI transform.
    g.chain.emplace_back(inverse_affine(read_itk_affine(config.atlas_transform), config.atlas_transform));
  }
  return g;
}

LabelAtlas load_atlas(const PipelineConfig& config) {
  if (config.atlas == "aal") return read_aal(config.data_dir);
  return read_atlas(config.atlas, config.atlas_names.empty()
                                      ? std::nullopt
                                      : std::optional<std::filesystem::path>(config.atlas_names));
}

PlacedRois place_rois(const PipelineConfig& config, const ImageHeader& grid, const LabelAtlas* atlas,
                      const std::string& atlas_error, const TemplateGeometry& geometry) {
  const auto start = std::chrono::steady_clock::now();
  PlacedRois out;
  TemplatePlacer placer(grid, geometry);
  if (atlas != nullptr) {
    try {
      out.atlas_labels = placer.pull(atlas->labels);
      out.atlas = rois_on_grid(make_atlas(out.atlas_labels, atlas->regions), grid, AtlasPlacement::kSameGrid);
    } catch (const std::exception& e) {
      out.atlas_error = e.what();
      out.atlas_labels = Image();
    }
  } else {
    out.atlas_error = atlas_error;
  }
  const RoiSet* atlas_rois = out.atlas ? &*out.atlas : nullptr;
  if (config.seed) {
    try {
      out.seed = roi_voxels(config, *config.seed, grid, atlas_rois, placer);
    } catch (const std::exception& e) {
      out.seed_error = e.what();
    }
  }
  if (config.feedback && !config.feedback_rois.empty()) {
    try {
      std::vector<int32_t> roi_of_voxel(static_cast<size_t>(grid.voxels_per_volume()), -1);
      for (size_t r = 0; r < config.feedback_rois.size(); ++r) {
        const RoiSpec& spec = config.feedback_rois[r];
        std::vector<int32_t> voxels = roi_voxels(config, spec, grid, atlas_rois, placer);
        for (int32_t v : voxels) {
          int32_t& owner = roi_of_voxel[static_cast<size_t>(v)];
          if (owner >= 0) {
            throw std::invalid_argument(fmt::format("feedback ROIs {} and {} overlap", spec.name,
                                                    config.feedback_rois[static_cast<size_t>(owner)].name));
          }
          owner = static_cast<int32_t>(r);
        }
        out.feedback.push_back(std::move(voxels));
      }
    } catch (const std::exception& e) {
      out.feedback.clear();
      out.feedback_error = e.what();
    }
  }
  out.labels = label_bits(config, grid, out);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

void write_placed_rois(const std::filesystem::path& run_dir, const ImageHeader& grid, const PlacedRois& rois,
                       bool atlas_transformed) {
  const std::string what = "ROIs on the EPI grid";
  std::error_code ec;
  std::filesystem::create_directories(run_dir, ec);  // a failure shows in each file's error
  ImageHeader h = grid;
  h.num_volumes = 1;
  h.tr_s = 0.0;
  if (atlas_transformed && rois.atlas && !rois.atlas_labels.data().empty()) {
    // The ROIs as the run sees them, for checking and for viewers: the atlas label per voxel, 0 outside.
    const std::filesystem::path path = run_dir / "atlas_in_epi.nii.gz";
    write_output(path, what, [&] { write_nifti(path, Image(h, rois.atlas_labels.data()), DataType::kInt16); });
  }
  if (!rois.labels) return;
  const auto n = static_cast<size_t>(grid.voxels_per_volume());
  const RoiLabels& labels = *rois.labels;
  h.num_volumes = static_cast<int64_t>(labels.names.size());
  Image masks(h, 0.0f);
  std::string tsv = "volume\tname\tvoxels\n";
  for (size_t k = 0; k < labels.names.size(); ++k) {
    int64_t count = 0;
    for (size_t v = 0; v < n; ++v) {
      if ((static_cast<uint32_t>(labels.bits[v]) >> k) & 1u) {
        masks.data()[k * n + v] = 1.0f;
        ++count;
      }
    }
    tsv += fmt::format("{}\t{}\t{}\n", k, labels.names[k], count);
  }
  const std::filesystem::path tsv_path = run_dir / "rois_in_epi.tsv", nifti_path = run_dir / "rois_in_epi.nii.gz";
  write_output(tsv_path, what, [&] { write_text_atomically(tsv_path, tsv); });
  write_output(nifti_path, what, [&] { write_nifti(nifti_path, masks, DataType::kUint8); });
}

}  // namespace rtf::stream
