// The warp phantom: Gaussian-bump velocity field, its exponentials on the device, the subject image.
#include "sim/warp_phantom.hpp"

#include <Eigen/Geometry>
#include <Eigen/LU>
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <stdexcept>

#include "core/device/buffer.hpp"
#include "core/registration/deformation_ops.hpp"
#include "core/registration/point_sampling.hpp"
#include "core/registration/resample.hpp"
#include "sim/phantom/random.hpp"

namespace rtf::sim {

namespace {

constexpr uint64_t kStreamWarp = 11;

}  // namespace

std::vector<SpatialTransform> WarpPhantom::subject_to_template() const {
  return {Eigen::Matrix4d(affine.inverse()), inverse_warp};
}

Eigen::Matrix4d affine_about(const Eigen::Vector3d& centre, double angle_rad, const Eigen::Vector3d& axis,
                             const Eigen::Vector3d& scales, const Eigen::Vector3d& translation_mm) {
  Eigen::Matrix4d m = Eigen::Matrix4d::Identity();
  m.topLeftCorner<3, 3>() = Eigen::AngleAxisd(angle_rad, axis.normalized()).toRotationMatrix() * scales.asDiagonal();
  m.topRightCorner<3, 1>() = centre + translation_mm - m.topLeftCorner<3, 3>() * centre;
  return m;
}

WarpPhantom make_warp_phantom(Device& device, const Image& template_image, const WarpPhantomSpec& spec) {
  if (!(spec.max_displacement_mm > 0.0) || !(spec.bump_sigma_mm > 0.0) || spec.bumps < 1) {
    throw std::invalid_argument("warp phantom: displacement, sigma and bumps must be positive");
  }
  const ImageHeader& g = template_image.header();
  const auto n = static_cast<size_t>(g.voxels_per_volume());
  std::vector<size_t> brain;
  for (size_t i = 0; i < n; ++i) {
    if (template_image.data()[i] > 0.0f) brain.push_back(i);
  }
  if (brain.empty()) throw std::invalid_argument("warp phantom: the template has no voxel > 0");
  const auto voxel_world = [&](size_t i) {
    const auto nx = static_cast<size_t>(g.dims[0]), ny = static_cast<size_t>(g.dims[1]);
    const Eigen::Vector4d v(static_cast<double>(i % nx), static_cast<double>((i / nx) % ny),
                            static_cast<double>(i / (nx * ny)), 1.0);
    return Eigen::Vector3d((g.affine * v).head<3>());
  };
  // Velocity in world mm: a sum of Gaussian bumps with random vector amplitudes.
  Rng rng(spec.seed, kStreamWarp);
  std::vector<Eigen::Vector3d> centres, amplitudes;
  for (int b = 0; b < spec.bumps; ++b) {
    centres.push_back(voxel_world(brain[static_cast<size_t>(rng.uniform() * static_cast<double>(brain.size()))]));
    amplitudes.emplace_back(rng.normal(), rng.normal(), rng.normal());
  }
  const double inv2s2 = 1.0 / (2.0 * spec.bump_sigma_mm * spec.bump_sigma_mm);
  const double reach2 = 16.0 * spec.bump_sigma_mm * spec.bump_sigma_mm;  // bumps are cut at 4 sigma
  std::vector<Eigen::Vector3d> velocity(n, Eigen::Vector3d::Zero());
  double largest = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const Eigen::Vector3d x = voxel_world(i);
    for (size_t b = 0; b < centres.size(); ++b) {
      const double d2 = (x - centres[b]).squaredNorm();
      if (d2 < reach2) velocity[i] += std::exp(-d2 * inv2s2) * amplitudes[b];
    }
    largest = std::max(largest, velocity[i].norm());
  }
  // Scaled to the largest displacement, in the template's voxel units for the device's exponential.
  const Eigen::Matrix3d to_voxels = g.affine.topLeftCorner<3, 3>().inverse();
  const double scale = spec.max_displacement_mm / largest;
  std::vector<float> v(3 * n), minus(3 * n);
  double largest_voxels = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const Eigen::Vector3d w = to_voxels * (scale * velocity[i]);
    largest_voxels = std::max(largest_voxels, w.norm());
    for (size_t c = 0; c < 3; ++c) {
      v[c * n + i] = static_cast<float>(w[static_cast<int>(c)]);
      minus[c * n + i] = -v[c * n + i];
    }
  }
  DeformationOps ops(device, g.dims);
  cl_command_queue q = device.queue();
  DeviceBuffer<float> dv(device, 3 * n), u(device, 3 * n), scratch(device, 3 * n);
  const int squarings = DeformationOps::squarings_for(largest_voxels) + 3;  // fine steps: an accurate truth
  const Eigen::Matrix3d to_world = g.affine.topLeftCorner<3, 3>();
  WarpPhantom out;
  out.affine = spec.affine;
  for (int direction = 0; direction < 2; ++direction) {
    dv.write(q, direction == 0 ? v : minus);
    ops.exponential(dv, u, scratch, squarings);
    ops.transform_vectors(u, u, to_world);
    auto field = std::make_shared<const Image>(displacement_field_image(g, u.read_all(q)));
    (direction == 0 ? out.warp : out.inverse_warp) = std::move(field);
  }
  // Cubic: the subject should look acquired, not blurred by a linear interpolation on its oblique grid.
  out.subject =
      resample(device, template_image, spec.subject_grid, out.subject_to_template(), ResampleInterpolation::kCubic);
  out.subject.header().description = "rtfmri warp phantom";
  return out;
}

WarpPhantomSpec standard_warp_phantom(const ImageHeader& g, double max_displacement_mm, uint64_t seed) {
  const Eigen::Vector3d centre =
      (g.affine * Eigen::Vector4d(0.5 * static_cast<double>(g.dims[0] - 1), 0.5 * static_cast<double>(g.dims[1] - 1),
                                  0.5 * static_cast<double>(g.dims[2] - 1), 1.0))
          .head<3>();
  WarpPhantomSpec spec;
  spec.max_displacement_mm = max_displacement_mm;
  spec.seed = seed;
  spec.affine = affine_about(centre, 0.12, Eigen::Vector3d(0.3, -0.8, 0.5), Eigen::Vector3d(1.08, 0.95, 1.04),
                             Eigen::Vector3d(6.0, -9.0, 4.0));
  // Voxels 10% larger about the grid's centre, x reversed.
  Eigen::Matrix4d voxels = Eigen::Matrix4d::Identity();
  for (int a = 0; a < 3; ++a) {
    voxels(a, a) = 1.1;
    voxels(a, 3) = -0.05 * static_cast<double>(g.dims[static_cast<size_t>(a)] - 1);
  }
  voxels(0, 0) = -1.1;
  voxels(0, 3) = 1.05 * static_cast<double>(g.dims[0] - 1);
  const Eigen::Vector3d moved_centre = (spec.affine * centre.homogeneous()).head<3>();
  const Eigen::Matrix4d tilt = affine_about(moved_centre, 0.14, Eigen::Vector3d(1.0, 0.2, 0.0), Eigen::Vector3d::Ones(),
                                            Eigen::Vector3d::Zero());
  spec.subject_grid = g;
  spec.subject_grid.num_volumes = 1;
  spec.subject_grid.affine = tilt * spec.affine * g.affine * voxels;
  for (int a = 0; a < 3; ++a) {
    spec.subject_grid.voxel_mm[static_cast<size_t>(a)] = spec.subject_grid.affine.block<3, 1>(0, a).norm();
  }
  return spec;
}

std::vector<double> disagreement_in_brain(const Image& template_image, const std::vector<SpatialTransform>& a,
                                          const std::vector<SpatialTransform>& b, int step) {
  const auto through = [](const std::vector<SpatialTransform>& chain, Eigen::Vector3d p) {
    for (const auto& t : chain) p = transform_point(t, p);
    return p;
  };
  std::vector<double> out;
  const ImageHeader& g = template_image.header();
  for (int64_t z = 0; z < g.dims[2]; z += step) {
    for (int64_t y = 0; y < g.dims[1]; y += step) {
      for (int64_t x = 0; x < g.dims[0]; x += step) {
        if (!(template_image.at(x, y, z) > 0.0f)) continue;
        const Eigen::Vector3d p =
            (g.affine * Eigen::Vector4d(static_cast<double>(x), static_cast<double>(y), static_cast<double>(z), 1.0))
                .head<3>();
        out.push_back((through(a, p) - through(b, p)).norm());
      }
    }
  }
  return out;
}

std::pair<double, double> label_dice(const Image& truth, const Image& estimate) {
  std::map<int64_t, std::array<int64_t, 3>> counts;  // label -> truth, estimate, both
  for (size_t i = 0; i < truth.data().size() && i < estimate.data().size(); ++i) {
    const int64_t a = std::llround(truth.data()[i]), b = std::llround(estimate.data()[i]);
    if (a != 0) ++counts[a][0];
    if (b != 0) ++counts[b][1];
    if (a != 0 && a == b) ++counts[a][2];
  }
  double sum = 0.0, smallest = 1.0;
  int used = 0;
  for (const auto& [label, c] : counts) {
    if (c[0] < 10) continue;
    const double d = 2.0 * static_cast<double>(c[2]) / static_cast<double>(c[0] + c[1]);
    sum += d;
    smallest = std::min(smallest, d);
    ++used;
  }
  return {used > 0 ? sum / used : 0.0, used > 0 ? smallest : 0.0};
}

}  // namespace rtf::sim
