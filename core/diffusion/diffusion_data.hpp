// Reading FSL bedpostx's input directory: DIR/data.nii.gz (4D diffusion series), DIR/bvals, DIR/bvecs and
// DIR/nodif_brain_mask.nii.gz, validated together (counts, unit gradients, a b = 0 volume, one voxel grid), and
// gathering the mask voxels' signals in the layout the initialisation and the sampler read: [voxel][measurement].
// b-values at or below kB0Threshold count as b = 0 (FSL's threshold): their bvecs may be zero and are kept as given;
// the values themselves are not changed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "core/diffusion/ball_stick_model.hpp"
#include "core/image/image.hpp"

namespace rtf {

constexpr double kB0Threshold = 50.0;  // s/mm^2: b <= this is a b = 0 volume

struct DiffusionInput {
  Image data;                   // 4D: x, y, z, measurement
  DiffusionScheme scheme;       // one b-value and unit bvec per volume (bvecs of b > kB0Threshold normalised exactly)
  std::vector<uint8_t> mask;    // per voxel of the 3D grid, x fastest: 1 inside (non-zero, non-NaN mask value)
  std::vector<int64_t> voxels;  // full-grid indices of the mask voxels, ascending (x fastest)
};

// bvals (one row of N numbers, or one column) and bvecs (3 rows of N, or N rows of 3; a 3x3 file is read as 3 rows),
// checked against `volumes`: the counts, no negative b, a bvec of norm 1 within 1e-2 for every b > kB0Threshold
// (then normalised exactly), at least one b <= kB0Threshold. A b = 0 volume's bvec may be NaN (dipy writes
// "nan nan nan" where FSL writes 0 0 0): read as 0 0 0, with a line in the log naming the file and the count; NaN in
// the bvec of a b > kB0Threshold volume is an error naming the line and value. Throws std::invalid_argument naming
// the file and the problem.
DiffusionScheme read_bvals_bvecs(const std::filesystem::path& bvals, const std::filesystem::path& bvecs,
                                 int64_t volumes);

// Reads DIR/data.nii.gz (or DIR/data.nii), DIR/bvals, DIR/bvecs and DIR/nodif_brain_mask.nii.gz (or .nii). Throws
// std::invalid_argument naming the file and the problem: a missing file, data not 4D, a scheme problem
// (read_bvals_bvecs), a mask that is not 3D, not on the data's grid (dimensions, affine within 1e-3 mm) or empty.
// A NIfTI file that cannot be read gives read_nifti's NiftiError (also naming the file).
DiffusionInput read_bedpost_dir(const std::filesystem::path& dir);

// The mask voxels' signals, [voxel][measurement] (input.voxels' order), on all host cores.
std::vector<float> gather_mask_signals(const DiffusionInput& input);

}  // namespace rtf
