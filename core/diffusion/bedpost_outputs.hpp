// bedpostx's image outputs of a finished run (FSL's file names, docs/algorithms/bedpost.md): the merged samples, their
// means, d, S0 (d_std, tau), the dyads and their dispersion, the mask, each a .nii.gz on the data's grid with zeros
// outside the mask. The files are independent and written in parallel on the host's cores (a 2 mm brain's merged
// samples are ~1.6 GB of floats).
#pragma once

#include <filesystem>
#include <vector>

#include "core/diffusion/ball_stick_mcmc.hpp"
#include "core/image/image.hpp"

namespace rtf {

// Writes into `dir` (which must exist); `voxels` are the mask voxels' full-grid indices in the run's voxel order.
// Returns the names written.
std::vector<std::string> write_bedpost_maps(const std::filesystem::path& dir, const ImageHeader& grid,
                                            const std::vector<int64_t>& voxels, const BallStickRun& run,
                                            const BallStickOptions& options);

}  // namespace rtf
