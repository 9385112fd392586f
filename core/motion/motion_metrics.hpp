// Per-volume motion summaries: framewise displacement (Power et al. 2012, in core/geometry/rigid_transform.hpp) and
// DVARS (Power et al. 2012: the root mean square over brain voxels of the change in intensity from the previous
// volume), and the motion files written by `rtfmri mc` and the live stage. docs/algorithms/motion_correction.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/geometry/rigid_transform.hpp"

namespace rtf {

// sqrt(mean over voxels with mask != 0 of (current - previous)^2), leaving out voxels that are NaN or infinite in
// either volume; 0 for an empty mask, NaN when every masked voxel is non-finite.
double dvars(std::span<const float> previous, std::span<const float> current, std::span<const uint8_t> mask);

struct VolumeMotion {
  RigidParams params;     // volume -> reference, about the registration centre
  double fd_mm = 0.0;     // framewise displacement from the previous volume (0 for the first)
  double dvars = 0.0;     // of the corrected volume against the previous corrected one (0 for the first)
  bool converged = true;  // the registration met its tolerance
  int iterations = 0;
  double rms_residual = 0.0;
  std::string failure;  // why the registration failed or did not converge; empty otherwise
};

// PREFIX.par: FSL mcflirt column order (rx ry rz in radians, tx ty tz in mm), one row per volume.
void write_fsl_par(const std::filesystem::path& path, const std::vector<VolumeMotion>& motion);
// PREFIX.1D: AFNI 3dvolreg -1Dfile column order (roll pitch yaw in degrees, dS dL dP in mm).
void write_afni_1d(const std::filesystem::path& path, const std::vector<VolumeMotion>& motion);
// PREFIX_fd.tsv: header row, then volume, fd_mm, dvars, the six parameters (mm, degrees), converged, iterations,
// rms_residual.
void write_motion_tsv(const std::filesystem::path& path, const std::vector<VolumeMotion>& motion);
// The same file line by line (the live stage appends a row per TR): header and row, each ending in '\n'.
std::string motion_tsv_header();
std::string motion_tsv_row(int64_t volume, const VolumeMotion& motion);

}  // namespace rtf
