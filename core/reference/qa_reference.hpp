// Double-precision references of the QA stage's device measures (core/qa/): voxel-wise mean, SD and tSNR of a list of
// volumes by two passes, and a volume's per-slice masked means and global signal. Plain loops, written for clarity.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rtf::reference {

struct VoxelMoments {
  std::vector<double> mean, sd, tsnr;  // sd: population SD; tsnr = mean / sd, 0 where sd is 0
};

// The moments of volumes [first, last) of `volumes` (each the same length).
VoxelMoments voxel_moments(const std::vector<std::vector<float>>& volumes, size_t first, size_t last);

struct SliceMeans {
  std::vector<double> slice;  // NaN where a slice has no masked, finite voxel
  double global = 0.0;
};

SliceMeans slice_means(const std::vector<float>& volume, std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask);

// 3dToutcount's outliers (polort 0) per volume of `volumes` over `mask`, with the threshold `scale` MADs (in double):
// `sure` counts the values beyond scale * MAD * (1 + 1e-5), `borderline` those within 1e-5 of it either side (float
// rounding may put them either way). Voxels with a non-finite value or a MAD of 0 have no outliers.
struct OutlierCounts {
  std::vector<int64_t> sure, borderline;
};
OutlierCounts outlier_counts(const std::vector<std::vector<float>>& volumes, const std::vector<uint8_t>& mask,
                             double scale);

// AFNI 3dTqual's quality index: 1 - Spearman's rho (average ranks for ties) of `volume` and `reference` over `mask`;
// 1 for a constant volume (AFNI's); NaN for a non-finite value in the mask, a constant reference or fewer than 2
// voxels.
double quality_index(const std::vector<float>& volume, const std::vector<float>& reference,
                     const std::vector<uint8_t>& mask);

// Spearman's sums in integers: each masked value's doubled centred average rank, 2 r - (n + 1) with r its 1-based
// average rank among the n masked values (an integer for ties too), and the sums of a*b, a*a, b*b of the volume's ranks
// a and the reference's b (every masked value finite).
std::vector<int64_t> doubled_centred_ranks(const std::vector<float>& values);
struct RankSums {
  int64_t ab = 0, aa = 0, bb = 0;
};
RankSums rank_sums(const std::vector<float>& volume, const std::vector<float>& reference,
                   const std::vector<uint8_t>& mask);

}  // namespace rtf::reference
