// Slice-timing correction: device against the direct double-precision reference on odd grids and
// series lengths with fresh random data, for every interpolation method; analytic checks (a
// band-limited sinusoid is recovered at the reference time, constants stay constant, the reference
// slice is untouched); taps and argument validation.
// ctest-label: gpu
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <ostream>
#include <random>

#include "core/reference/slice_timing_reference.hpp"
#include "core/temporal/slice_order.hpp"
#include "core/temporal/slice_timing.hpp"
#include "sim/random_image.hpp"
#include "tests/support/compare.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

// Data in [0, 1000). float32 taps and a float sum of at most 17 terms whose weights add up in
// absolute value to < 1.5: expected error a few 1e-4; allow 1e-6 relative to the data range.
constexpr double kDataRange = 1000.0;
constexpr double kTolerance = 1e-6 * kDataRange;

// Runs the corrector into a NaN-poisoned output buffer so that any unwritten element shows.
Image run_poisoned(SliceTimingCorrector& corrector, const Image& image) {
  Device& dev = test::test_device();
  DeviceBuffer<float> in(dev, image.data().size());
  DeviceBuffer<float> out(dev, image.data().size());
  in.write(dev.queue(), image.data());
  out.fill(dev.queue(), std::numeric_limits<float>::quiet_NaN());
  corrector.enqueue(in, out);
  Image result(image.header());
  out.read(dev.queue(), result.data());
  return result;
}

struct Case {
  std::array<int64_t, 3> dims;
  int64_t volumes;
  Interpolation method;
  SliceOrder order;
  int ref;  // -1: default reference slice; -2: a reference time inside the TR; else a reference slice
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.dims[0] << "x" << c.dims[1] << "x" << c.dims[2] << "x" << c.volumes << " " << to_string(c.method) << " "
      << to_string(c.order) << " ref " << c.ref;
}

class SliceTimingTest : public ::testing::TestWithParam<Case> {};

TEST_P(SliceTimingTest, MatchesDirectReference) {
  const Case c = GetParam();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const double tr = 1.7;
  auto img = sim::random_image({c.dims, c.volumes, {3.0, 3.0, 3.0}, tr, 0.0f, 1000.0f, seed});
  SliceTimingSpec spec;
  spec.tr_s = tr;
  spec.slice_times_s = slice_times(c.order, static_cast<int>(c.dims[2]), tr);
  spec.method = c.method;
  if (c.ref >= 0) spec.ref_slice = c.ref;
  if (c.ref == -2) spec.ref_time_s = 0.37 * tr;
  SliceTimingCorrector corrector(test::test_device(), c.dims, c.volumes, spec);
  const Image out = run_poisoned(corrector, img);
  const auto ref = reference::slice_time_correct(img.data(), c.dims, c.volumes, spec.slice_times_s,
                                                 corrector.reference_time_s(), tr, to_string(c.method));
  const auto d = test::compare(out.data(), ref);
  EXPECT_EQ(d.non_finite, 0);
  EXPECT_LT(d.max_abs, kTolerance) << test::describe(d);
  RecordProperty("max_abs", std::to_string(d.max_abs));
}

INSTANTIATE_TEST_SUITE_P(
    OddGrids, SliceTimingTest,
    ::testing::Values(Case{{13, 7, 9}, 23, Interpolation::kSinc, SliceOrder::kInterleaved, -1},
                      Case{{13, 7, 9}, 40, Interpolation::kSinc, SliceOrder::kDescending, -2},
                      Case{{13, 7, 9}, 23, Interpolation::kCubic, SliceOrder::kAscending, 0},
                      Case{{13, 7, 9}, 40, Interpolation::kCubic, SliceOrder::kInterleavedSiemens, -1},
                      Case{{13, 7, 9}, 23, Interpolation::kLinear, SliceOrder::kInterleaved, 8},
                      Case{{11, 5, 10}, 40, Interpolation::kLinear, SliceOrder::kInterleavedSiemens, -2},
                      Case{{5, 3, 4}, 3, Interpolation::kSinc, SliceOrder::kAscending, -1},  // folds many times
                      Case{{7, 3, 5}, 1, Interpolation::kCubic, SliceOrder::kInterleaved, -1}),
    [](const auto& param_info) {
      const Case& c = param_info.param;
      return std::to_string(c.dims[0]) + "x" + std::to_string(c.dims[1]) + "x" + std::to_string(c.dims[2]) + "x" +
             std::to_string(c.volumes) + "_" + to_string(c.method) + "_" + std::to_string(param_info.index);
    });

// Each slice samples s(t) = sin(2 pi f t + phase) at t = n TR + o_z; after correction every slice
// should hold s(n TR + o_ref). Returns the largest error over samples at least `margin` from the ends.
double sinusoid_error(Interpolation method, double cycles_per_sample, int64_t margin) {
  const std::array<int64_t, 3> dims = {3, 2, 9};
  const int64_t nt = 96;
  const double tr = 2.0;
  SliceTimingSpec spec;
  spec.tr_s = tr;
  spec.slice_times_s = slice_times(SliceOrder::kInterleaved, 9, tr);
  spec.method = method;
  SliceTimingCorrector corrector(test::test_device(), dims, nt, spec);
  ImageHeader h;
  h.dims = dims;
  h.num_volumes = nt;
  Image img(h);
  const double f = cycles_per_sample / tr;  // Hz
  auto phase = [](int64_t x, int64_t y) { return 0.3 * static_cast<double>(x) + 1.1 * static_cast<double>(y); };
  for (int64_t t = 0; t < nt; ++t)
    for (int64_t z = 0; z < 9; ++z)
      for (int64_t y = 0; y < 2; ++y)
        for (int64_t x = 0; x < 3; ++x) {
          const double when = static_cast<double>(t) * tr + spec.slice_times_s[static_cast<size_t>(z)];
          img.at(x, y, z, t) = static_cast<float>(std::sin(2.0 * std::numbers::pi * f * when + phase(x, y)));
        }
  const Image out = run_poisoned(corrector, img);
  double worst = 0.0;
  for (int64_t t = margin; t < nt - margin; ++t)
    for (int64_t z = 0; z < 9; ++z)
      for (int64_t y = 0; y < 2; ++y)
        for (int64_t x = 0; x < 3; ++x) {
          const double when = static_cast<double>(t) * tr + corrector.reference_time_s();
          const double expected = std::sin(2.0 * std::numbers::pi * f * when + phase(x, y));
          const double got = out.at(x, y, z, t);
          if (!std::isfinite(got)) return std::numeric_limits<double>::infinity();
          worst = std::max(worst, std::abs(got - expected));
        }
  return worst;
}

TEST(SliceTiming, RecoversBandLimitedSinusoid) {
  // 0.1 cycles per sample (a 20 s period at TR 2 s), unit amplitude, 9 interleaved slices, samples at
  // least 8 from either end. Bounds are the measured errors (sinc 1.9e-4, cubic 4.4e-3, linear 4.8e-2)
  // with a margin of about 1.5x.
  const double sinc = sinusoid_error(Interpolation::kSinc, 0.1, 8);
  const double cubic = sinusoid_error(Interpolation::kCubic, 0.1, 8);
  const double linear = sinusoid_error(Interpolation::kLinear, 0.1, 8);
  RecordProperty("sinc", std::to_string(sinc));
  RecordProperty("cubic", std::to_string(cubic));
  RecordProperty("linear", std::to_string(linear));
  std::printf("sinusoid max error: sinc %.3g cubic %.3g linear %.3g\n", sinc, cubic, linear);
  EXPECT_LT(sinc, 3e-4);
  EXPECT_LT(cubic, 6.5e-3);
  EXPECT_LT(linear, 6.5e-2);
  EXPECT_LT(sinc, cubic);
  EXPECT_LT(cubic, linear);
  // Slower signal (0.03 cycles per sample): the polynomial kernels improve a lot; the windowed sinc
  // stays at its passband ripple (measured 3.6e-4).
  const double slow_sinc = sinusoid_error(Interpolation::kSinc, 0.03, 8);
  const double slow_cubic = sinusoid_error(Interpolation::kCubic, 0.03, 8);
  const double slow_linear = sinusoid_error(Interpolation::kLinear, 0.03, 8);
  std::printf("0.03 cycles/sample: sinc %.3g cubic %.3g linear %.3g\n", slow_sinc, slow_cubic, slow_linear);
  EXPECT_LT(slow_sinc, 5e-4);
  EXPECT_LT(slow_cubic, cubic / 10);
  EXPECT_LT(slow_linear, linear / 5);
}

TEST(SliceTiming, ConstantSeriesStaysConstantEverywhere) {
  const std::array<int64_t, 3> dims = {5, 4, 7};
  for (auto method : {Interpolation::kSinc, Interpolation::kCubic, Interpolation::kLinear}) {
    for (int64_t nt : {1, 2, 5, 31}) {
      SCOPED_TRACE(to_string(method) + " nt " + std::to_string(nt));
      ImageHeader h;
      h.dims = dims;
      h.num_volumes = nt;
      const Image img(h, 321.5f);
      SliceTimingSpec spec;
      spec.tr_s = 2.5;
      spec.slice_times_s = slice_times(SliceOrder::kInterleavedSiemens, 7, 2.5);
      spec.method = method;
      SliceTimingCorrector corrector(test::test_device(), dims, nt, spec);
      const Image out = run_poisoned(corrector, img);
      for (float v : out.data()) ASSERT_NEAR(v, 321.5f, 321.5f * 1e-6f);
    }
  }
}

TEST(SliceTiming, ReferenceSliceIsUnchanged) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const std::array<int64_t, 3> dims = {9, 5, 11};
  const int64_t nt = 17;
  auto img = sim::random_image({dims, nt, {2.0, 2.0, 2.0}, 1.5, -100.0f, 100.0f, seed});
  for (auto method : {Interpolation::kSinc, Interpolation::kCubic, Interpolation::kLinear}) {
    for (int ref : {0, 6, 10}) {
      SliceTimingSpec spec;
      spec.tr_s = 1.5;
      spec.slice_times_s = slice_times(SliceOrder::kInterleaved, 11, 1.5);
      spec.method = method;
      spec.ref_slice = ref;
      SliceTimingCorrector corrector(test::test_device(), dims, nt, spec);
      EXPECT_EQ(corrector.shifts()[static_cast<size_t>(ref)], 0.0);
      const Image out = run_poisoned(corrector, img);
      for (int64_t t = 0; t < nt; ++t)
        for (int64_t y = 0; y < dims[1]; ++y) {
          for (int64_t x = 0; x < dims[0]; ++x) ASSERT_EQ(out.at(x, y, ref, t), img.at(x, y, ref, t));
        }
    }
  }
}

TEST(SliceTiming, HostImagePathMatchesBufferPath) {
  auto img = sim::random_image({{6, 5, 4}, 9, {2.0, 2.0, 2.0}, 2.0, 0.0f, 10.0f, 3});
  SliceTimingSpec spec;
  spec.tr_s = 2.0;
  spec.slice_times_s = slice_times(SliceOrder::kDescending, 4, 2.0);
  SliceTimingCorrector corrector(test::test_device(), {6, 5, 4}, 9, spec);
  EXPECT_EQ(corrector.correct(img).data(), run_poisoned(corrector, img).data());
}

TEST(SliceTimingTaps, KnownValues) {
  const auto lin = shift_taps(Interpolation::kLinear, 0.25, 8);
  ASSERT_EQ(lin.size(), 3u);
  EXPECT_NEAR(lin[0], 0.0, 1e-15);
  EXPECT_NEAR(lin[1], 0.75, 1e-15);
  EXPECT_NEAR(lin[2], 0.25, 1e-15);
  const auto cub = shift_taps(Interpolation::kCubic, -0.5, 8);  // Catmull-Rom midpoint: -1/16 9/16 9/16 -1/16
  ASSERT_EQ(cub.size(), 5u);
  const std::vector<double> expected = {-1.0 / 16, 9.0 / 16, 9.0 / 16, -1.0 / 16, 0.0};
  for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(cub[i], expected[i], 1e-15) << i;
  for (auto method : {Interpolation::kSinc, Interpolation::kCubic, Interpolation::kLinear}) {
    for (double s : {-0.9, -0.31, 0.0, 0.5, 0.77}) {
      const auto taps = shift_taps(method, s, 6);
      double sum = 0.0, first_moment = 0.0;
      for (size_t i = 0; i < taps.size(); ++i) {
        sum += taps[i];
        first_moment += taps[i] * (static_cast<double>(i) - (static_cast<double>(taps.size()) - 1) / 2);
      }
      EXPECT_NEAR(sum, 1.0, 1e-12);
      if (method != Interpolation::kSinc) {
        EXPECT_NEAR(first_moment, s, 1e-12);  // linear and cubic reproduce linear signals exactly
      }
    }
    const auto id = shift_taps(method, 0.0, 8);
    for (size_t i = 0; i < id.size(); ++i) EXPECT_EQ(id[i], i == id.size() / 2 ? 1.0 : 0.0);
  }
  EXPECT_EQ(shift_taps(Interpolation::kSinc, 0.3, 8).size(), 17u);
  EXPECT_THROW(shift_taps(Interpolation::kSinc, 1.0, 8), std::invalid_argument);
  EXPECT_THROW(shift_taps(Interpolation::kSinc, 0.2, 0), std::invalid_argument);
}

TEST(SliceTimingTaps, MirrorIndex) {
  EXPECT_EQ(mirror_index(-1, 5), 1);
  EXPECT_EQ(mirror_index(-4, 5), 4);
  EXPECT_EQ(mirror_index(-5, 5), 3);
  EXPECT_EQ(mirror_index(5, 5), 3);
  EXPECT_EQ(mirror_index(8, 5), 0);
  EXPECT_EQ(mirror_index(9, 5), 1);
  EXPECT_EQ(mirror_index(-7, 2), 1);
  EXPECT_EQ(mirror_index(3, 1), 0);
}

TEST(SliceTiming, ParsesMethodNames) {
  EXPECT_EQ(parse_interpolation("sinc"), Interpolation::kSinc);
  EXPECT_EQ(parse_interpolation("cubic"), Interpolation::kCubic);
  EXPECT_EQ(parse_interpolation("linear"), Interpolation::kLinear);
  EXPECT_THROW(parse_interpolation("spline"), std::invalid_argument);
}

TEST(SliceTiming, RejectsBadArguments) {
  Device& dev = test::test_device();
  auto make = [&](double tr, std::vector<double> times, std::optional<int> ref_slice = std::nullopt,
                  std::optional<double> ref_time = std::nullopt) {
    SliceTimingSpec spec;
    spec.tr_s = tr;
    spec.slice_times_s = std::move(times);
    spec.ref_slice = ref_slice;
    spec.ref_time_s = ref_time;
    return SliceTimingCorrector(dev, {4, 4, 3}, 10, spec);
  };
  EXPECT_NO_THROW(make(2.0, {0.0, 1.0, 0.5}));
  EXPECT_THROW(make(0.0, {0.0, 1.0, 0.5}), std::invalid_argument);
  EXPECT_THROW(make(-2.0, {0.0, 1.0, 0.5}), std::invalid_argument);
  EXPECT_THROW(make(2.0, {0.0, 1.0}), std::invalid_argument);
  EXPECT_THROW(make(2.0, {0.0, 2.0, 0.5}), std::invalid_argument);
  EXPECT_THROW(make(2.0, {0.0, -0.1, 0.5}), std::invalid_argument);
  EXPECT_THROW(make(2.0, {0.0, 1.0, 0.5}, 3), std::invalid_argument);
  EXPECT_THROW(make(2.0, {0.0, 1.0, 0.5}, std::nullopt, 2.5), std::invalid_argument);
  SliceTimingSpec spec;
  spec.tr_s = 2.0;
  spec.slice_times_s = {0.0, 1.0, 0.5};
  EXPECT_THROW(SliceTimingCorrector(dev, {4, 4, 3}, 0, spec), std::invalid_argument);
  SliceTimingCorrector ok(dev, {4, 4, 3}, 10, spec);
  DeviceBuffer<float> buf(dev, 4 * 4 * 3 * 10);
  EXPECT_THROW(ok.enqueue(buf, buf), std::invalid_argument);
  DeviceBuffer<float> small(dev, 10);
  EXPECT_THROW(ok.enqueue(small, buf), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
