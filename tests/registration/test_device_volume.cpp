// ctest-label: gpu
// DeviceVolume (core/registration/device_volume.hpp, kernels/volume_range.cl) against host computations on odd grids
// with fresh random data: non-finite voxels set to 0 and counted, the finite mask, the range (whole and inside a
// mask), and the intensity centre of mass against the host's centre_of_mass_alignment.
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <cmath>
#include <limits>
#include <random>

#include "core/registration/device_volume.hpp"
#include "core/registration/linear_registration.hpp"
#include "tests/support/registration_fixtures.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

TEST(DeviceVolume, MatchesTheHostOnRandomDataWithNonFiniteVoxels) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-20.0f, 100.0f);
  const ImageHeader g =
      test::centred_grid({23, 17, 13}, {1.5, 2.0, 2.5}, test::rotation_about(0.4, {1, -1, 2}), {3.0, -4.0, 5.0});
  Image image(g);
  for (float& v : image.data()) v = u(rng);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  image.data()[5] = nan;
  image.data()[100] = inf;
  image.data()[2000] = -inf;
  Device& device = test::test_device();
  const auto volume = DeviceVolume::upload(device, image);
  EXPECT_EQ(volume->non_finite, 3);
  ASSERT_TRUE(volume->finite.has_value());
  const std::vector<uint8_t> finite = volume->finite->read_all(device.queue());
  const std::vector<float> data = volume->data.read_all(device.queue());
  float lo = INFINITY, hi = -INFINITY, lo_in = INFINITY, hi_in = -INFINITY;
  std::vector<uint8_t> mask(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    const float x = image.data()[i];
    mask[i] = static_cast<uint8_t>(i % 3 == 0);
    if (!std::isfinite(x)) {
      EXPECT_EQ(data[i], 0.0f);
      EXPECT_EQ(finite[i], 0);
      continue;
    }
    EXPECT_EQ(data[i], x);
    EXPECT_EQ(finite[i], 1);
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    if (mask[i]) {
      lo_in = std::min(lo_in, x);
      hi_in = std::max(hi_in, x);
    }
  }
  EXPECT_EQ(volume->lo, lo);  // minima and maxima of floats are exact
  EXPECT_EQ(volume->hi, hi);
  DeviceBuffer<uint8_t> dmask(device, mask.size());
  dmask.write(device.queue(), mask);
  const auto [mlo, mhi] = volume->range_inside(device, dmask);
  EXPECT_EQ(mlo, lo_in);
  EXPECT_EQ(mhi, hi_in);
  // The centre of mass of the positive voxels: the device's float partial sums against the host's double sums
  // (through the alignment of the image with itself moved by a known translation). Tolerance: 1e-3 mm, float sums of
  // ~5,000 values per partial relative 1e-6 of a ~20 mm lever.
  ASSERT_TRUE(volume->centre_of_mass.has_value());
  Image moved = image;
  moved.header().affine.topRightCorner<3, 1>() += Eigen::Vector3d(7.0, -2.0, 1.5);
  const Eigen::Matrix4d host = centre_of_mass_alignment(image, moved);
  const Eigen::Matrix4d dev = centre_of_mass_alignment(*volume, *DeviceVolume::upload(device, moved));
  EXPECT_LT((host - dev).cwiseAbs().maxCoeff(), 1e-3);
  EXPECT_LT((dev.topRightCorner<3, 1>() - Eigen::Vector3d(7.0, -2.0, 1.5)).norm(), 1e-3);
}

TEST(DeviceVolume, AllFiniteNeedsNoMaskAndAnEmptyImageHasNoCentre) {
  ImageHeader g;
  g.dims = {9, 8, 7};
  Image zeros(g, 0.0f);
  const auto volume = DeviceVolume::upload(test::test_device(), zeros);
  EXPECT_EQ(volume->non_finite, 0);
  EXPECT_FALSE(volume->finite.has_value());
  EXPECT_FALSE(volume->centre_of_mass.has_value());
  EXPECT_EQ(volume->lo, 0.0f);
  EXPECT_EQ(volume->hi, 0.0f);
}

}  // namespace
}  // namespace rtf
