// SliceTimingCorrector: per-slice interpolation taps (double, uploaded as float) and the kernel launch.
#include "core/temporal/slice_timing.hpp"

#include <fmt/format.h>

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "core/device/launch.hpp"
#include "core/temporal/slice_order.hpp"

namespace rtf {
namespace {

constexpr const char* kSource = "slice_timing.cl";
constexpr size_t kLocalSize = 64;

// Interpolation kernel K(x): the weight of a sample at distance x from the wanted position.
double kernel_weight(Interpolation method, double x, int half_width) {
  const double a = std::abs(x);
  switch (method) {
    case Interpolation::kLinear:
      return a < 1.0 ? 1.0 - a : 0.0;
    case Interpolation::kCubic:  // Catmull-Rom: Keys' cubic convolution with a = -1/2
      if (a < 1.0) return (1.5 * a - 2.5) * a * a + 1.0;
      if (a < 2.0) return ((-0.5 * a + 2.5) * a - 4.0) * a + 2.0;
      return 0.0;
    case Interpolation::kSinc: {
      if (a >= half_width) return 0.0;
      if (a == std::round(a)) return a == 0.0 ? 1.0 : 0.0;  // exact zeros of the sinc at integers
      const double px = std::numbers::pi * x;
      const double hann = 0.5 * (1.0 + std::cos(std::numbers::pi * x / half_width));
      return std::sin(px) / px * hann;
    }
  }
  return 0.0;
}

}  // namespace

Interpolation parse_interpolation(std::string_view name) {
  if (name == "sinc") return Interpolation::kSinc;
  if (name == "cubic") return Interpolation::kCubic;
  if (name == "linear") return Interpolation::kLinear;
  throw std::invalid_argument(fmt::format("unknown interpolation method '{}' (expected sinc, cubic or linear)", name));
}

std::string to_string(Interpolation method) {
  switch (method) {
    case Interpolation::kSinc:
      return "sinc";
    case Interpolation::kCubic:
      return "cubic";
    case Interpolation::kLinear:
      return "linear";
  }
  return "unknown";
}

int interpolation_radius(Interpolation method, int sinc_half_width) {
  switch (method) {
    case Interpolation::kSinc:
      if (sinc_half_width < 1 || sinc_half_width > 64) {
        throw std::invalid_argument(fmt::format("slice timing: sinc half-width {} outside 1..64", sinc_half_width));
      }
      return sinc_half_width;
    case Interpolation::kCubic:
      return 2;
    case Interpolation::kLinear:
      return 1;
  }
  return 1;
}

std::vector<double> shift_taps(Interpolation method, double shift, int sinc_half_width) {
  if (!(std::abs(shift) < 1.0)) throw std::invalid_argument(fmt::format("slice timing: shift {} samples", shift));
  const int radius = interpolation_radius(method, sinc_half_width);
  std::vector<double> taps(2 * static_cast<size_t>(radius) + 1);
  double sum = 0.0;
  for (size_t i = 0; i < taps.size(); ++i) {
    const double w = kernel_weight(method, static_cast<double>(i) - radius - shift, sinc_half_width);
    taps[i] = w;
    sum += w;
  }
  for (auto& w : taps) w /= sum;
  return taps;
}

int64_t mirror_index(int64_t i, int64_t n) {
  if (n <= 1) return 0;
  const int64_t period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

SliceTimingCorrector::SliceTimingCorrector(Device& device, std::array<int64_t, 3> dims, int64_t num_volumes,
                                           SliceTimingSpec spec)
    : device_(device), dims_(dims), num_volumes_(num_volumes) {
  for (int a = 0; a < 3; ++a) {
    if (dims[a] < 1) throw std::invalid_argument(fmt::format("slice timing: dimension {} is {}", a, dims[a]));
  }
  if (num_volumes < 1) throw std::invalid_argument(fmt::format("slice timing: {} volumes", num_volumes));
  if (dims[0] * dims[1] * dims[2] * num_volumes > (int64_t{1} << 31) - 1) {
    throw std::invalid_argument("slice timing: series larger than 2^31 voxels");
  }
  const int nz = static_cast<int>(dims[2]);
  validate_slice_times(spec.slice_times_s, nz, spec.tr_s);
  ref_time_s_ = reference_time(spec.slice_times_s, spec.tr_s, spec.ref_slice, spec.ref_time_s);
  radius_ = interpolation_radius(spec.method, spec.sinc_half_width);

  const size_t ntaps = 2 * static_cast<size_t>(radius_) + 1;
  std::vector<float> taps_f;
  taps_f.reserve(ntaps * static_cast<size_t>(nz));
  for (int z = 0; z < nz; ++z) {
    const double shift = (ref_time_s_ - spec.slice_times_s[static_cast<size_t>(z)]) / spec.tr_s;
    shifts_.push_back(shift);
    taps_.push_back(shift_taps(spec.method, shift, spec.sinc_half_width));
    taps_f.insert(taps_f.end(), taps_.back().begin(), taps_.back().end());
  }
  tap_buffer_ = DeviceBuffer<float>(device, taps_f.size(), CL_MEM_READ_ONLY);
  tap_buffer_.write(device.queue(), taps_f);
  kernel_ = device.kernel(kSource, "slice_time", {fmt::format("RADIUS={}", radius_)});
}

ClEvent SliceTimingCorrector::enqueue(const DeviceBuffer<float>& in, DeviceBuffer<float>& out) {
  const int64_t nvox = dims_[0] * dims_[1] * dims_[2];
  const auto needed = static_cast<size_t>(nvox * num_volumes_);
  if (in.size() < needed || out.size() < needed) {
    throw std::invalid_argument("slice timing: device buffers smaller than the series");
  }
  if (in.get() == out.get()) throw std::invalid_argument("slice timing: input and output must be different buffers");
  const int plane = static_cast<int>(dims_[0] * dims_[1]);
  const int nz = static_cast<int>(dims_[2]);
  const int nt = static_cast<int>(num_volumes_);
  set_args(kernel_, in, out, tap_buffer_, plane, nz, nt);
  return launch<1>(device_.queue(), kernel_, {static_cast<size_t>(nvox)}, {kLocalSize});
}

Image SliceTimingCorrector::correct(const Image& image) {
  const auto& h = image.header();
  if (h.dims != dims_ || h.num_volumes != num_volumes_) {
    throw std::invalid_argument(fmt::format("slice timing: image is {}x{}x{}x{}, corrector set up for {}x{}x{}x{}",
                                            h.dims[0], h.dims[1], h.dims[2], h.num_volumes, dims_[0], dims_[1],
                                            dims_[2], num_volumes_));
  }
  DeviceBuffer<float> in(device_, image.data().size(), CL_MEM_READ_ONLY);
  DeviceBuffer<float> out(device_, image.data().size());
  in.write(device_.queue(), image.data());
  enqueue(in, out);
  Image result(h);
  out.read(device_.queue(), result.data());
  return result;
}

}  // namespace rtf
