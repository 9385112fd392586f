// Brain mask from a BOLD series, BROCCOLI's rule: smooth one volume with a Gaussian (FWHM 4 mm by
// default), then keep voxels above a fraction (0.9 by default) of the smoothed volume's mean.
// See docs/algorithms/brain_mask.md.
#pragma once

#include <cstdint>
#include <vector>

#include "core/device/device.hpp"
#include "core/image/image.hpp"

namespace rtf {

struct BrainMaskSpec {
  double fwhm_mm = 4.0;   // smoothing before thresholding
  double fraction = 0.9;  // threshold = fraction * mean(smoothed volume)
  int64_t volume = 0;     // which volume of the series; -1 = the temporal mean of all volumes
};

struct BrainMask {
  std::vector<uint8_t> inside;  // 1 inside, 0 outside; one per voxel of a volume
  double threshold = 0.0;       // the intensity threshold applied
  int64_t count = 0;            // voxels inside
};

BrainMask compute_brain_mask(Device& device, const Image& series, const BrainMaskSpec& spec = {});

// The volume the mask is computed from (spec.volume, or the temporal mean for -1), as a 3D image.
Image mask_source_volume(const Image& series, int64_t volume);

}  // namespace rtf
