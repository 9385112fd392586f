// Sliding-window CCA: device against the double-precision reference on odd grids with fresh random data (live through
// a ring buffer, and offline over a series with the same kernels), the filters' separable form against their
// explicit kernels, analytic cases (a sinusoid gets ~1, noise gets the null distribution's values, an active
// non-negativity constraint, signed maps), the response cache, bad input, and real BOLD (nitime's fmri1).
// ctest-label: gpu
// ctest-properties: PROCESSORS 2  (heavy device work: PoCL keeps every core busy)
#include <gtest/gtest.h>

#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>

#include "core/io/nifti_io.hpp"
#include "core/reference/cca_reference.hpp"
#include "core/ring/device_ring_buffer.hpp"
#include "core/stats/cca.hpp"
#include "tests/support/compare.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

// Device vs reference, max |rho error|. The device filters each volume minus a fixed baseline volume (so float32
// carries the fluctuations, not the ~1000 baseline), sums W float32 products of responses shifted by the window's first
// sample, forms unit-diagonal correlation matrices and solves each filter subset in float32. Measured: median ~5e-8,
// max 5e-7 to 5e-6 per map on random data, 3.5e-6 on nitime's BOLD; 5e-5 is 10x the worst seen.
constexpr double kRhoTolerance = 5e-5;
// The smallest window the device accepts holds as many samples (less the mean) as the CCA has variables: its
// correlation matrices are as ill-conditioned as they can be, and float32 rounding is amplified by their condition
// number. Measured: one random seed in a few hundred gave 2.0e-4 at one voxel there (planar, 1 regressor, 6 samples);
// checked against the reference with this bound, the larger windows with kRhoTolerance.
constexpr double kRhoToleranceMinimalWindow = 2e-3;
// Filter responses of (volume - baseline volume), differences of sd ~14, against the double explicit convolution:
// float32 sums of at most a few hundred terms; measured max error ~2e-6.
constexpr double kResponseTolerance = 2e-5;

ImageHeader grid(std::array<int64_t, 3> dims, std::array<double, 3> voxel, int64_t volumes, double tr = 2.0) {
  ImageHeader h;
  h.dims = dims;
  h.voxel_mm = voxel;
  h.num_volumes = volumes;
  h.tr_s = tr;
  return h;
}

// fMRI-like random data: a per-voxel baseline in [500, 1500] plus Gaussian noise (sd 10) per volume.
Image random_series(const ImageHeader& h, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> base(500.0f, 1500.0f);
  std::normal_distribution<float> noise(0.0f, 10.0f);
  Image img(h);
  const auto nvox = static_cast<size_t>(h.voxels_per_volume());
  std::vector<float> baseline(nvox);
  for (auto& b : baseline) b = base(rng);
  for (int64_t t = 0; t < h.num_volumes; ++t) {
    auto v = img.volume(t);
    for (size_t i = 0; i < nvox; ++i) v[i] = baseline[i] + noise(rng);
  }
  return img;
}

Eigen::MatrixXd random_regressors(int64_t rows, int columns, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0.0, 1.0);
  Eigen::MatrixXd m(rows, columns);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = n(rng);
  return m;
}

// The basis rows of volume indices first..first+count-1.
Eigen::MatrixXd basis_rows(const CcaTemporalBasis& basis, int64_t first, int64_t count) {
  Eigen::MatrixXd x(count, basis.columns());
  std::vector<double> row(static_cast<size_t>(basis.columns()));
  for (int64_t j = 0; j < count; ++j) {
    basis.row(first + j, row);
    for (int c = 0; c < basis.columns(); ++c) x(j, c) = row[static_cast<size_t>(c)];
  }
  return x;
}

reference::CcaReferenceSpec reference_spec(const CcaSpec& spec) {
  return {spec.filters == CcaFilters::kVolumetric, spec.fwhm_mm, spec.truncate_sigmas};
}

std::vector<double> reference_map(const Image& series, int64_t first, int64_t count, const CcaTemporalBasis& basis,
                                  const CcaSpec& spec) {
  std::vector<std::span<const float>> volumes;
  for (int64_t t = first; t < first + count; ++t) volumes.push_back(series.volume(t));
  return reference::cca_map(volumes, basis_rows(basis, first, count), series.header().dims, series.header().voxel_mm,
                            reference_spec(spec), spec.signed_map);
}

std::span<const std::byte> bytes_of(std::span<const float> v) {
  return {reinterpret_cast<const std::byte*>(v.data()), v.size_bytes()};
}

void wait(const ClEvent& e) {
  cl_event raw = e.get();
  ASSERT_EQ(clWaitForEvents(1, &raw), CL_SUCCESS);
}

template <typename F>
void expect_invalid(F&& f, const std::string& words) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one mentioning \"" << words << "\"";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

struct Case {
  std::string name;
  std::array<int64_t, 3> dims;
  std::array<double, 3> voxel;
  int64_t window;
  int64_t volumes;
  CcaFilters filters;
  int regressors;  // 0: sine/cosine basis, else this many random regressor columns
  bool signed_map;
  int vector_width;  // voxels per work-item of the solve: 1 = the GPU form, > 1 = the CPU (floatN) form
};

class CcaTest : public ::testing::TestWithParam<Case> {};

TEST_P(CcaTest, LiveRingMatchesReferenceAndOfflineSeries) {
  const Case c = GetParam();
  // RTF_TEST_SEED reproduces a failure's printed seed.
  const uint64_t seed =
      std::getenv("RTF_TEST_SEED") ? std::stoull(std::getenv("RTF_TEST_SEED")) : uint64_t{std::random_device{}()};
  SCOPED_TRACE("seed " + std::to_string(seed));
  const ImageHeader h = grid(c.dims, c.voxel, c.volumes);
  const Image series = random_series(h, seed);
  const CcaTemporalBasis basis =
      c.regressors == 0 ? CcaTemporalBasis::sine_cosine(17.0, h.tr_s)
                        : CcaTemporalBasis::regressors(random_regressors(c.volumes, c.regressors, seed + 1));
  CcaSpec spec;
  spec.filters = c.filters;
  spec.signed_map = c.signed_map;
  spec.vector_width = c.vector_width;
  Device& dev = test::test_device();
  SlidingCca cca(dev, h, c.window, basis, spec);
  DeviceRingBuffer ring(dev, h.voxels_per_volume(), c.window);
  DeviceBuffer<float> out(dev, static_cast<size_t>(h.voxels_per_volume()));
  const Image offline = cca.compute_sliding(series);  // same kernels over the whole series, cache reset around it

  // Checked against the reference: the first full-enough window, the growing window, the first full one, the last.
  const int64_t first = cca.minimum_volumes() - 1;
  const std::vector<int64_t> checked = {first, first + 2, c.window - 1, c.volumes - 1};
  double worst = 0.0;
  for (int64_t t = 0; t < c.volumes; ++t) {
    ClEvent pushed = ring.push(t, bytes_of(series.volume(t)), DataType::kFloat32);
    if (t < first) {
      EXPECT_TRUE(std::isnan(offline.volume(t)[0])) << "offline map before the window has enough volumes";
      continue;
    }
    out.fill(dev.queue(), std::nanf(""));  // poison
    wait(cca.enqueue(ring, out, {pushed.get()}));
    const std::vector<float> map = out.read_all(dev.queue());
    // Live and offline use the same kernels on the same data: identical maps.
    ASSERT_EQ(0, std::memcmp(map.data(), offline.volume(t).data(), map.size() * sizeof(float))) << "volume " << t;
    if (std::find(checked.begin(), checked.end(), t) == checked.end()) continue;
    const int64_t n = std::min(c.window, t + 1);
    const auto ref = reference_map(series, t - n + 1, n, basis, spec);
    const auto d = test::compare(map, ref);
    EXPECT_EQ(d.non_finite, 0) << "volume " << t;
    EXPECT_LT(d.max_abs, t == first ? kRhoToleranceMinimalWindow : kRhoTolerance)
        << "volume " << t << ": " << test::describe(d);
    worst = std::max(worst, d.max_abs);
  }
  RecordProperty("max_abs_rho_error", std::to_string(worst));
  std::printf("[ %s ] max |rho - reference| = %.3g\n", c.name.c_str(), worst);
}

INSTANTIATE_TEST_SUITE_P(
    OddGrids, CcaTest,
    ::testing::Values(
        Case{"planar_sine_gpu_form", {17, 13, 11}, {2.0, 2.5, 3.3}, 23, 31, CcaFilters::kPlanar, 0, false, 1},
        Case{"planar_sine_float8", {17, 13, 11}, {2.0, 2.5, 3.3}, 23, 31, CcaFilters::kPlanar, 0, false, 8},
        Case{"volumetric_3regressors_signed_gpu_form",
             {17, 13, 11},
             {2.0, 2.5, 3.3},
             23,
             29,
             CcaFilters::kVolumetric,
             3,
             true,
             1},
        Case{"volumetric_3regressors_signed_float8",
             {17, 13, 11},
             {2.0, 2.5, 3.3},
             23,
             29,
             CcaFilters::kVolumetric,
             3,
             true,
             8},
        Case{"planar_1regressor_signed_float4", {9, 21, 5}, {3.0, 3.0, 4.0}, 13, 20, CcaFilters::kPlanar, 1, true, 4},
        Case{"volumetric_4regressors_gpu_form",
             {11, 7, 9},
             {2.5, 2.5, 2.5},
             19,
             24,
             CcaFilters::kVolumetric,
             4,
             false,
             1},
        Case{"volumetric_4regressors_float16",
             {11, 7, 9},
             {2.5, 2.5, 2.5},
             19,
             24,
             CcaFilters::kVolumetric,
             4,
             false,
             16}),
    [](const auto& param_info) { return param_info.param.name; });

TEST(Cca, SeparableFiltersEqualExplicitKernels) {
  for (CcaFilters filters : {CcaFilters::kPlanar, CcaFilters::kVolumetric}) {
    CcaSpec spec;
    spec.filters = filters;
    const std::array<double, 3> voxel{2.0, 2.5, 3.3};
    const CcaFilterBank bank = make_cca_filter_bank(voxel, spec);
    const reference::CcaKernels ref = reference::cca_kernels(voxel, reference_spec(spec));
    ASSERT_EQ(bank.coef.size(), ref.kernels.size());
    for (int a = 0; a < 3; ++a) ASSERT_EQ(bank.radius[static_cast<size_t>(a)], ref.radius[static_cast<size_t>(a)]);
    // Rebuild each filter from its separable moment form and compare with the explicit definition.
    const auto& t = bank.taps;
    const int rx = bank.radius[0], ry = bank.radius[1], rz = bank.radius[2];
    for (size_t k = 0; k < bank.coef.size(); ++k) {
      size_t i = 0;
      double worst = 0.0;
      for (int z = 0; z <= 2 * rz; ++z) {
        for (int y = 0; y <= 2 * ry; ++y) {
          for (int x = 0; x <= 2 * rx; ++x, ++i) {
            auto m = [&](int px, int py, int pz) {
              return t[0][static_cast<size_t>(px)][static_cast<size_t>(x)] *
                     t[1][static_cast<size_t>(py)][static_cast<size_t>(y)] *
                     t[2][static_cast<size_t>(pz)][static_cast<size_t>(z)];
            };
            const auto& c = bank.coef[k];
            const double f = c[0] * m(0, 0, 0) + c[1] * m(2, 0, 0) + c[2] * m(0, 2, 0) + c[3] * m(0, 0, 2) +
                             c[4] * m(1, 1, 0) + c[5] * m(1, 0, 1) + c[6] * m(0, 1, 1);
            worst = std::max(worst, std::abs(f - ref.kernels[k][i]));
            EXPECT_GE(f, -1e-15) << "basis filters are non-negative";
          }
        }
      }
      EXPECT_LT(worst, 1e-12) << "filter " << k;  // double rounding only
    }
  }
}

TEST(Cca, DeviceFilterResponsesMatchDirectConvolution) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Device& dev = test::test_device();
  for (CcaFilters filters : {CcaFilters::kPlanar, CcaFilters::kVolumetric}) {
    const ImageHeader h = grid({13, 9, 7}, {2.0, 2.5, 3.3}, 12);
    const Image series = random_series(h, seed);
    CcaSpec spec;
    spec.filters = filters;
    SlidingCca cca(dev, h, 12, CcaTemporalBasis::sine_cosine(10.0, 2.0), spec);
    DeviceBuffer<float> volumes(dev, series.data().size());
    volumes.write(dev.queue(), series.data());
    DeviceBuffer<float> out(dev, static_cast<size_t>(h.voxels_per_volume()));
    std::vector<int64_t> slots = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    std::vector<int64_t> indices = {102, 103, 104, 105, 106, 107, 108, 109, 110, 111};  // any labels work
    wait(cca.enqueue(volumes, slots, indices, out));
    const auto kernels = reference::cca_kernels(h.voxel_mm, reference_spec(spec));
    // The device filters each volume minus the first one it filtered (the baseline): responses differ by a fixed
    // per-voxel constant, which CCA ignores.
    const auto nvox = static_cast<size_t>(h.voxels_per_volume());
    for (size_t j = 0; j < slots.size(); ++j) {
      const auto got = cca.read_responses(indices[j]);
      std::vector<float> difference(nvox);
      for (size_t i = 0; i < nvox; ++i) difference[i] = series.volume(slots[j])[i] - series.volume(slots[0])[i];
      const auto ref = reference::cca_filter_responses(difference, h.dims, kernels);
      for (size_t f = 0; f < ref.size(); ++f) {
        const auto d = test::compare(std::span<const float>(got).subspan(f * nvox, nvox), ref[f]);
        EXPECT_LT(d.max_abs, kResponseTolerance) << "filter " << f << ": " << test::describe(d);
      }
    }
    EXPECT_THROW(cca.read_responses(101), std::invalid_argument);
  }
}

// A block with a strong sinusoid at the basis frequency (arbitrary phase) in small white noise.
TEST(Cca, SinusoidGetsCorrelationNearOneAndNoiseTheNullValues) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t n = 40;
  const ImageHeader h = grid({21, 19, 7}, {3.0, 3.0, 3.0}, n, 2.0);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  const double period = 20.0, phase = std::uniform_real_distribution<double>(0.0, 6.28)(rng);
  Image series(h);
  for (int64_t t = 0; t < n; ++t) {
    const double s = 50.0 * std::sin(2.0 * std::numbers::pi * t * h.tr_s / period + phase);
    for (int64_t z = 0; z < 7; ++z) {
      for (int64_t y = 0; y < 19; ++y) {
        for (int64_t x = 0; x < 21; ++x) {
          const bool active = x >= 2 && x < 7 && y >= 2 && y < 7 && z >= 2 && z < 5;
          series.at(x, y, z, t) = 1000.0f + noise(rng) + (active ? static_cast<float>(s) : 0.0f);
        }
      }
    }
  }
  Device& dev = test::test_device();
  for (CcaFilters filters : {CcaFilters::kPlanar, CcaFilters::kVolumetric}) {
    CcaSpec spec;
    spec.filters = filters;
    SlidingCca cca(dev, h, n, CcaTemporalBasis::sine_cosine(period, h.tr_s), spec);
    const std::vector<float> map = cca.compute(series);
    Image m(grid(h.dims, h.voxel_mm, 1));
    m.data() = map;
    // SNR 50:1 at the block centre: rho^2 = 1 - O(1/SNR^2) there.
    EXPECT_GT(m.at(4, 4, 3), 0.99f);
    // Noise-only voxels (beyond the filters' reach of the block: x >= 12). For independent Gaussian samples the
    // expected squared canonical correlation lies between the single isotropic filter's E[R^2] = T / (n - 1) and
    // Pillai's trace E[V] = S T / (n - 1) of the unrestricted CCA (T = 2 basis columns, S filters).
    double sum_sq = 0.0, worst = 0.0;
    int count = 0;
    for (int64_t z = 0; z < 7; ++z) {
      for (int64_t y = 0; y < 19; ++y) {
        for (int64_t x = 12; x < 21; ++x) {
          const double r = m.at(x, y, z);
          sum_sq += r * r;
          worst = std::max(worst, r);
          ++count;
        }
      }
    }
    const double mean_sq = sum_sq / count, s = cca.spatial_filters();
    EXPECT_GT(mean_sq, 0.8 * 2.0 / (n - 1)) << "filters " << s;
    EXPECT_LT(mean_sq, 1.1 * s * 2.0 / (n - 1)) << "filters " << s;
    EXPECT_LT(worst, 0.8) << "filters " << s;
  }
}

// One voxel carries a clean sinusoid; its in-plane neighbours carry strong independent noise. The oriented filters
// see only the neighbours (zero weight at the centre), so unconstrained CCA subtracts them from the isotropic filter
// and isolates the centre; non-negative weights cannot. The device must give the restricted value. Some noise draws
// leave the constraint inactive (seen once in ~100 CI runs: free 0.572, restricted 0.583), so the noise is drawn again
// (fresh each time, at most 20 draws) until the constraint is active by 0.1 in rho.
TEST(Cca, NonNegativityConstraintIsApplied) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t n = 60;
  const ImageHeader h = grid({9, 9, 3}, {3.0, 3.0, 3.0}, n, 2.0);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  Image series(h);
  CcaSpec spec;  // planar
  const CcaTemporalBasis basis = CcaTemporalBasis::sine_cosine(24.0, 2.0);
  const size_t centre = (1 * 9 + 4) * 9 + 4;
  const auto kernels = reference::cca_kernels(h.voxel_mm, reference_spec(spec));
  const Eigen::MatrixXd x = basis_rows(basis, 0, n);
  reference::CcaSolution restricted, free;
  for (int draw = 0; draw < 20; ++draw) {
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t z = 0; z < 3; ++z) {
        for (int64_t y = 0; y < 9; ++y) {
          for (int64_t x0 = 0; x0 < 9; ++x0) {
            const bool is_centre = x0 == 4 && y == 4 && z == 1;
            const double s = 10.0 * std::sin(2.0 * std::numbers::pi * t * 2.0 / 24.0);
            series.at(x0, y, z, t) = 1000.0f + (is_centre ? static_cast<float>(s) : 20.0f * noise(rng));
          }
        }
      }
    }
    Eigen::MatrixXd y(n, 4);
    for (int64_t t = 0; t < n; ++t) {
      const auto r = reference::cca_filter_responses(series.volume(t), h.dims, kernels);
      for (int f = 0; f < 4; ++f) y(t, f) = r[static_cast<size_t>(f)][centre];
    }
    restricted = reference::canonical_correlation(y, x, true);
    free = reference::canonical_correlation(y, x, false);
    if (free.rho > restricted.rho + 0.1) break;
  }
  Device& dev = test::test_device();
  SlidingCca cca(dev, h, n, basis, spec);
  const std::vector<float> map = cca.compute(series);
  ASSERT_GT(free.rho, restricted.rho + 0.1) << "the constraint must be active in this construction";
  EXPECT_TRUE((free.spatial.array() < 0.0).any() && (free.spatial.array() > 0.0).any());
  EXPECT_TRUE((restricted.spatial.array() >= 0.0).all());
  EXPECT_NEAR(map[centre], restricted.rho, kRhoTolerance);
  EXPECT_LT(map[centre], free.rho - 0.05);
}

// The subset enumeration finds the non-negatively constrained maximum: it satisfies the KKT conditions of
// max q(w) = w'Aw / w'Bw over w >= 0 (zero gradient along the filters it uses, no ascent direction into the others),
// and no non-negative weight vector of a random search (weights spread over 4 decades, 30% zeros) does better.
TEST(Cca, ReferenceRestrictedSolutionIsTheConstrainedMaximum) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  int active = 0;  // trials where the constraint binds (some weight 0)
  for (int trial = 0; trial < 20; ++trial) {
    const int n = 30, s = 4, t = 2;
    Eigen::MatrixXd mix(s, s);
    for (Eigen::Index i = 0; i < mix.size(); ++i) mix.data()[i] = g(rng);
    Eigen::MatrixXd y(n, s), x(n, t);
    for (Eigen::Index i = 0; i < y.size(); ++i) y.data()[i] = g(rng);
    for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = g(rng);
    y = y * mix;  // correlated responses, like overlapping filters
    y.col(0) += 0.8 * x.col(0);
    const auto sol = reference::canonical_correlation(y, x, true);
    const Eigen::MatrixXd yc = y.rowwise() - y.colwise().mean(), xc = x.rowwise() - x.colwise().mean();
    const Eigen::MatrixXd a = yc.transpose() * xc * (xc.transpose() * xc).inverse() * xc.transpose() * yc;
    const Eigen::MatrixXd b = yc.transpose() * yc;
    auto rho_of = [&](const Eigen::VectorXd& w) { return std::sqrt(w.dot(a * w) / w.dot(b * w)); };
    const Eigen::VectorXd& w = sol.spatial;
    ASSERT_TRUE((w.array() >= 0.0).all()) << "trial " << trial;
    EXPECT_NEAR(rho_of(w), sol.rho, 1e-9);
    const Eigen::VectorXd grad = (a * w - sol.rho * sol.rho * (b * w)) / w.dot(b * w);
    const double scale = a.norm() / w.dot(b * w) * w.norm();
    for (int i = 0; i < s; ++i) {
      if (w(i) > 0.0) {
        EXPECT_LT(std::abs(grad(i)), 1e-9 * scale) << "trial " << trial << " filter " << i;
      } else {
        EXPECT_LT(grad(i), 1e-9 * scale) << "trial " << trial << " filter " << i;
      }
    }
    active += (w.array() == 0.0).any() ? 1 : 0;
    double searched = 0.0;
    for (int k = 0; k < 20000; ++k) {
      Eigen::VectorXd v(s);
      for (int i = 0; i < s; ++i) v(i) = u(rng) < 0.3 ? 0.0 : std::pow(10.0, 4.0 * u(rng) - 2.0);
      if (v.sum() == 0.0) continue;
      searched = std::max(searched, rho_of(v));
    }
    EXPECT_LE(searched, sol.rho + 1e-9) << "trial " << trial;
  }
  EXPECT_GT(active, 0) << "no trial exercised the constraint";
}

TEST(Cca, SignedMapFollowsTheRegressor) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t n = 48;
  const ImageHeader h = grid({15, 9, 5}, {3.0, 3.0, 3.0}, n, 2.0);
  Eigen::MatrixXd reg(n, 2);  // a block regressor (smoothed boxcar) and its temporal derivative
  for (int64_t t = 0; t < n; ++t) {
    reg(t, 0) = 0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * t / 16.0);
    reg(t, 1) = std::sin(2.0 * std::numbers::pi * t / 16.0);
  }
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  Image series(h);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t z = 0; z < 5; ++z) {
      for (int64_t y = 0; y < 9; ++y) {
        for (int64_t x = 0; x < 15; ++x) {
          const float s = static_cast<float>(20.0 * reg(t, 0));
          series.at(x, y, z, t) = 1000.0f + noise(rng) + (x < 4 ? s : x >= 11 ? -s : 0.0f);
        }
      }
    }
  }
  CcaSpec spec;
  spec.signed_map = true;
  Device& dev = test::test_device();
  SlidingCca cca(dev, h, n, CcaTemporalBasis::regressors(reg), spec);
  std::vector<float> map = cca.compute(series);
  EXPECT_GT(map[(2 * 9 + 4) * 15 + 1], 0.95f);    // positive response
  EXPECT_LT(map[(2 * 9 + 4) * 15 + 13], -0.95f);  // negative response
  spec.signed_map = false;
  SlidingCca unsigned_cca(dev, h, n, CcaTemporalBasis::regressors(reg), spec);
  map = unsigned_cca.compute(series);
  EXPECT_GT(map[(2 * 9 + 4) * 15 + 13], 0.95f);
}

TEST(Cca, ResponsesAreCachedByVolumeIndexUntilReset) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const ImageHeader h = grid({11, 9, 5}, {3.0, 3.0, 3.0}, 10);
  Image series = random_series(h, seed);
  Device& dev = test::test_device();
  SlidingCca cca(dev, h, 10, CcaTemporalBasis::sine_cosine(12.0, 2.0));
  DeviceBuffer<float> volumes(dev, series.data().size());
  volumes.write(dev.queue(), series.data());
  DeviceBuffer<float> out(dev, static_cast<size_t>(h.voxels_per_volume()));
  std::vector<int64_t> idx = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  wait(cca.enqueue(volumes, idx, idx, out));
  const auto first = out.read_all(dev.queue());
  out.fill(dev.queue(), std::nanf(""));
  wait(cca.enqueue(volumes, idx, idx, out));
  EXPECT_EQ(out.read_all(dev.queue()), first);
  // New data under the same indices: the cached responses are used until reset().
  const Image other = random_series(h, seed + 7);
  volumes.write(dev.queue(), other.data());
  wait(cca.enqueue(volumes, idx, idx, out));
  EXPECT_EQ(out.read_all(dev.queue()), first);
  cca.reset();
  wait(cca.enqueue(volumes, idx, idx, out));
  const auto fresh = out.read_all(dev.queue());
  const auto ref = reference_map(other, 0, 10, CcaTemporalBasis::sine_cosine(12.0, 2.0), CcaSpec{});
  EXPECT_LT(test::compare(fresh, ref).max_abs, kRhoTolerance);
}

TEST(Cca, BadInputGivesClearErrors) {
  Device& dev = test::test_device();
  const ImageHeader h = grid({7, 6, 5}, {3.0, 3.0, 3.0}, 12);
  const auto sine = CcaTemporalBasis::sine_cosine(12.0, 2.0);
  // Construction: window too short for 4 filters + 2 columns + 1, bad basis, bad spec, bad grid.
  expect_invalid([&] { SlidingCca(dev, h, 6, sine); }, "too short");
  expect_invalid([&] { CcaTemporalBasis::regressors(Eigen::MatrixXd::Ones(12, 5)); }, "temporal basis columns");
  expect_invalid([&] { CcaTemporalBasis::regressors(Eigen::MatrixXd(12, 0)); }, "temporal basis columns");
  expect_invalid([&] { CcaTemporalBasis::sine_cosine(0.0, 2.0); }, "period");
  expect_invalid([&] { CcaTemporalBasis::sine_cosine(12.0, -1.0); }, "TR");
  expect_invalid([&] { CcaTemporalBasis::sine_cosine(12.0, 2.0, 3); }, "harmonics");
  CcaSpec bad;
  bad.fwhm_mm = 0.0;
  expect_invalid([&] { SlidingCca(dev, h, 12, sine, bad); }, "FWHM");
  expect_invalid([&] { SlidingCca(dev, grid({0, 6, 5}, {3, 3, 3}, 12), 12, sine); }, "dimension");
  bad = CcaSpec{};
  bad.vector_width = 3;
  expect_invalid([&] { SlidingCca(dev, h, 12, sine, bad); }, "vector width");

  SlidingCca cca(dev, h, 12, sine);
  const auto nvox = static_cast<size_t>(h.voxels_per_volume());
  DeviceBuffer<float> volumes(dev, nvox * 12), out(dev, nvox), small(dev, nvox - 1);
  volumes.fill(dev.queue(), 1.0f);
  const std::vector<int64_t> idx = {0, 1, 2, 3, 4, 5, 6, 7};
  // The ring: window longer than the ring, and an empty ring.
  DeviceRingBuffer short_ring(dev, static_cast<int64_t>(nvox), 8);
  expect_invalid([&] { cca.enqueue(short_ring, out); }, "longer than the ring");
  DeviceRingBuffer ring(dev, static_cast<int64_t>(nvox), 12);
  expect_invalid([&] { cca.enqueue(ring, out); }, "no volume");
  // Fewer volumes than filters + basis columns + 1; more than the window.
  expect_invalid([&] { cca.enqueue(volumes, std::span(idx).first(5), std::span(idx).first(5), out); }, "at least 7");
  const std::vector<int64_t> many = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  expect_invalid([&] { cca.enqueue(volumes, many, many, out); }, "more than the window");
  // Wrong sizes: slots vs indices, output map, a slot outside the buffer.
  expect_invalid([&] { cca.enqueue(volumes, std::span(idx).first(7), idx, out); }, "slots for");
  expect_invalid([&] { cca.enqueue(volumes, idx, idx, small); }, "output map");
  const std::vector<int64_t> far_slot = {0, 1, 2, 3, 4, 5, 6, 12};
  expect_invalid([&] { cca.enqueue(volumes, far_slot, idx, out); }, "outside the volumes buffer");
  // Repeated volumes or slots; indices a window apart (they would share a cache slot).
  const std::vector<int64_t> twice = {0, 1, 2, 3, 4, 5, 6, 6};
  expect_invalid([&] { cca.enqueue(volumes, idx, twice, out); }, "given twice");
  expect_invalid([&] { cca.enqueue(volumes, twice, idx, out); }, "slot 6 given");
  const std::vector<int64_t> apart = {0, 1, 2, 3, 4, 5, 6, 12};
  expect_invalid([&] { cca.enqueue(volumes, idx, apart, out); }, "multiple of the window");
  // Regressors shorter than the run; a basis with no variance or dependent columns over the window.
  SlidingCca short_basis(dev, h, 12, CcaTemporalBasis::regressors(random_regressors(6, 2, 3)));
  expect_invalid([&] { short_basis.enqueue(volumes, idx, idx, out); }, "no temporal basis row for volume 6");
  SlidingCca nyquist(dev, h, 12, CcaTemporalBasis::sine_cosine(4.0, 2.0));  // sin(pi t) = 0 at every volume
  expect_invalid([&] { nyquist.enqueue(volumes, idx, idx, out); }, "no variance");
  Eigen::MatrixXd dependent = random_regressors(12, 2, 5);
  dependent.col(1) = 3.0 * dependent.col(0);
  SlidingCca dep(dev, h, 12, CcaTemporalBasis::regressors(dependent));
  expect_invalid([&] { dep.enqueue(volumes, idx, idx, out); }, "linearly dependent");
  // A series on another grid, or longer than the window for a one-window map.
  expect_invalid([&] { cca.compute(Image(grid({7, 6, 4}, {3, 3, 3}, 10))); }, "grid");
  expect_invalid([&] { cca.compute(Image(grid({7, 6, 5}, {3, 3, 3}, 13))); }, "window");
  // Constant data: no variance in any response, the map is 0 (not NaN).
  wait(cca.enqueue(volumes, idx, idx, out));
  for (float v : out.read_all(dev.queue())) ASSERT_EQ(v, 0.0f);
}

// Real BOLD: nitime's fmri1 (10x10x18x40, 2.08x2.08x2.3 mm, TR 1.35 s) with a sine/cosine basis at a 27 s period.
TEST(Cca, RealBoldMatchesReference) {
  const auto path = test::installed_data("nitime/fmri1.nii.gz");
  if (!path) GTEST_SKIP() << test::missing_installed_data("nitime/fmri1.nii.gz");
  const Image bold = read_nifti(*path);
  const auto basis = CcaTemporalBasis::sine_cosine(27.0, bold.header().tr_s);
  Device& dev = test::test_device();
  for (CcaFilters filters : {CcaFilters::kPlanar, CcaFilters::kVolumetric}) {
    CcaSpec spec;
    spec.filters = filters;
    SlidingCca whole(dev, bold.header(), bold.nt(), basis, spec);
    const auto map = whole.compute(bold);
    const auto d = test::compare(map, reference_map(bold, 0, bold.nt(), basis, spec));
    EXPECT_EQ(d.non_finite, 0);
    EXPECT_LT(d.max_abs, kRhoTolerance) << test::describe(d);
    SlidingCca sliding(dev, bold.header(), 25, basis, spec);
    const Image maps = sliding.compute_sliding(bold);
    const auto last = test::compare(maps.volume(bold.nt() - 1), reference_map(bold, bold.nt() - 25, 25, basis, spec));
    EXPECT_LT(last.max_abs, kRhoTolerance) << test::describe(last);
    std::printf("[ fmri1 %s ] max |rho - reference|: whole run %.3g, last window of 25 %.3g\n",
                filters == CcaFilters::kPlanar ? "planar" : "volumetric", d.max_abs, last.max_abs);
  }
}

}  // namespace
}  // namespace rtf
