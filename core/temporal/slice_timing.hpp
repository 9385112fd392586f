// Slice-timing correction on the device: every slice's time series is resampled to the reference
// time within the TR by a short interpolation filter (Hann-windowed sinc, Catmull-Rom cubic or
// linear). Slice z, acquired at offset o_z, gets corrected sample n = y_z(n + (o_ref - o_z) / TR),
// with mirrored (whole-sample symmetric) indices at the ends of the series.
// See docs/algorithms/slice_timing.md.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/image/image.hpp"

namespace rtf {

enum class Interpolation { kSinc, kCubic, kLinear };

// "sinc", "cubic" or "linear"; anything else throws std::invalid_argument.
Interpolation parse_interpolation(std::string_view name);
std::string to_string(Interpolation method);

// Half-width R of the filter: taps cover relative sample indices -R..R for any shift in (-1, 1).
// sinc: the window half-width; cubic: 2; linear: 1.
int interpolation_radius(Interpolation method, int sinc_half_width);

// Taps w[k + R], k = -R..R, such that y(n + shift) ~= sum_k w[k + R] y[n + k]; |shift| < 1.
// Normalised to sum 1; an integer shift of 0 gives the exact identity.
std::vector<double> shift_taps(Interpolation method, double shift, int sinc_half_width);

// Whole-sample symmetric index into a series of n samples: -1 -> 1, n -> n - 2 (and so on, folding
// as often as needed).
int64_t mirror_index(int64_t i, int64_t n);

struct SliceTimingSpec {
  double tr_s = 0.0;                  // repetition time in seconds (> 0)
  std::vector<double> slice_times_s;  // acquisition offset per slice (z), in [0, TR)
  std::optional<int> ref_slice;       // reference slice, or
  std::optional<double> ref_time_s;   // reference time; neither: the slice acquired at position n/2
  Interpolation method = Interpolation::kSinc;
  int sinc_half_width = 8;  // in samples (volumes)
};

class SliceTimingCorrector {
 public:
  // `dims` fixes the grid (slices along z) and `num_volumes` the series length.
  SliceTimingCorrector(Device& device, std::array<int64_t, 3> dims, int64_t num_volumes, SliceTimingSpec spec);

  // Corrects the whole series in `in` (num_volumes volumes, volume-major) into `out`, which must be
  // a different buffer of at least the same size. Enqueued on the compute queue.
  ClEvent enqueue(const DeviceBuffer<float>& in, DeviceBuffer<float>& out);

  // Host convenience: upload, correct, download.
  Image correct(const Image& image);

  double reference_time_s() const { return ref_time_s_; }
  // Per slice: shift (o_ref - o_z) / TR in samples, and its taps (2 * radius() + 1 each).
  const std::vector<double>& shifts() const { return shifts_; }
  const std::vector<std::vector<double>>& taps() const { return taps_; }
  int radius() const { return radius_; }

 private:
  Device& device_;
  std::array<int64_t, 3> dims_;
  int64_t num_volumes_;
  double ref_time_s_ = 0.0;
  int radius_ = 0;
  std::vector<double> shifts_;
  std::vector<std::vector<double>> taps_;
  DeviceBuffer<float> tap_buffer_;
  ClKernel kernel_;
};

}  // namespace rtf
