// dcm2niix (Debian's, installed by scripts/setup.sh) as the independent reference of the scanner tests: its NIfTI of a
// folder of DICOM (or PAR/REC) files, and the comparison of one of our volumes with one of its volumes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "core/image/image.hpp"

namespace rtf::test {

bool have_dcm2niix();

// dcm2niix's NIfTI of the files in `folder`, converted from a copy in `work` (it may write beside its input).
// Adds a test failure and returns an empty image when dcm2niix fails or writes no single NIfTI. `slice_timing`, if
// given, receives the SliceTiming of its BIDS sidecar (s; empty where it writes none).
Image dcm2niix_of(const std::filesystem::path& folder, const std::filesystem::path& work,
                  std::vector<double>* slice_timing = nullptr);

// `mine` (one 3D volume) against volume t of `theirs`: every voxel equal, affine within `affine_mm`.
void expect_same_volume(const Image& mine, const Image& theirs, int64_t t, double affine_mm = 1e-4);

}  // namespace rtf::test
