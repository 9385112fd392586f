// Double-precision reference for slice-timing correction, written for clarity: for every voxel of
// slice z, the corrected sample n is the series evaluated at the fractional index
// p = n + (ref_time - slice_times[z]) / TR, as sum_j K(p - j) y[mirror(j)] / sum_j K(p - j) over all
// integers j where the interpolation kernel K is nonzero (Hann-windowed sinc of the given half-width,
// Catmull-Rom cubic, or linear). Indices outside 0..nt-1 are mirrored whole-sample symmetrically.
// Independent of the device path's tap tables.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace rtf::reference {

// `data`: nt volumes of dims[0]*dims[1]*dims[2] voxels, volume-major. `method`: "sinc", "cubic" or
// "linear". Returns the corrected series in the same layout.
std::vector<double> slice_time_correct(std::span<const float> data, std::array<int64_t, 3> dims, int64_t nt,
                                       std::span<const double> slice_times_s, double ref_time_s, double tr_s,
                                       std::string_view method, int sinc_half_width = 8);

}  // namespace rtf::reference
