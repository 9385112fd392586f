// Subject-space ROIs: anatomy checks, normalisation files, the EPI registration, the EPI -> template chain, exact
// template-space spheres and labels pulled onto the EPI grid.
#include "core/registration/subject_space.hpp"

#include <fmt/format.h>

#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <system_error>

#include "core/io/nifti_io.hpp"
#include "core/registration/itk_transform.hpp"
#include "core/registration/point_sampling.hpp"
#include "core/registration/resample.hpp"

namespace rtf {

namespace {

void require_file(const std::filesystem::path& path, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw std::invalid_argument(fmt::format("{} {}: no such file", what, path.string()));
  }
}

void require_3d(const ImageHeader& h, const std::filesystem::path& path, const std::string& what) {
  if (h.num_volumes != 1) {
    throw std::invalid_argument(
        fmt::format("{} {}: a 3D image is needed, this one has {} volumes", what, path.string(), h.num_volumes));
  }
}

}  // namespace

Image read_anatomy(const std::filesystem::path& path, const std::string& what) {
  require_file(path, what);
  Image image = read_nifti(path);
  require_3d(image.header(), path, what);
  return image;
}

void check_anatomy(const std::filesystem::path& path, const std::string& what) {
  require_file(path, what);
  require_3d(read_complete_nifti_header(path), path, what);  // a file cut short is refused here, not when it is used
}

std::filesystem::path normalization_affine_path(const std::string& prefix) {
  return prefix + "_affine.txt";
}
std::filesystem::path normalization_inverse_warp_path(const std::string& prefix) {
  return prefix + "_inverse_warp.nii.gz";
}
std::filesystem::path normalization_warp_path(const std::string& prefix) {
  return prefix + "_warp.nii.gz";
}

void check_normalization(const std::string& prefix) {
  require_file(normalization_affine_path(prefix), "normalization affine");
  std::error_code ec;
  if (std::filesystem::exists(normalization_warp_path(prefix), ec)) {
    require_file(normalization_inverse_warp_path(prefix), "normalization inverse warp");
  }
}

NormalizationResult read_normalization(const std::string& prefix) {
  check_normalization(prefix);
  NormalizationResult n;
  n.affine = read_itk_affine(normalization_affine_path(prefix));
  std::error_code ec;
  if (std::filesystem::exists(normalization_warp_path(prefix), ec)) {
    n.inverse_warp = std::make_shared<const Image>(read_displacement_field(normalization_inverse_warp_path(prefix)));
  }
  return n;
}

void write_normalization(const std::string& prefix, const NormalizationResult& n) {
  write_itk_affine(normalization_affine_path(prefix), n.affine);
  if (n.warp) write_displacement_field(normalization_warp_path(prefix), *n.warp);
  if (n.inverse_warp) write_displacement_field(normalization_inverse_warp_path(prefix), *n.inverse_warp);
}

LinearRegistrationResult register_epi(Device& device, const Image& epi, const Image& anatomy,
                                      const LinearRegistrationOptions& options, const LinearProgress& progress) {
  LinearRegistration registration(device, anatomy, epi, options);
  LinearRegistrationResult result = registration.run(centre_of_mass_alignment(anatomy, epi), progress);
  if (!result.failure.empty()) throw std::runtime_error("EPI registration failed: " + result.failure);
  return result;
}

std::vector<SpatialTransform> epi_to_template_chain(const Eigen::Matrix4d& anatomy_to_epi,
                                                    const NormalizationResult* t1_to_template) {
  std::vector<SpatialTransform> chain{inverse_affine(anatomy_to_epi, "EPI registration")};
  if (t1_to_template != nullptr) {
    for (SpatialTransform& t : t1_to_template->subject_to_template()) chain.push_back(std::move(t));
  }
  return chain;
}

std::vector<Eigen::Vector3d> template_positions(const ImageHeader& grid, const std::vector<SpatialTransform>& chain) {
  std::vector<Eigen::Vector3d> positions;
  positions.reserve(static_cast<size_t>(grid.voxels_per_volume()));
  for (int64_t k = 0; k < grid.dims[2]; ++k) {
    for (int64_t j = 0; j < grid.dims[1]; ++j) {
      for (int64_t i = 0; i < grid.dims[0]; ++i) {
        Eigen::Vector3d p =
            (grid.affine * Eigen::Vector4d(static_cast<double>(i), static_cast<double>(j), static_cast<double>(k), 1.0))
                .head<3>();
        for (const SpatialTransform& t : chain) p = transform_point(t, p);
        positions.push_back(p);
      }
    }
  }
  return positions;
}

std::vector<int32_t> template_sphere_voxels(const std::vector<Eigen::Vector3d>& positions, const ImageHeader& grid,
                                            const Eigen::Vector3d& centre_mm, double radius_mm) {
  if (!(radius_mm >= 0.0) || !std::isfinite(radius_mm)) {
    throw std::invalid_argument(fmt::format("sphere: radius {} mm is not a finite non-negative number", radius_mm));
  }
  std::vector<int32_t> voxels;
  double nearest = std::numeric_limits<double>::infinity();
  int32_t nearest_voxel = -1;
  for (size_t v = 0; v < positions.size(); ++v) {
    const double d = (positions[v] - centre_mm).norm();
    if (d <= radius_mm) voxels.push_back(static_cast<int32_t>(v));
    if (d < nearest) {
      nearest = d;
      nearest_voxel = static_cast<int32_t>(v);
    }
  }
  const double half_diagonal = 0.5 * Eigen::Vector3d(grid.voxel_mm[0], grid.voxel_mm[1], grid.voxel_mm[2]).norm();
  if (nearest_voxel >= 0 && nearest > radius_mm && nearest <= half_diagonal) {
    voxels.insert(std::lower_bound(voxels.begin(), voxels.end(), nearest_voxel), nearest_voxel);
  }
  if (voxels.empty()) {
    throw std::invalid_argument(
        fmt::format("sphere at ({}, {}, {}) mm of radius {} mm (template space) holds no voxel of the EPI grid",
                    centre_mm[0], centre_mm[1], centre_mm[2], radius_mm));
  }
  return voxels;
}

Image pull_to_grid(Device& device, const Image& image, const ImageHeader& grid,
                   const std::vector<SpatialTransform>& chain) {
  ImageHeader reference = grid;
  reference.num_volumes = 1;
  return resample(device, image, reference, chain, ResampleInterpolation::kNearest);
}

}  // namespace rtf
