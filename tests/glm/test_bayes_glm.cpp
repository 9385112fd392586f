// ctest-label: gpu
// The device's Gibbs chains (core/glm/bayes_glm.hpp, kernels/bayes_glm.cl) against the double reference
// (core/reference/bayes_glm_reference.hpp) draw for draw: the same seed, voxel and chain give every step's beta,
// sigma^2 and rho within 1e-5 of the chain's own spread of that quantity (both in double on the same Philox words; the
// device takes the residual sums as quadratics in beta, the reference from the residuals), on odd sizes (37 voxels, 61
// volumes, P = 1, 3, 5, two chains, AR(1) noise from rho -0.3 to 0.6, a large offset as BOLD has; chains whose rho
// nears 1 leave the intercept nearly unidentified and amplify the double functions' last-bit differences step by step,
// so the data stop at 0.6). Bad input is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/glm/bayes_glm.hpp"
#include "core/reference/bayes_glm_reference.hpp"
#include "tests/support/test_device.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

Eigen::MatrixXd design_of(int t, int p) {
  Eigen::MatrixXd x(t, p);
  for (int k = 0; k < t; ++k) {
    for (int j = 0; j < p; ++j) {
      x(k, j) = j == 0 ? 1.0 : std::sin(0.05 * (j + 1) * k + j) + ((k / (7 + j)) % 2 == 0 ? 0.5 : 0.0);
    }
  }
  return x;
}

TEST(BayesGlm, DeviceChainsEqualTheReference) {
  const uint64_t seed = test::test_seed();
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::normal_distribution<double> normal;
  const int voxels = 37, t = 61, chains = 2, steps = 40;
  for (const int p : {1, 3, 5}) {
    SCOPED_TRACE(::testing::Message() << p << " regressors");
    const Eigen::MatrixXd x = design_of(t, p);
    std::vector<float> series(static_cast<size_t>(voxels * t));
    for (int v = 0; v < voxels; ++v) {
      const double rho = -0.3 + 0.9 * v / (voxels - 1);
      double e = 0;
      for (int k = 0; k < t; ++k) {
        e = rho * e + 3.0 * normal(rng);
        double value = 1000.0 + e;
        for (int j = 1; j < p; ++j) value += (j - 2.0) * x(k, j);
        series[static_cast<size_t>(v * t + k)] = static_cast<float>(value);
      }
    }
    const BayesGlmPrior prior;
    const BayesGlmChains d = bayes_glm_chains(test::test_device(), series, voxels, x, prior, seed, chains, steps, 0.1);
    double worst = 0;
    for (int v = 0; v < voxels; ++v) {
      Eigen::VectorXd y(t);
      for (int k = 0; k < t; ++k) y(k) = series[static_cast<size_t>(v * t + k)];
      for (int c = 0; c < chains; ++c) {
        const reference::BayesGlmChain r = reference::bayes_glm_chain(y, x, prior, seed, static_cast<uint32_t>(v),
                                                                      static_cast<uint32_t>(c), steps, 0.1);
        // Differences relative to the chain's own spread of each quantity: near rho = 1 the intercept is weakly
        // determined and its draws range over thousands, so rounding differences scale with that spread.
        const auto spread = [&](const Eigen::VectorXd& draws) {
          return std::sqrt((draws.array() - draws.mean()).square().mean()) + 1e-9 * (1.0 + draws.cwiseAbs().maxCoeff());
        };
        std::vector<double> scale(static_cast<size_t>(p + 2));
        for (int k = 0; k < p; ++k) scale[static_cast<size_t>(k)] = spread(r.beta.col(k));
        scale[static_cast<size_t>(p)] = spread(r.sigma2);
        scale[static_cast<size_t>(p + 1)] = spread(r.rho);
        for (int s = 0; s < steps; ++s) {
          const auto close = [&](double device, double ref, int quantity) {
            const double err = std::abs(device - ref) / scale[static_cast<size_t>(quantity)];
            worst = std::max(worst, err);
            ASSERT_LT(err, 1e-5) << "quantity " << quantity << " voxel " << v << " chain " << c << " step " << s << ": "
                                 << device << " vs " << ref;
          };
          for (int k = 0; k < p; ++k) close(d.beta(v, c, s, k), r.beta(s, k), k);
          close(d.sigma2(v, c, s), r.sigma2(s), p);
          close(d.rho(v, c, s), r.rho(s), p + 1);
        }
      }
    }
    std::cout << p << " regressors: worst relative difference " << worst << "\n";
  }
}

TEST(BayesGlm, BadInputIsRefused) {
  const Eigen::MatrixXd x = design_of(10, 3);
  EXPECT_THROW(bayes_glm_chains(test::test_device(), std::vector<float>(9 * 2), 2, x, {}, 1, 1, 5),
               std::invalid_argument);
  EXPECT_THROW(bayes_glm_chains(test::test_device(), std::vector<float>(4), 1, design_of(4, 3), {}, 1, 1, 5),
               std::invalid_argument);
  EXPECT_THROW(bayes_glm_chains(test::test_device(), std::vector<float>(40), 2, design_of(20, 17), {}, 1, 1, 5),
               std::invalid_argument);
}

}  // namespace
}  // namespace rtf
