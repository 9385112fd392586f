// The phantom's geometry and signal model on a synthetic template (no installed data needed): a one-voxel
// translation shifts the volume by exactly one voxel in the documented direction, a 90-degree rotation turns it
// the documented way, volume 0 is unmoved, the activation follows the regressor with the ground-truth percent signal
// change (also with slice timing), and the same seed gives the same phantom for any thread count.
// ctest-label: unit
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "sim/phantom/phantom.hpp"
#include "tests/sim/phantom_fixtures.hpp"

namespace rtf::sim {
namespace {

const Image& t1() {
  static const Image image = test::synthetic_t1();
  return image;
}

PhantomSpec noise_free(std::vector<RigidParams> motion) {
  PhantomSpec s = test::small_spec();
  s.tsnr = 0;
  s.drift_percent = 0;
  s.psc = 0;
  s.volumes = static_cast<int64_t>(motion.size());
  s.motion_override = std::move(motion);
  return s;
}

double max_value(const Image& img) {
  double m = 0;
  for (float v : img.data()) m = std::max(m, static_cast<double>(v));
  return m;
}

TEST(PhantomGeometry, OneVoxelTranslationShiftsByOneVoxel) {
  // Head moved by +1 voxel (6 mm) along x, -1 along y, +1 along z: what was at voxel i is now at i + shift.
  const std::vector<RigidParams> motion{{}, {{6, 0, 0}, {}}, {{0, -6, 0}, {}}, {{0, 0, 6}, {}}};
  const std::array<std::array<int64_t, 3>, 4> shift{{{0, 0, 0}, {1, 0, 0}, {0, -1, 0}, {0, 0, 1}}};
  const PhantomResult r = make_phantom(noise_free(motion), t1());
  const Image& b = r.bold;
  const double scale = max_value(b);
  ASSERT_GT(scale, 1000.0);
  int64_t compared = 0, nonzero = 0;
  for (size_t t = 1; t < motion.size(); ++t) {
    double worst = 0;
    const auto& d = shift[t];
    for (int64_t z = 1; z < b.nz() - 1; ++z) {
      for (int64_t y = 1; y < b.ny() - 1; ++y) {
        for (int64_t x = 1; x < b.nx() - 1; ++x) {
          const float moved = b.at(x, y, z, static_cast<int64_t>(t));
          const float before = b.at(x - d[0], y - d[1], z - d[2], 0);
          worst = std::max(worst, static_cast<double>(std::abs(moved - before)));
          ++compared;
          nonzero += before > 0;
        }
      }
    }
    EXPECT_LT(worst, 1e-5 * scale) << "volume " << t;
  }
  EXPECT_GT(nonzero, compared / 10);
}

TEST(PhantomGeometry, NinetyDegreesAboutZTurnsXTowardsY) {
  PhantomSpec s = noise_free({{}, {{0, 0, 0}, {0, 0, 90}}});
  s.grid = {28, 28, 17};  // square in x-y: a quarter turn about the grid centre maps voxels onto voxels
  const PhantomResult r = make_phantom(s, t1());
  const Image& b = r.bold;
  const int64_t n = b.nx();
  double worst = 0;
  int64_t nonzero = 0;
  for (int64_t z = 0; z < b.nz(); ++z) {
    for (int64_t y = 0; y < n; ++y) {
      for (int64_t x = 0; x < n; ++x) {
        // Offset (dx, dy) from the centre goes to (-dy, dx): voxel (x, y) -> (n - 1 - y, x).
        const float before = b.at(x, y, z, 0);
        const float after = b.at(n - 1 - y, x, z, 1);
        worst = std::max(worst, static_cast<double>(std::abs(after - before)));
        nonzero += before > 0;
      }
    }
  }
  EXPECT_GT(nonzero, 500);
  EXPECT_LT(worst, 1e-5 * max_value(b));
}

TEST(PhantomGeometry, VolumeZeroIsUnmovedWhateverTheMotion) {
  PhantomSpec moving = test::small_spec();
  moving.tsnr = 0;
  moving.drift_percent = 0;
  PhantomSpec still = moving;
  still.motion = MotionKind::kNone;
  const PhantomResult a = make_phantom(moving, t1());
  const PhantomResult b = make_phantom(still, t1());
  const auto v0a = a.bold.volume(0), v0b = b.bold.volume(0);
  ASSERT_EQ(std::memcmp(v0a.data(), v0b.data(), v0a.size_bytes()), 0);
  // The moving phantom does move later on.
  const auto v9a = a.bold.volume(9), v9b = b.bold.volume(9);
  EXPECT_NE(std::memcmp(v9a.data(), v9b.data(), v9a.size_bytes()), 0);
}

TEST(PhantomGeometry, ActivationFollowsTheRegressorWithTheTruePsc) {
  for (const char* order : {"none", "interleaved"}) {
    PhantomSpec s = test::small_spec();
    s.motion = MotionKind::kNone;
    s.tsnr = 0;
    s.drift_percent = 0;
    s.slice_order = order;
    s.regions = {ActivationRegion{{0.0, -10.0, 30.0}, 14.0, "", 3.0}};  // upper part of the synthetic brain
    const PhantomResult r = make_phantom(s, t1());
    const int64_t nv = r.grid.voxels();
    int64_t active = 0;
    double worst = 0;
    for (int64_t v = 0; v < nv; ++v) {
      const float psc = r.activation_psc.data()[static_cast<size_t>(v)];
      const float base = r.bold.data()[static_cast<size_t>(v)];
      if (base <= 0) continue;
      const int64_t z = v / (r.grid.dims[0] * r.grid.dims[1]);
      for (int64_t t = 0; t < r.bold.nt(); ++t) {
        const double time = static_cast<double>(t) * s.tr_s + r.slice_times_s[static_cast<size_t>(z)];
        const double expected = base * (1.0 + psc / 100.0 * r.design.value(0, time));
        worst = std::max(worst, std::abs(r.bold.data()[static_cast<size_t>(t * nv + v)] - expected) / base);
      }
      active += psc > 0;
    }
    EXPECT_GT(active, 10) << order;
    EXPECT_LT(worst, 1e-5) << order;
    // Ground truth: the mask is where the activated fraction reaches the threshold, inside the brain.
    for (int64_t v = 0; v < nv; ++v) {
      const auto i = static_cast<size_t>(v);
      EXPECT_EQ(r.activation_mask.data()[i] > 0, r.activation_fraction.data()[i] >= s.activation_mask_threshold);
      if (r.activation_mask.data()[i] > 0) {
        EXPECT_GT(r.brain_mask.data()[i], 0);
      }
      // No activation outside grey matter.
      if (r.tissue_fractions.data()[static_cast<size_t>(kGm * nv + v)] == 0.0f) {
        EXPECT_EQ(r.activation_psc.data()[i], 0.0f);
      }
    }
  }
}

TEST(PhantomGeometry, SameSeedSamePhantomForAnyThreadCount) {
  PhantomSpec s = test::small_spec();
  s.threads = 1;
  const PhantomResult one = make_phantom(s, t1());
  s.threads = 3;
  const PhantomResult three = make_phantom(s, t1());
  ASSERT_EQ(one.bold.data().size(), three.bold.data().size());
  EXPECT_EQ(std::memcmp(one.bold.data().data(), three.bold.data().data(), one.bold.data().size() * sizeof(float)), 0);
  s.seed += 1;
  const PhantomResult other = make_phantom(s, t1());
  EXPECT_NE(std::memcmp(one.bold.data().data(), other.bold.data().data(), one.bold.data().size() * sizeof(float)), 0);
  // Rician magnitude: the background is positive noise, not zero.
  EXPECT_GT(one.bold.data()[0], 0.0f);
}

}  // namespace
}  // namespace rtf::sim
