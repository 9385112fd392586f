// Subject-space ROIs: what the live server needs to put an atlas and template-space (MNI) ROIs onto a subject's EPI
// in scanner space. The reference EPI volume is registered to the subject's T1 (rigid, mutual information), or without
// a T1 to the template directly (affine, mutual information); the T1 is normalised to the template
// (core/registration/normalization.hpp) or the result of an earlier `rtfmri normalize` is read. An EPI voxel's world
// point then reaches the template through the inverse chain: EPI -> T1 (the registration's inverse) -> template
// (NormalizationResult::subject_to_template: the affine's inverse, then the inverse warp). Labels are pulled through
// that chain (nearest neighbour, rtf::resample); spheres in template mm are evaluated exactly: an EPI voxel belongs to
// one when its centre's image in the template lies within the radius. docs/live.md ("Subject-space ROIs").
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/device/device.hpp"
#include "core/image/image.hpp"
#include "core/registration/displacement_field.hpp"
#include "core/registration/linear_registration.hpp"
#include "core/registration/normalization.hpp"

namespace rtf {

struct SubjectSpaceOptions {
  // The reference EPI (moving) to the subject's T1 (fixed): rigid, mutual information (the contrasts differ).
  LinearRegistrationOptions epi_to_t1{.dof = 6, .cost = LinearCost::kMi};
  // Without a T1: the reference EPI (moving) to the template (fixed), a 12-dof affine with mutual information.
  LinearRegistrationOptions epi_to_template{.dof = 12, .cost = LinearCost::kMi};
  // The T1 to the template (affine, then non-linear unless `normalization.nonlinear` is false).
  NormalizationOptions normalization;
};

// A 3D anatomical image (`what` names it in errors: "T1", "template"): read_nifti, refusing a missing file and a 4D
// image with std::invalid_argument naming the file.
Image read_anatomy(const std::filesystem::path& path, const std::string& what);
// The same checks from the header, and that the file's voxel data are all there (read_complete_nifti_header: a
// compressed file is decompressed to its end, nothing kept), before a scan.
void check_anatomy(const std::filesystem::path& path, const std::string& what);

// Paths of `rtfmri normalize T1 --out PREFIX`'s transforms.
std::filesystem::path normalization_affine_path(const std::string& prefix);        // PREFIX_affine.txt
std::filesystem::path normalization_inverse_warp_path(const std::string& prefix);  // PREFIX_inverse_warp.nii.gz
std::filesystem::path normalization_warp_path(const std::string& prefix);          // PREFIX_warp.nii.gz

// Refuses, with std::invalid_argument naming the missing file, a PREFIX without PREFIX_affine.txt, or with
// PREFIX_warp.nii.gz but no PREFIX_inverse_warp.nii.gz (a non-linear result must come with its inverse).
void check_normalization(const std::string& prefix);
// The T1 -> template normalisation of an earlier `rtfmri normalize --out PREFIX`: its affine (template world ->
// T1 world) and, unless it was affine only (no PREFIX_warp.nii.gz), its inverse warp. Only the fields
// subject_to_template() needs are filled. Throws std::invalid_argument or std::runtime_error naming the file.
NormalizationResult read_normalization(const std::string& prefix);
// Writes what read_normalization reads (the affine, and the warps when there are any) under PREFIX, atomically.
void write_normalization(const std::string& prefix, const NormalizationResult& normalization);

// Registers the reference EPI volume (moving) to `anatomy` (fixed: the T1, or the template without one), starting
// from the alignment of their intensity centres of mass. The result maps anatomy world -> EPI world. Throws
// std::invalid_argument for bad images (LinearRegistration's checks) and std::runtime_error when the registration
// fails (its reason).
// `progress` as LinearRegistration::run's (it may throw to abandon the registration).
LinearRegistrationResult register_epi(Device& device, const Image& epi, const Image& anatomy,
                                      const LinearRegistrationOptions& options, const LinearProgress& progress = {});

// The chain of point transforms from the EPI's world to the template's: the inverse of `anatomy_to_epi` (the
// registration's result), then, with a T1, `t1_to_template`'s subject_to_template() (null without a T1: the anatomy is
// the template).
std::vector<SpatialTransform> epi_to_template_chain(const Eigen::Matrix4d& anatomy_to_epi,
                                                    const NormalizationResult* t1_to_template);

// The template-space image of every voxel centre of `grid` (x fastest) through `chain`, in double precision (affines
// exactly, fields interpolated trilinearly and zero outside their grids, as rtf::resample does).
std::vector<Eigen::Vector3d> template_positions(const ImageHeader& grid, const std::vector<SpatialTransform>& chain);

// The voxels (ascending indices) whose template position lies within `radius_mm` of `centre_mm`, plus, as
// seed_from_sphere does, the voxel whose position is nearest the centre when that one lies within half a voxel
// diagonal of it (a radius of 0 selects the voxel containing the point). Throws std::invalid_argument for a negative
// or non-finite radius or a sphere that holds no voxel.
std::vector<int32_t> template_sphere_voxels(const std::vector<Eigen::Vector3d>& positions, const ImageHeader& grid,
                                            const Eigen::Vector3d& centre_mm, double radius_mm);

// A template-space image (labels or a mask: nearest neighbour, never blended) pulled onto `grid` through `chain`;
// 0 outside the image.
Image pull_to_grid(Device& device, const Image& image, const ImageHeader& grid,
                   const std::vector<SpatialTransform>& chain);

}  // namespace rtf
