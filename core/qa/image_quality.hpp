// MRIQC's functional image-quality metrics (IQMs), host code in double (docs/algorithms/qa.md, "MRIQC's
// image-quality metrics"): of the mean EPI of a run and its brain mask, EFC, FBER, SNR, GSR along x and y and the
// FWHM per axis (AFNI 3dFWHMx's classic first-difference estimate); of the series, the standardised DVARS (MRIQC's
// / Nichols 2013: `std` and voxel-wise `vstd`) and AFNI's GCOR. Undefined values are NaN; wrong sizes throw
// std::invalid_argument.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace rtf {

inline constexpr double kIqmNaN = std::numeric_limits<double>::quiet_NaN();

// Measures of one image (MRIQC's names): the mean EPI of a run and its brain mask (non-zero inside).
struct ImageQuality {
  double efc = kIqmNaN;   // entropy focus criterion (Atkinson 1997), MRIQC's normalisation: 1 for a constant image
  double fber = kIqmNaN;  // median energy inside / outside the mask; -1 when outside is (nearly) empty (MRIQC's)
  double snr = kIqmNaN;   // median / sample SD inside the mask eroded once (MRIQC's functional snr)
  double gsr_x = kIqmNaN, gsr_y = kIqmNaN;  // ghost-to-signal ratio, ghost = the mask shifted by N/2 along the axis
  double fwhm_x = kIqmNaN, fwhm_y = kIqmNaN, fwhm_z = kIqmNaN;  // mm (3dFWHMx -classic, inside the mask)
  double fwhm_avg = kIqmNaN;  // mm: the geometric mean of the axes estimated (3dFWHMx's fourth number)
};

// `mean_epi` and `mask` hold dims[0]*dims[1]*dims[2] voxels, x fastest; voxel_mm the voxel size. Non-finite and
// negative values of the image count as 0 (MRIQC's preparation of the mean EPI).
ImageQuality image_quality(std::span<const float> mean_epi, std::span<const uint8_t> mask, std::array<int64_t, 3> dims,
                           std::array<double, 3> voxel_mm);

// Measures of the series: `volumes` volumes of `dims` voxels each, volume-major (volume t at t * voxels, x fastest).
struct SeriesQuality {
  std::vector<double> dvars_std, dvars_vstd;  // per volume (volume 0: NaN), MRIQC's / Nichols' standardised DVARS
  double dvars_std_mean = kIqmNaN, dvars_vstd_mean = kIqmNaN;  // MRIQC's summary "dvars": {std, vstd} (volumes 1..)
  double gcor = kIqmNaN;  // AFNI's global correlation (mean of all pairwise correlations of the masked voxels' series)
  int64_t dvars_voxels = 0;  // the mask's voxels DVARS used (finite series with an interquartile range > 0)
  int64_t gcor_voxels = 0;   // the mask's voxels GCOR averaged over (finite series; constant ones count as 0)
};

// `volumes` holds count * voxels values; `mask` voxels values (non-zero: inside). A voxel whose series holds a
// non-finite value is left out of both measures.
SeriesQuality series_quality(std::span<const float> volumes, int64_t count, int64_t voxels,
                             std::span<const uint8_t> mask);

}  // namespace rtf
