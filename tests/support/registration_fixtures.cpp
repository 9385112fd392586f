// Registration test helpers: see registration_fixtures.hpp.
#include "tests/support/registration_fixtures.hpp"

#include <Eigen/Geometry>
#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <random>

#include "core/io/nifti_io.hpp"
#include "core/registration/resample.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/synthetic_volumes.hpp"
#include "tests/support/test_device.hpp"

namespace rtf::test {

ImageHeader centred_grid(std::array<int64_t, 3> dims, std::array<double, 3> voxel_mm, const Eigen::Matrix3d& rotation,
                         const Eigen::Vector3d& centre) {
  ImageHeader h;
  h.dims = dims;
  h.voxel_mm = voxel_mm;
  h.affine.topLeftCorner<3, 3>() = rotation * Eigen::Vector3d(voxel_mm[0], voxel_mm[1], voxel_mm[2]).asDiagonal();
  const Eigen::Vector3d mid(0.5 * static_cast<double>(dims[0] - 1), 0.5 * static_cast<double>(dims[1] - 1),
                            0.5 * static_cast<double>(dims[2] - 1));
  h.affine.topRightCorner<3, 1>() = centre - h.affine.topLeftCorner<3, 3>() * mid;
  return h;
}

Eigen::Matrix3d rotation_about(double angle_rad, const Eigen::Vector3d& axis) {
  return Eigen::AngleAxisd(angle_rad, axis.normalized()).toRotationMatrix();
}

std::pair<double, double> errors_in_brain(const Image& image, const Eigen::Matrix4d& truth,
                                          const Eigen::Matrix4d& estimate) {
  double worst = 0.0, sum = 0.0;
  int64_t n = 0;
  for (int64_t z = 0; z < image.nz(); ++z) {
    for (int64_t y = 0; y < image.ny(); ++y) {
      for (int64_t x = 0; x < image.nx(); ++x) {
        if (!(image.at(x, y, z) > 0.0f)) continue;
        const Eigen::Vector4d world =
            image.header().affine *
            Eigen::Vector4d(static_cast<double>(x), static_cast<double>(y), static_cast<double>(z), 1.0);
        const double e = ((truth - estimate) * world).head<3>().norm();
        worst = std::max(worst, e);
        sum += e;
        ++n;
      }
    }
  }
  return {worst, n > 0 ? sum / static_cast<double>(n) : 0.0};
}

BlobPair blob_pair(uint32_t seed) {
  const ImageHeader fixed_grid = oblique_header({25, 21, 17});
  const ImageHeader moving_grid =
      centred_grid({23, 27, 15}, {2.5, 2.0, 3.5}, rotation_about(-0.3, {1, 2, -1}), {1.0, -2.0, 0.5});
  Eigen::Matrix4d truth = Eigen::Matrix4d::Identity();
  truth.topLeftCorner<3, 3>() = rotation_about(0.05, {0, 1, 1});
  truth.topRightCorner<3, 1>() = Eigen::Vector3d(1.5, -0.8, 0.6);
  BlobPair pair{Image(fixed_grid, blobs(fixed_grid, seed)), Image(moving_grid, blobs(moving_grid, seed, truth)), {}};
  for (float& v : pair.moving.data()) v = std::sqrt(std::max(v, 0.0f));  // a non-linear intensity relation
  pair.mask.resize(pair.fixed.data().size());
  std::mt19937 rng(seed + 1);
  for (auto& m : pair.mask) m = static_cast<uint8_t>(rng() % 4 != 0);
  return pair;
}

Eigen::Matrix4d perturbed_estimate() {
  Eigen::Matrix4d t = Eigen::Matrix4d::Identity();
  t.topLeftCorner<3, 3>() = rotation_about(0.03, {1, 0, 1}) * Eigen::Vector3d(1.02, 0.99, 1.01).asDiagonal();
  t.topRightCorner<3, 1>() = Eigen::Vector3d(1.0, -0.5, 0.2);
  return t;
}

CrossModalPair cross_modal_pair(const Eigen::Matrix4d& truth) {
  const auto path = installed_data("mricron/ch2bet.nii.gz");
  if (!path) return {};
  const Image colin = read_nifti(*path);
  const Eigen::Vector3d centre(0.0, -18.0, 18.0);
  const ImageHeader fixed_grid = centred_grid({91, 109, 91}, {2.0, 2.0, 2.0}, Eigen::Matrix3d::Identity(), centre);
  Eigen::Matrix3d flipped = rotation_about(0.3, {1, 1, -2});
  flipped.col(0) *= -1.0;
  const ImageHeader moving_grid =
      centred_grid({64, 72, 56}, {3.0, 3.0, 3.0}, flipped, centre + Eigen::Vector3d(-3, 5, 2));
  CrossModalPair pair;
  pair.fixed = resample(test_device(), colin, fixed_grid, {}, ResampleInterpolation::kLinear);
  pair.moving =
      resample(test_device(), colin, moving_grid, {Eigen::Matrix4d(truth.inverse())}, ResampleInterpolation::kLinear);
  float top = 0.0f;
  for (float v : pair.moving.data()) top = std::max(top, v);
  for (float& v : pair.moving.data()) v = v > 0.02f * top ? 1.2f * top - v : 0.0f;  // bright CSF, dark WM, 0 outside
  return pair;
}

}  // namespace rtf::test
