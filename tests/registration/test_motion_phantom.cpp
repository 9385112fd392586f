// ctest-label: gpu
// Motion-correction accuracy on the phantom (issue 4): Colin27-based BOLD on a 64x64x33 grid at 3 mm with a known
// rigid trajectory (translations up to +-3 mm, rotations up to +-3 degrees per axis), physiological and thermal noise
// at tSNR 80 and 50, drift and activation; each volume registered to volume 0 must give the known parameters with an
// RMS error per parameter below 0.05 mm and 0.05 degrees. Also with a shading gradient fixed in scanner space (a
// receive-coil profile, 10% per 100 mm), which the moving head sees differently in every volume.
// Design of the test: docs/algorithms/motion_correction.md.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/registration/rigid_registration.hpp"
#include "sim/phantom/phantom.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

struct Errors {
  std::array<double, 6> rms{};
  int not_converged = 0;
};

Errors register_phantom(double tsnr, bool shading, uint64_t seed) {
  const auto template_path = test::installed_data("mricron/ch2bet.nii.gz");
  sim::PhantomSpec spec;
  spec.template_path = *template_path;
  spec.volumes = 12;
  spec.tsnr = tsnr;
  spec.seed = seed;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-3.0, 3.0);
  spec.motion_override.push_back({});
  for (int64_t t = 1; t < spec.volumes; ++t) {
    spec.motion_override.push_back({{u(rng), u(rng), u(rng)}, {u(rng), u(rng), u(rng)}});
  }
  sim::PhantomResult ph = sim::make_phantom(spec);
  if (shading) {
    const ImageHeader& h = ph.bold.header();
    for (int64_t t = 0; t < ph.bold.nt(); ++t) {
      for (int64_t z = 0; z < h.dims[2]; ++z) {
        for (int64_t y = 0; y < h.dims[1]; ++y) {
          for (int64_t x = 0; x < h.dims[0]; ++x) {
            const Eigen::Vector4d w = h.affine * Eigen::Vector4d(double(x), double(y), double(z), 1.0);
            ph.bold.at(x, y, z, t) *= static_cast<float>(1.0 + 0.1 * (w.x() + 0.5 * w.y() - 0.3 * w.z()) / 100.0);
          }
        }
      }
    }
  }
  RigidRegistration reg(test::test_device(), ph.bold.header());
  reg.set_reference(ph.bold.volume(0));
  Errors e;
  Eigen::Matrix4d estimate = Eigen::Matrix4d::Identity();
  for (int64_t t = 1; t < ph.bold.nt(); ++t) {
    const RegistrationResult r = reg.register_volume(ph.bold.volume(t), estimate);
    if (!r.converged) ++e.not_converged;
    const RigidParams got = rigid_params(r.transform, ph.grid.centre_mm);
    const RigidParams& truth = ph.motion[static_cast<size_t>(t)];
    for (size_t a = 0; a < 3; ++a) {
      e.rms[a] += std::pow(got.translation_mm[a] - truth.translation_mm[a], 2);
      e.rms[3 + a] += std::pow(got.rotation_deg[a] - truth.rotation_deg[a], 2);
    }
  }
  for (double& v : e.rms) v = std::sqrt(v / static_cast<double>(ph.bold.nt() - 1));
  std::printf("tSNR %.0f%s: RMS error tx ty tz %.4f %.4f %.4f mm, rx ry rz %.4f %.4f %.4f deg; %d not converged\n",
              tsnr, shading ? " + shading" : "", e.rms[0], e.rms[1], e.rms[2], e.rms[3], e.rms[4], e.rms[5],
              e.not_converged);
  return e;
}

void expect_within_bounds(const Errors& e) {
  for (size_t a = 0; a < 3; ++a) {
    EXPECT_LT(e.rms[a], 0.05) << "translation axis " << a;
    EXPECT_LT(e.rms[3 + a], 0.05) << "rotation axis " << a;
  }
  EXPECT_EQ(e.not_converged, 0);
}

TEST(MotionPhantom, RecoversKnownMotionAtTsnr80) {
  if (!test::installed_data("mricron/ch2bet.nii.gz"))
    GTEST_SKIP() << test::missing_installed_data("mricron/ch2bet.nii.gz");
  expect_within_bounds(register_phantom(80.0, false, 21));
}

TEST(MotionPhantom, RecoversKnownMotionAtTsnr50WithShading) {
  if (!test::installed_data("mricron/ch2bet.nii.gz"))
    GTEST_SKIP() << test::missing_installed_data("mricron/ch2bet.nii.gz");
  expect_within_bounds(register_phantom(50.0, true, 22));
}

}  // namespace
}  // namespace rtf
