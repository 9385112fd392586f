// Brain mask reference: smoothing_reference + mean + threshold, all in double.
#include "core/reference/brain_mask_reference.hpp"

#include "core/reference/smoothing_reference.hpp"

namespace rtf::reference {

BrainMaskReference brain_mask(const Image& volume, const std::array<std::vector<double>, 3>& taps, double fraction) {
  BrainMaskReference r;
  r.smoothed = smooth_volume(volume.volume(0), volume.header().dims, taps);
  double sum = 0.0;
  for (double v : r.smoothed) sum += v;
  r.threshold = fraction * sum / static_cast<double>(r.smoothed.size());
  r.inside.resize(r.smoothed.size());
  for (size_t i = 0; i < r.smoothed.size(); ++i) r.inside[i] = r.smoothed[i] > r.threshold ? 1 : 0;
  return r;
}

}  // namespace rtf::reference
