// The phantom's maps in template space (1 mm, cropped to the brain), built from the tissue model and the
// activation regions, ready to be sampled into EPI voxels (channel_volume.hpp).
#pragma once

#include <vector>

#include "sim/phantom/activation.hpp"
#include "sim/phantom/channel_volume.hpp"
#include "sim/phantom/tissue_model.hpp"

namespace rtf::sim {

// Signal channels, per template voxel x with tissue fractions f_k(x) and EPI baselines B_k:
//   0: baseline        S0(x) = sum_k f_k B_k
//   1: physio weight   W(x)  = sum_k f_k B_k physio_weight_k
//   2 + c: activation  A_c(x) = B_GM f_GM(x) sum over regions r of condition c containing x of psc_r / 100
// so that the signal at regressor values x_c(t) is S0 + sum_c A_c x_c(t).
ChannelVolume signal_channels(const TissueModel& tissue, const std::array<double, 3>& baseline,
                              const std::array<double, 3>& physio_weight, const std::vector<ResolvedRegion>& regions,
                              int conditions);
inline constexpr int kBaselineChannel = 0;
inline constexpr int kPhysioChannel = 1;
inline constexpr int kFirstActivationChannel = 2;

// Ground-truth channels: 0..2 the CSF, GM, WM fractions; 3 the activated grey-matter fraction f_GM(x) where x lies
// in any region.
ChannelVolume truth_channels(const TissueModel& tissue, const std::vector<ResolvedRegion>& regions);
inline constexpr int kActivatedChannel = 3;

// Grey-matter volume (mm^3, sum of f_GM times voxel volume) inside each region.
std::vector<double> region_gm_volume_mm3(const TissueModel& tissue, const std::vector<ResolvedRegion>& regions);

}  // namespace rtf::sim
