// ctest-label: gpu
// Normal and gamma draws from Philox streams: the device (kernels/random_draws.clh) against the host twin
// (core/random/draws.hpp) draw for draw — normals within 1e-5, gammas within 1e-4 relative wherever the host's
// acceptance decisions are not within 1e-3 of their bound (float and double may decide otherwise only there; such draws
// are counted, at most 1%) — and both against the exact distributions by Kolmogorov–Smirnov (Boost.Math's CDFs;
// fixed seeds, so the statistics are the same on every run; critical value at alpha = 0.001: 1.95 / sqrt(n)).
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/math/distributions/gamma.hpp>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <functional>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/launch.hpp"
#include "core/random/draws.hpp"
#include "tests/support/ks_statistic.hpp"
#include "tests/support/test_device.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

constexpr double kShapes[] = {0.3, 0.9, 1.0, 2.5, 17.3, 250.0};

struct DeviceDraws {
  std::vector<float> normals, gammas;  // normals: 2 per voxel
};

DeviceDraws device_draws(uint64_t seed, uint32_t chain, uint32_t step, uint32_t slot,
                         const std::vector<float>& shapes) {
  Device& device = test::test_device();
  const cl_command_queue q = device.queue();
  const int n = static_cast<int>(shapes.size());
  DeviceBuffer<float> normals(device, 2 * shapes.size()), shape_buffer(device, shapes.size()),
      gammas(device, shapes.size());
  shape_buffer.write(q, shapes);
  ClKernel kernel = device.kernel("random_draws.cl", "random_draws", {});
  const random::PhiloxKey key = random::seed_key(seed);
  set_args(kernel, key[0], key[1], chain, step, slot, n, normals, shape_buffer, gammas);
  launch<1>(q, kernel, {static_cast<size_t>((n + 63) / 64 * 64)}, {64}, {}, EventMode::kNone);
  return {normals.read_all(q), gammas.read_all(q)};
}

TEST(RandomDraws, DeviceEqualsHostTwin) {
  const uint64_t seed = test::test_seed();
  const int n = 4001;
  std::vector<float> shapes(n);
  for (int g = 0; g < n; ++g) shapes[static_cast<size_t>(g)] = static_cast<float>(kShapes[g % 6]);
  const DeviceDraws d = device_draws(seed, 3, 17, 5, shapes);
  int close_calls = 0;
  double worst_normal = 0, worst_gamma = 0;
  for (int g = 0; g < n; ++g) {
    const auto at = static_cast<size_t>(g);
    const random::StreamPoint point{random::seed_key(seed), static_cast<uint32_t>(g), 3, 17};
    const auto z = random::normal_pair(point, 5);
    for (size_t k = 0; k < 2; ++k) {
      worst_normal = std::max(worst_normal, std::abs(d.normals[2 * at + k] - z[k]));
      ASSERT_NEAR(d.normals[2 * at + k], z[k], 1e-5) << "voxel " << g;
    }
    double margin = 0;
    const double x = random::gamma_draw(point, 6, static_cast<double>(shapes[at]), nullptr, &margin);
    if (margin < 1e-3) {
      ++close_calls;
      continue;
    }
    worst_gamma = std::max(worst_gamma, std::abs(d.gammas[at] - x) / x);
    ASSERT_NEAR(d.gammas[at], x, 1e-4 * x) << "voxel " << g << " shape " << shapes[at];
  }
  std::cout << "worst |normal - host| " << worst_normal << ", worst gamma relative " << worst_gamma << ", "
            << close_calls << " gamma draws with a decision within 1e-3 of its bound\n";
  EXPECT_LE(close_calls, n / 100);
}

TEST(RandomDraws, HostTwinFollowsTheDistributions) {
  const int n = 100000;
  const double critical = 1.95 / std::sqrt(static_cast<double>(n));
  std::vector<double> normals, gammas;
  for (int g = 0; g < n / 2; ++g) {
    const auto z = random::normal_pair({random::seed_key(2026), static_cast<uint32_t>(g), 0, 0}, 0);
    normals.insert(normals.end(), z.begin(), z.end());
  }
  const boost::math::normal_distribution<double> standard;
  const double d_normal = test::ks_statistic(normals, [&](double x) { return boost::math::cdf(standard, x); });
  EXPECT_LT(d_normal, critical);
  for (const double shape : kShapes) {
    gammas.clear();
    int attempts = 0, most = 0;
    for (int g = 0; g < n; ++g) {
      gammas.push_back(random::gamma_draw({random::seed_key(7), static_cast<uint32_t>(g), 1, 2}, 9, shape, &attempts));
      most = std::max(most, attempts);
    }
    const boost::math::gamma_distribution<double> law(shape, 1.0);
    const double d_gamma = test::ks_statistic(gammas, [&](double x) { return boost::math::cdf(law, x); });
    std::cout << "shape " << shape << ": KS " << d_gamma << " (critical " << critical << "), at most " << most
              << " attempts\n";
    EXPECT_LT(d_gamma, critical) << "shape " << shape;
  }
  std::cout << "normal KS " << d_normal << "\n";
}

TEST(RandomDraws, DeviceDrawsFollowTheDistributions) {
  const int n = 20011;
  const double critical = 1.95 / std::sqrt(static_cast<double>(n));
  const DeviceDraws d = device_draws(99, 0, 4, 0, std::vector<float>(n, 2.5f));
  const boost::math::normal_distribution<double> standard;
  const boost::math::gamma_distribution<double> law(2.5, 1.0);
  EXPECT_LT(
      test::ks_statistic({d.normals.begin(), d.normals.end()}, [&](double x) { return boost::math::cdf(standard, x); }),
      1.95 / std::sqrt(2.0 * n));
  EXPECT_LT(test::ks_statistic({d.gammas.begin(), d.gammas.end()}, [&](double x) { return boost::math::cdf(law, x); }),
            critical);
}

}  // namespace
}  // namespace rtf
