// ctest-label: gpu
// Device resampling through chains of affines against the double-precision reference: odd grids of different sizes,
// orientations and voxel sizes, fresh random data, nearest / linear / cubic, 4D inputs; labels never blended; an
// axis-flipped copy of an image resamples back exactly; bad input.
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <set>

#include "core/device/buffer.hpp"
#include "core/reference/resample_reference.hpp"
#include "core/registration/resample.hpp"
#include "tests/support/synthetic_volumes.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

ImageHeader grid(std::array<int64_t, 3> dims, std::array<double, 3> voxel, double angle,
                 const Eigen::Vector3d& origin) {
  ImageHeader h;
  h.dims = dims;
  h.voxel_mm = voxel;
  Eigen::Matrix4d a = Eigen::Matrix4d::Identity();
  a.topLeftCorner<3, 3>() = Eigen::AngleAxisd(angle, Eigen::Vector3d(0.3, -0.5, 0.8).normalized()).toRotationMatrix() *
                            Eigen::Vector3d(voxel[0], voxel[1], voxel[2]).asDiagonal();
  a.topRightCorner<3, 1>() = origin;
  h.affine = a;
  return h;
}

Eigen::Matrix4d random_affine(std::mt19937& rng, double size) {
  std::normal_distribution<double> n(0.0, size);
  Eigen::Matrix4d t = Eigen::Matrix4d::Identity();
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) t(r, c) += 0.05 * n(rng);
    t(r, 3) = 3.0 * n(rng);
  }
  return t;
}

Image random_image(const ImageHeader& h, int64_t volumes, uint32_t seed) {
  ImageHeader hh = h;
  hh.num_volumes = volumes;
  Image image(hh);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& v : image.data()) v = u(rng);
  return image;
}

class ResampleTest : public ::testing::TestWithParam<ResampleInterpolation> {};

TEST_P(ResampleTest, DeviceMatchesReferenceOnOddGridsThroughAChain) {
  // RTF_TEST_SEED replays a failure's printed seed.
  const uint32_t seed = std::getenv("RTF_TEST_SEED") ? static_cast<uint32_t>(std::stoul(std::getenv("RTF_TEST_SEED")))
                                                     : std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  const ImageHeader in_grid = grid({17, 13, 11}, {2.0, 2.5, 3.0}, 0.2, Eigen::Vector3d(-16, -15, -14));
  const ImageHeader out_grid = grid({19, 15, 9}, {1.7, 1.9, 3.3}, -0.4, Eigen::Vector3d(-17, -13, -12));
  const Image input = random_image(in_grid, 2, seed);
  const ResampleInterpolation interp = GetParam();
  // A random chain of two affines, drawn again (from the same stream) while it moves the output grid mostly outside the
  // input (the translations of ~4 mm rms may add up to a third of the grid): the test samples the input, not the
  // outside.
  std::vector<SpatialTransform> chain;
  Image cpu;
  const auto inside_count = [](const Image& image) {
    return std::count_if(image.data().begin(), image.data().end(), [](float v) { return v != -7.0f; });
  };
  for (int attempt = 0; attempt < 50; ++attempt) {
    chain = {random_affine(rng, 1.0), random_affine(rng, 1.0)};
    cpu = reference::resample(input, out_grid, chain, interp, -7.0);
    if (inside_count(cpu) > static_cast<int64_t>(cpu.data().size() / 4)) break;
  }
  const Image dev = resample(test::test_device(), input, out_grid, chain, interp, -7.0f);
  ASSERT_EQ(dev.data().size(), cpu.data().size());
  ASSERT_EQ(dev.nt(), 2);
  int64_t inside = 0, mismatches = 0;
  for (size_t i = 0; i < cpu.data().size(); ++i) {
    if (cpu.data()[i] != -7.0f) ++inside;
    // Tolerance: positions in float (world coordinates ~20 mm: ~2e-6 mm) move a linear or cubic sample of data in
    // [-1, 1] with slopes up to 2 per voxel by < 1e-4; nearest picks another voxel only for points within that
    // distance of a voxel boundary, and points that close to the edge of the input may fall in or out.
    if (std::abs(dev.data()[i] - cpu.data()[i]) > 1e-4f) ++mismatches;
  }
  EXPECT_GT(inside, static_cast<int64_t>(cpu.data().size() / 4));  // the test samples the input, not the outside
  EXPECT_LE(mismatches, static_cast<int64_t>(cpu.data().size() / 1000)) << "of " << cpu.data().size();
  if (interp != ResampleInterpolation::kNearest) {
    EXPECT_EQ(mismatches, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Interpolations, ResampleTest,
                         ::testing::Values(ResampleInterpolation::kNearest, ResampleInterpolation::kLinear,
                                           ResampleInterpolation::kCubic),
                         [](const ::testing::TestParamInfo<ResampleInterpolation>& param) {
                           return std::string(to_string(param.param));
                         });

TEST_P(ResampleTest, OnDeviceThroughOneAffineMatchesReference) {
  // Device-resident resampling (resample_on_device: one affine, several volumes back to back, buffers already on the
  // device) against the reference through the same affine, written as a world -> world transform.
  std::random_device seeds;
  const uint32_t seed = seeds();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  const ImageHeader in_grid = grid({16, 13, 11}, {2.0, 2.5, 3.0}, 0.3, Eigen::Vector3d(-16, -15, -14));
  const ImageHeader out_grid = grid({15, 17, 9}, {1.7, 1.9, 3.3}, -0.2, Eigen::Vector3d(-13, -14, -12));
  const Image input = random_image(in_grid, 3, seed);
  const Eigen::Matrix4d t = random_affine(rng, 1.0);  // out world -> in world
  const ResampleInterpolation interp = GetParam();
  const Image cpu = reference::resample(input, out_grid, {t}, interp, -7.0);
  Device& device = test::test_device();
  DeviceBuffer<float> in(device, input.data().size()), out(device, cpu.data().size());
  in.write(device.queue(), input.data());
  out.fill(device.queue(), 12345.0f);
  resample_on_device(device, in, in_grid.dims, out, out_grid.dims, in_grid.affine.inverse() * t * out_grid.affine, 3,
                     interp, -7.0f);
  const std::vector<float> dev = out.read_all(device.queue());
  int64_t inside = 0, mismatches = 0;
  for (size_t i = 0; i < cpu.data().size(); ++i) {
    if (cpu.data()[i] != -7.0f) ++inside;
    // Tolerance as for the chain test above (float positions; nearest and edge points may flip).
    if (std::abs(dev[i] - cpu.data()[i]) > 1e-4f) ++mismatches;
  }
  EXPECT_GT(inside, static_cast<int64_t>(cpu.data().size() / 4));
  EXPECT_LE(mismatches, static_cast<int64_t>(cpu.data().size() / 1000)) << "of " << cpu.data().size();
  EXPECT_THROW(resample_on_device(device, in, in_grid.dims, out, out_grid.dims, Eigen::Matrix4d::Zero(), 1, interp),
               std::invalid_argument);
  EXPECT_THROW(resample_on_device(device, in, in_grid.dims, out, out_grid.dims, Eigen::Matrix4d::Identity(), 4, interp),
               std::invalid_argument);
}

TEST(Resample, NearestNeverBlendsLabels) {
  const ImageHeader in_grid = grid({21, 19, 15}, {2.0, 2.0, 2.0}, 0.1, Eigen::Vector3d(-20, -18, -14));
  Image labels(in_grid);
  std::mt19937 rng(5);
  for (float& v : labels.data()) v = static_cast<float>(rng() % 7 * 10);  // labels 0, 10, ..., 60
  const ImageHeader out_grid = grid({23, 17, 13}, {1.3, 1.7, 2.1}, 0.5, Eigen::Vector3d(-15, -14, -13));
  Eigen::Matrix4d t = Eigen::Matrix4d::Identity();
  t.topRightCorner<3, 1>() = Eigen::Vector3d(0.37, -0.71, 0.23);
  const Image out = resample(test::test_device(), labels, out_grid, {t}, ResampleInterpolation::kNearest);
  const std::set<float> allowed{0, 10, 20, 30, 40, 50, 60};
  std::set<float> seen;
  for (float v : out.data()) {
    ASSERT_TRUE(allowed.count(v)) << v;
    seen.insert(v);
  }
  EXPECT_EQ(seen, allowed);
}

TEST(Resample, AxisFlippedCopyResamplesBackExactly) {
  // The same voxels stored with x reversed (and the affine saying so) are the same image in world space.
  const ImageHeader h = test::oblique_header({15, 12, 9});
  Image original(h, test::blobs(h, 11));
  ImageHeader flipped_header = h;
  Eigen::Matrix4d flip = Eigen::Matrix4d::Identity();
  flip(0, 0) = -1.0;
  flip(0, 3) = static_cast<double>(h.dims[0] - 1);
  flipped_header.affine = h.affine * flip;
  Image flipped(flipped_header);
  for (int64_t z = 0; z < h.dims[2]; ++z) {
    for (int64_t y = 0; y < h.dims[1]; ++y) {
      for (int64_t x = 0; x < h.dims[0]; ++x) flipped.at(h.dims[0] - 1 - x, y, z) = original.at(x, y, z);
    }
  }
  for (ResampleInterpolation interp :
       {ResampleInterpolation::kNearest, ResampleInterpolation::kLinear, ResampleInterpolation::kCubic}) {
    const Image back = resample(test::test_device(), flipped, h, {}, interp);
    for (size_t i = 0; i < back.data().size(); ++i) {
      ASSERT_NEAR(back.data()[i], original.data()[i], 1e-5f * (1.0f + std::abs(original.data()[i])))
          << to_string(interp) << " voxel " << i;
    }
  }
}

TEST(Resample, RejectsNonInvertibleAffines) {
  const ImageHeader h = test::oblique_header({6, 6, 6});
  Image image(h, 1.0f);
  Eigen::Matrix4d singular = Eigen::Matrix4d::Identity();
  singular(2, 2) = 0.0;
  EXPECT_THROW(resample(test::test_device(), image, h, {singular}, ResampleInterpolation::kLinear),
               std::invalid_argument);
  Image bad = image;
  bad.header().affine = singular;
  EXPECT_THROW(resample(test::test_device(), bad, h, {}, ResampleInterpolation::kLinear), std::invalid_argument);
  Eigen::Matrix4d nan = Eigen::Matrix4d::Identity();
  nan(0, 3) = std::nan("");
  EXPECT_THROW(resample(test::test_device(), image, h, {nan}, ResampleInterpolation::kLinear), std::invalid_argument);
}

TEST(Resample, ParsesInterpolationNames) {
  EXPECT_EQ(parse_resample_interpolation("nearest"), ResampleInterpolation::kNearest);
  EXPECT_EQ(parse_resample_interpolation("linear"), ResampleInterpolation::kLinear);
  EXPECT_EQ(parse_resample_interpolation("cubic"), ResampleInterpolation::kCubic);
  EXPECT_FALSE(parse_resample_interpolation("sinc").has_value());
}

}  // namespace
}  // namespace rtf
