// ctest-label: gpu
// The first-level permutation test (core/permutation/first_level_permutation.hpp) against a double-precision
// re-enactment built from the references (core/reference/ar_glm_reference.hpp, smoothing_reference.hpp): the null data
// (nuisance residuals, Yule-Walker AR maps smoothed inside the mask, truncated whitening); every surrogate's maximum
// statistic (permute or sign-flip the whitened series, re-colour, smooth, AR GLM) for t and F contrasts; the same
// seed and any batch size give the same null bit for bit; bad input. Odd grids, fresh seeds. Tolerances: AR maps
// 1e-5, whitened series 1e-4 of the noise sd, maxima 1e-4 relative (float surrogates and smoothing against double).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/filters/gaussian_smoothing.hpp"
#include "core/permutation/first_level_permutation.hpp"
#include "core/reference/ar_glm_reference.hpp"
#include "core/reference/smoothing_reference.hpp"
#include "tests/support/test_device.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

using Dims = std::array<int64_t, 3>;
const std::array<double, 3> kVoxelMm{3.0, 3.0, 3.5};

struct Problem {
  Image bold;
  Eigen::MatrixXd x;
  std::vector<GlmContrast> contrasts;
  std::vector<uint8_t> mask;
};

// A block design (task, cue), a cosine drift and a constant; AR(2)-coloured noise of sd ~10 on baselines near 1000.
Problem make_problem(Dims dims, int n, std::mt19937& rng) {
  Problem p;
  ImageHeader h;
  h.dims = dims;
  h.voxel_mm = kVoxelMm;
  h.num_volumes = n;
  h.tr_s = 2.0;
  p.bold = Image(h);
  p.x.resize(n, 4);
  for (int t = 0; t < n; ++t)
    p.x.row(t) << ((t / 5) % 2 ? 1.0 : 0.0), ((t % 7) == 3 ? 1.0 : 0.0), std::cos(M_PI * t / n), 1.0;
  Eigen::MatrixXd task = Eigen::MatrixXd::Zero(1, 4), f = Eigen::MatrixXd::Zero(2, 4);
  task(0, 0) = 1.0;
  f(0, 0) = 1.0;
  f(1, 1) = 1.0;
  p.contrasts = {{"task", task}, {"any", f}};
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const size_t g = static_cast<size_t>(h.voxels_per_volume());
  p.mask.resize(g);
  for (size_t v = 0; v < g; ++v) {
    p.mask[v] = uniform(rng) < 0.85 ? 1 : 0;
    const double baseline = 800 + 400 * uniform(rng), effect = 15.0 * normal(rng);
    double e1 = 0, e2 = 0;
    for (int t = 0; t < n; ++t) {
      const double e = 10.0 * normal(rng) + 0.35 * e1 + 0.1 * e2;
      e2 = e1;
      e1 = e;
      p.bold.volume(t)[v] = static_cast<float>(baseline + effect * p.x(t, 0) + 5.0 * p.x(t, 2) + e);
    }
  }
  return p;
}

std::array<std::vector<double>, 3> taps(const Problem& p, double fwhm) {
  return GaussianSmoother(test::test_device(), p.bold.header().dims, kVoxelMm,
                          SmoothingSpec{.fwhm_mm = fwhm, .path = SmoothingPath::kSeparablePasses},
                          std::span<const uint8_t>(p.mask))
      .taps();
}

struct ReferenceNull {
  Eigen::MatrixXd whitened;  // n x grid
  Eigen::MatrixXd rho;       // P x grid (float values)
};

ReferenceNull reference_null(const Problem& p, const std::vector<int>& nuisance, int order, double ar_fwhm) {
  const int n = static_cast<int>(p.bold.nt());
  const auto g = static_cast<Eigen::Index>(p.bold.header().voxels_per_volume());
  Eigen::MatrixXd data(n, g);
  for (int t = 0; t < n; ++t) {
    for (Eigen::Index v = 0; v < g; ++v) data(t, v) = p.bold.volume(t)[static_cast<size_t>(v)];
  }
  const Eigen::MatrixXd r = reference::null_residuals(data, p.x, nuisance);
  ReferenceNull out{Eigen::MatrixXd::Zero(n, g), Eigen::MatrixXd::Zero(order, g)};
  std::vector<std::vector<float>> maps(static_cast<size_t>(order), std::vector<float>(static_cast<size_t>(g), 0.0f));
  for (Eigen::Index v = 0; v < g; ++v) {
    if (!p.mask[static_cast<size_t>(v)]) continue;
    const Eigen::VectorXd a = reference::yule_walker(r.col(v), order);
    for (int k = 0; k < order; ++k) maps[static_cast<size_t>(k)][static_cast<size_t>(v)] = static_cast<float>(a[k]);
  }
  const auto t3 = taps(p, ar_fwhm);
  for (int k = 0; k < order; ++k) {
    const std::vector<double> s = reference::smooth_volume(maps[static_cast<size_t>(k)], p.bold.header().dims, t3,
                                                           std::span<const uint8_t>(p.mask));
    for (Eigen::Index v = 0; v < g; ++v) out.rho(k, v) = static_cast<float>(s[static_cast<size_t>(v)]);
  }
  for (Eigen::Index v = 0; v < g; ++v) {
    if (p.mask[static_cast<size_t>(v)]) out.whitened.col(v) = reference::ar_whiten_truncated(r.col(v), out.rho.col(v));
  }
  return out;
}

TEST(FirstLevelPermutation, NullDataMatchReference) {
  std::mt19937 rng(test::test_seed());
  const Problem p = make_problem({7, 6, 5}, 41, rng);
  const ArGlmOptions options{.order = 4, .iterations = 3, .ar_fwhm_mm = 6.0};
  const ArNullData null = prepare_ar_null(test::test_device(), p.bold, p.x, p.contrasts, p.mask, options);
  EXPECT_EQ(null.nuisance, (std::vector<int>{2, 3}));
  const ReferenceNull ref = reference_null(p, null.nuisance, 4, 6.0);
  const size_t g = p.mask.size();
  double worst_rho = 0, worst_w = 0;
  for (size_t v = 0; v < g; ++v) {
    for (int k = 0; k < 4; ++k) {
      const double d = std::abs(null.rho[static_cast<size_t>(k) * g + v] - ref.rho(k, static_cast<Eigen::Index>(v)));
      worst_rho = std::max(worst_rho, d);
      EXPECT_LE(d, 1e-5) << "rho " << k << " at voxel " << v;
    }
    for (int t = 0; t < 41; ++t) {
      const double d =
          std::abs(null.whitened[static_cast<size_t>(t) * g + v] - ref.whitened(t, static_cast<Eigen::Index>(v)));
      worst_w = std::max(worst_w, d);
      EXPECT_LE(d, 1e-3) << "whitened t " << t << " at voxel " << v;  // 1e-4 of the noise sd 10
    }
  }
  std::cout << "null data: worst rho " << worst_rho << ", whitened " << worst_w << "\n";
}

// Every surrogate's maxima against the reference re-enactment.
void check_surrogates(PermutationKind kind) {
  std::mt19937 rng(test::test_seed());
  const Problem p = make_problem({6, 5, 4}, 30, rng);
  FirstLevelPermutationOptions o;
  o.ar = {.order = 2, .iterations = 3, .ar_fwhm_mm = 6.0};
  o.fwhm_mm = 5.0;
  o.kind = kind;
  o.permutations = 7;
  o.seed = rng();
  o.max_batch = 4;
  const FirstLevelPermutationResult result =
      first_level_permutation_test(test::test_device(), p.bold, p.x, p.contrasts, p.mask, o);
  ASSERT_EQ(result.count, 7);
  ASSERT_EQ(result.contrasts.size(), 2U);
  const ReferenceNull null = reference_null(p, {2, 3}, 2, 6.0);
  const PermutationSet set = make_permutation_set(kind, 30, 7, o.seed);
  const auto data_taps = taps(p, 5.0), ar_taps = taps(p, 6.0);
  const auto g = static_cast<Eigen::Index>(p.mask.size());
  std::vector<Eigen::MatrixXd> weights;
  for (const GlmContrast& c : p.contrasts) weights.push_back(c.weights);
  double worst = 0.0;
  for (int k = 0; k < set.count; ++k) {
    // Surrogate k (k = 0: the observed data), smoothed volume by volume, each value rounded to float as on the device.
    Eigen::MatrixXd y(30, g);
    for (Eigen::Index v = 0; v < g; ++v) {
      if (k == 0) {
        for (int t = 0; t < 30; ++t) y(t, v) = p.bold.volume(t)[static_cast<size_t>(v)];
        continue;
      }
      Eigen::VectorXd w(30);
      for (int t = 0; t < 30; ++t) {
        const size_t at = static_cast<size_t>(k) * 30 + static_cast<size_t>(t);
        w[t] =
            kind == PermutationKind::kSignFlip ? set.signs[at] * null.whitened(t, v) : null.whitened(set.order[at], v);
      }
      y.col(v) =
          p.mask[static_cast<size_t>(v)] ? reference::ar_recolour(w, null.rho.col(v)) : Eigen::VectorXd::Zero(30);
    }
    for (int t = 0; t < 30; ++t) {
      std::vector<float> volume(static_cast<size_t>(g));
      for (Eigen::Index v = 0; v < g; ++v) volume[static_cast<size_t>(v)] = static_cast<float>(y(t, v));
      const std::vector<double> s =
          reference::smooth_volume(volume, p.bold.header().dims, data_taps, std::span<const uint8_t>(p.mask));
      for (Eigen::Index v = 0; v < g; ++v) y(t, v) = static_cast<float>(s[static_cast<size_t>(v)]);
    }
    const reference::ArGlmReference fit =
        reference::fit_ar_glm(y, p.bold.header().dims, p.mask, p.x, weights, 2, 3, &ar_taps);
    for (size_t s = 0; s < 2; ++s) {
      double largest = -INFINITY;
      for (Eigen::Index v = 0; v < g; ++v) {
        const double value = fit.stat(static_cast<Eigen::Index>(s), v);
        if (p.mask[static_cast<size_t>(v)] && std::isfinite(value)) largest = std::max(largest, value);
      }
      const double device = result.contrasts[s].max_null[static_cast<size_t>(k)];
      EXPECT_NEAR(device, largest, 1e-4 * std::max(1.0, std::abs(largest)))
          << "rearrangement " << k << ", statistic " << s;
      worst = std::max(worst, std::abs(device - largest) / std::max(1.0, std::abs(largest)));
    }
  }
  std::cout << "worst relative difference of the maxima: " << worst << "\n";
}

TEST(FirstLevelPermutation, PermutedSurrogatesMatchReference) {
  check_surrogates(PermutationKind::kPermute);
}
TEST(FirstLevelPermutation, SignFlippedSurrogatesMatchReference) {
  check_surrogates(PermutationKind::kSignFlip);
}

TEST(FirstLevelPermutation, SeedAndBatchSizeGiveTheSameNull) {
  std::mt19937 rng(test::test_seed());
  const Problem p = make_problem({5, 5, 3}, 26, rng);
  FirstLevelPermutationOptions o;
  o.ar = {.order = 4, .iterations = 2, .ar_fwhm_mm = 5.0};
  o.fwhm_mm = 4.0;
  o.permutations = 11;
  o.seed = 77;
  o.cluster_extent = o.cluster_mass = o.tfce = true;
  o.cluster_threshold = 1.5;
  Device& device = test::test_device();
  o.max_batch = 4;
  const FirstLevelPermutationResult a = first_level_permutation_test(device, p.bold, p.x, p.contrasts, p.mask, o);
  o.max_batch = 1;
  const FirstLevelPermutationResult b = first_level_permutation_test(device, p.bold, p.x, p.contrasts, p.mask, o);
  o.seed = 78;
  const FirstLevelPermutationResult c = first_level_permutation_test(device, p.bold, p.x, p.contrasts, p.mask, o);
  for (size_t s = 0; s < 2; ++s) {
    EXPECT_EQ(a.contrasts[s].max_null, b.contrasts[s].max_null);
    EXPECT_NE(a.contrasts[s].max_null, c.contrasts[s].max_null);
    EXPECT_EQ(a.contrasts[s].vox_corrp, b.contrasts[s].vox_corrp);
  }
  EXPECT_EQ(a.contrasts[0].max_extent, b.contrasts[0].max_extent);
  EXPECT_EQ(a.contrasts[0].max_mass, b.contrasts[0].max_mass);
  EXPECT_EQ(a.contrasts[0].max_tfce, b.contrasts[0].max_tfce);
  // The observed statistic is the first of its null; corrected p >= 1 / count where the map is positive.
  for (size_t s = 0; s < 2; ++s) {
    const auto& r = a.contrasts[s];
    const float observed = *std::max_element(r.observed.begin(), r.observed.end(),
                                             [](float u, float v) { return !(u >= v) && !std::isnan(v); });
    EXPECT_FLOAT_EQ(r.max_null[0], observed);
    for (double q : r.vox_corrp) EXPECT_LE(q, 1.0 - 1.0 / 11 + 1e-12);
  }
  EXPECT_TRUE(a.contrasts[1].max_extent.empty());  // F: voxel inference only
}

TEST(FirstLevelPermutation, BadInput) {
  std::mt19937 rng(test::test_seed());
  const Problem p = make_problem({4, 4, 3}, 20, rng);
  Device& device = test::test_device();
  FirstLevelPermutationOptions o;
  o.permutations = 1;
  EXPECT_THROW(first_level_permutation_test(device, p.bold, p.x, p.contrasts, p.mask, o), std::invalid_argument);
  o.permutations = 5;
  EXPECT_THROW(first_level_permutation_test(device, p.bold, p.x, {}, p.mask, o), std::invalid_argument);
  EXPECT_THROW(first_level_permutation_test(device, p.bold, p.x.topRows(19), p.contrasts, p.mask, o),
               std::invalid_argument);
  EXPECT_THROW(first_level_permutation_test(device, p.bold, p.x, p.contrasts, std::vector<uint8_t>(48, 0), o),
               std::invalid_argument);
}

}  // namespace
}  // namespace rtf
