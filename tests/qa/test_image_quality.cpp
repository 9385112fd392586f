// MRIQC's functional image-quality metrics (core/qa/image_quality.hpp) on answers checkable by hand: a constant
// image's EFC is 1 and one bright voxel's 0; FBER of a mask-only image is -1 (MRIQC's) and of two levels their squared
// ratio; no ghost gives GSR 0 and a ghost at the mask shifted by N/2 (numpy's roll direction, on an odd grid) its
// level over the brain's median; SNR on the mask eroded once (18-connectivity); FWHM of white noise smoothed by a
// Gaussian of known FWHM within 5 %; GCOR of copies of one series 1, of two series (1 + r) / 2 (AFNI averages every
// pair, each voxel with itself included), of many independent ones 1/N; DVARS of a hand-computed series and of an AR(1)
// process ~1. Then fresh random data on odd grids against brute force written differently (GCOR as the mean of the
// N x N correlation matrix, percentiles by full sorts); undefined inputs give NaN; wrong sizes throw.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/qa/image_quality.hpp"

namespace rtf {
namespace {

using Dims = std::array<int64_t, 3>;

size_t at(const Dims& d, int64_t x, int64_t y, int64_t z) {
  return static_cast<size_t>(x + d[0] * (y + d[1] * z));
}

size_t voxels(const Dims& d) {
  return static_cast<size_t>(d[0] * d[1] * d[2]);
}

// RTF_TEST_SEED replays a failure's printed seed.
uint32_t fresh_seed() {
  return std::getenv("RTF_TEST_SEED") ? static_cast<uint32_t>(std::stoul(std::getenv("RTF_TEST_SEED")))
                                      : std::random_device{}();
}

// A box mask [lo, hi) per axis.
std::vector<uint8_t> box(const Dims& d, const Dims& lo, const Dims& hi) {
  std::vector<uint8_t> mask(voxels(d), 0);
  for (int64_t z = lo[2]; z < hi[2]; ++z) {
    for (int64_t y = lo[1]; y < hi[1]; ++y) {
      for (int64_t x = lo[0]; x < hi[0]; ++x) mask[at(d, x, y, z)] = 1;
    }
  }
  return mask;
}

TEST(ImageQuality, EfcIsOneForAConstantImageAndZeroForOneBrightVoxel) {
  const Dims d{7, 9, 5};
  const auto mask = box(d, {2, 2, 1}, {5, 7, 4});
  const std::vector<float> constant(voxels(d), 431.5f);
  EXPECT_NEAR(image_quality(constant, mask, d, {2, 2, 3}).efc, 1.0, 1e-12);
  std::vector<float> one(voxels(d), 0.0f);
  one[at(d, 3, 4, 2)] = 900.0f;  // all the energy in one voxel: (x/b) ln(x/b) = 1 ln 1 = 0
  EXPECT_NEAR(image_quality(one, mask, d, {2, 2, 3}).efc, 0.0, 1e-15);
  // Negative values count as 0 (MRIQC clips the mean EPI): still one bright voxel.
  one[at(d, 0, 0, 0)] = -50.0f;
  EXPECT_NEAR(image_quality(one, mask, d, {2, 2, 3}).efc, 0.0, 1e-15);
}

TEST(ImageQuality, FberIsMinusOneForAMaskOnlyImageAndTheSquaredRatioOfTwoLevels) {
  const Dims d{8, 7, 5};
  const auto mask = box(d, {2, 2, 1}, {6, 5, 4});
  std::vector<float> image(voxels(d), 0.0f);
  for (size_t i = 0; i < image.size(); ++i) image[i] = mask[i] != 0 ? 10.0f : 0.0f;
  EXPECT_EQ(image_quality(image, mask, d, {3, 3, 3}).fber, -1.0);  // nothing outside: MRIQC's -1
  for (size_t i = 0; i < image.size(); ++i) image[i] = mask[i] != 0 ? 10.0f : 2.0f;
  EXPECT_NEAR(image_quality(image, mask, d, {3, 3, 3}).fber, 100.0 / 4.0, 1e-12);
  // Medians, not means: a few bright background voxels do not move it.
  image[at(d, 0, 0, 0)] = 1000.0f;
  image[at(d, 7, 6, 4)] = 1000.0f;
  EXPECT_NEAR(image_quality(image, mask, d, {3, 3, 3}).fber, 25.0, 1e-12);
}

TEST(ImageQuality, GsrIsZeroWithoutAGhostAndTheGhostLevelOverTheMedianWithOne) {
  // The brain: y in {1, 2} of the slab z = 1 (every x). ny = 9 is odd: the ghost is the mask rolled by 9 / 2 = 4 in
  // numpy's direction (voxel y takes the mask at y - 4 mod 9), so y in {5, 6}; the other direction would give {6, 7}.
  const Dims d{6, 9, 3};
  const auto mask = box(d, {0, 1, 1}, {6, 3, 2});
  std::vector<float> image(voxels(d), 5.0f);  // a flat background: no ghost
  for (size_t i = 0; i < image.size(); ++i) {
    if (mask[i] != 0) image[i] = 100.0f;
  }
  ImageQuality q = image_quality(image, mask, d, {3, 3, 4});
  EXPECT_NEAR(q.gsr_y, 0.0, 1e-15);
  for (int64_t x = 0; x < d[0]; ++x) {
    image[at(d, x, 5, 1)] = 15.0f;  // the ghost, 10 above the background
    image[at(d, x, 6, 1)] = 15.0f;
  }
  q = image_quality(image, mask, d, {3, 3, 4});
  EXPECT_NEAR(q.gsr_y, (15.0 - 5.0) / 100.0, 1e-14);
  // Along x the brain spans every x: its ghost is inside the brain, no ghost voxel, GSR undefined.
  EXPECT_TRUE(std::isnan(q.gsr_x));
}

TEST(ImageQuality, SnrIsTheMedianOverTheSampleSdInsideTheMaskErodedOnce) {
  // A 5x5x5 cube in a 7x7x7 grid erodes (18-connectivity) to its inner 3x3x3: 26 voxels of 100 and one of 127, so
  // mean 101, sum of squares 26 * 1 + 26^2 = 702, sample SD sqrt(702 / 26) = sqrt(27), median 100.
  const Dims d{7, 7, 7};
  const auto mask = box(d, {1, 1, 1}, {6, 6, 6});
  std::vector<float> image(voxels(d), 0.0f);
  for (size_t i = 0; i < image.size(); ++i) {
    if (mask[i] != 0) image[i] = 1e4f;  // the shell the erosion removes
  }
  for (int64_t z = 2; z < 5; ++z) {
    for (int64_t y = 2; y < 5; ++y) {
      for (int64_t x = 2; x < 5; ++x) image[at(d, x, y, z)] = 100.0f;
    }
  }
  image[at(d, 3, 2, 4)] = 127.0f;
  EXPECT_NEAR(image_quality(image, mask, d, {2, 2, 2}).snr, 100.0 / std::sqrt(27.0), 1e-12);
  // A cube of 3 erodes to one voxel: no SD.
  const auto small = box(d, {2, 2, 2}, {5, 5, 5});
  EXPECT_TRUE(std::isnan(image_quality(image, small, d, {2, 2, 2}).snr));
}

// White noise smoothed by a periodic (circular) Gaussian of SD sigma[a] voxels along each axis.
std::vector<float> smoothed_noise(const Dims& d, std::array<double, 3> sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<double> field(voxels(d));
  for (double& v : field) v = noise(rng);
  for (size_t a = 0; a < 3; ++a) {
    const int64_t n = d[a];
    const auto radius = static_cast<int64_t>(std::ceil(4 * sigma[a]));
    std::vector<double> kernel(static_cast<size_t>(2 * radius + 1));
    for (int64_t k = -radius; k <= radius; ++k) {
      kernel[static_cast<size_t>(k + radius)] = std::exp(-0.5 * static_cast<double>(k * k) / (sigma[a] * sigma[a]));
    }
    // Unit sum of squares: the field keeps SD 1.
    const double norm = std::sqrt(std::inner_product(kernel.begin(), kernel.end(), kernel.begin(), 0.0));
    for (double& k : kernel) k /= norm;
    std::vector<double> out(field.size(), 0.0);
    for (int64_t z = 0; z < d[2]; ++z) {
      for (int64_t y = 0; y < d[1]; ++y) {
        for (int64_t x = 0; x < d[0]; ++x) {
          const std::array<int64_t, 3> c{x, y, z};
          double s = 0;
          for (int64_t k = -radius; k <= radius; ++k) {
            std::array<int64_t, 3> src = c;
            src[a] = ((c[a] + k) % n + n) % n;
            s += kernel[static_cast<size_t>(k + radius)] * field[at(d, src[0], src[1], src[2])];
          }
          out[at(d, x, y, z)] = s;
        }
      }
    }
    field.swap(out);
  }
  std::vector<float> image(field.size());
  // SD 100 around 1000: no value is clipped at 0 (the image measures count negative values as 0).
  std::transform(field.begin(), field.end(), image.begin(),
                 [](double v) { return static_cast<float>(1000.0 + 100 * v); });
  return image;
}

TEST(ImageQuality, FwhmOfSmoothedWhiteNoiseIsTheKernelsWithinFivePercent) {
  // FWHM = sqrt(8 ln 2) sigma voxel_mm. The classic estimate's error here is sampling: ~12000 resels give the ratio
  // of the variances a spread of ~1.5 %, halved in the FWHM (sampling the Gaussian kernel at sigma >= 1.2 voxels
  // changes the neighbours' correlation by far less). Measured over 40 seeds: |error| <= 2.6 %, SD ~0.8 %; 5 % is ~6
  // SD.
  const Dims d{81, 71, 63};
  const std::array<double, 3> sigma{1.5, 1.2, 1.3}, mm{2.0, 3.0, 2.5};
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  const std::vector<float> image = smoothed_noise(d, sigma, seed);
  // An ellipsoid mask: the differences counted are those between two voxels inside.
  std::vector<uint8_t> mask(voxels(d), 0);
  for (int64_t z = 0; z < d[2]; ++z) {
    for (int64_t y = 0; y < d[1]; ++y) {
      for (int64_t x = 0; x < d[0]; ++x) {
        const double u = (x - 40.0) / 38.0, v = (y - 35.0) / 34.0, w = (z - 31.0) / 30.0;
        mask[at(d, x, y, z)] = u * u + v * v + w * w <= 1.0 ? 1 : 0;
      }
    }
  }
  const ImageQuality q = image_quality(image, mask, d, mm);
  const double k = std::sqrt(8.0 * std::log(2.0));
  const std::array<double, 3> got{q.fwhm_x, q.fwhm_y, q.fwhm_z};
  for (size_t a = 0; a < 3; ++a) {
    const double want = k * sigma[a] * mm[a];
    EXPECT_NEAR(got[a], want, 0.05 * want) << "axis " << a;
  }
  EXPECT_NEAR(q.fwhm_avg, std::cbrt(q.fwhm_x * q.fwhm_y * q.fwhm_z), 1e-12 * q.fwhm_avg);
}

TEST(ImageQuality, FwhmIsNanWhereThreeDFwhmxFails) {
  const Dims d{6, 5, 1};  // one slice: no z differences
  std::vector<float> image(voxels(d));
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<float>(100 + (i * 7919) % 13);
  const std::vector<uint8_t> all(voxels(d), 1);
  const ImageQuality q = image_quality(image, all, d, {1, 1, 1});
  EXPECT_TRUE(std::isnan(q.fwhm_z));
  const std::vector<float> flat(voxels(d), 7.0f);  // no variance
  const ImageQuality f = image_quality(flat, all, d, {1, 1, 1});
  EXPECT_TRUE(std::isnan(f.fwhm_x) && std::isnan(f.fwhm_y) && std::isnan(f.fwhm_z) && std::isnan(f.fwhm_avg));
}

// `series[v]` the series of voxel v (all of the grid inside the mask unless `mask` says otherwise) as a run.
std::vector<float> as_run(const std::vector<std::vector<double>>& series) {
  const size_t nv = series.size(), nt = series[0].size();
  std::vector<float> run(nv * nt);
  for (size_t v = 0; v < nv; ++v) {
    for (size_t t = 0; t < nt; ++t) run[t * nv + v] = static_cast<float>(series[v][t]);
  }
  return run;
}

double pearson(const std::vector<float>& run, size_t nv, size_t nt, size_t a, size_t b) {
  double ma = 0, mb = 0;
  for (size_t t = 0; t < nt; ++t) {
    ma += run[t * nv + a];
    mb += run[t * nv + b];
  }
  ma /= static_cast<double>(nt);
  mb /= static_cast<double>(nt);
  double sab = 0, saa = 0, sbb = 0;
  for (size_t t = 0; t < nt; ++t) {
    const double da = run[t * nv + a] - ma, db = run[t * nv + b] - mb;
    sab += da * db;
    saa += da * da;
    sbb += db * db;
  }
  return sab / std::sqrt(saa * sbb);
}

TEST(SeriesQuality, GcorOfCopiesIsOneOfTwoSeriesHalfOnePlusRAndOfManyIndependentOnesOneOverN) {
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0.0, 1.0);
  const size_t nt = 200;
  std::vector<double> base(nt);
  for (double& v : base) v = std::round(64 * noise(rng)) / 64;  // exact in float, as are the copies below
  std::vector<std::vector<double>> copies;
  for (int v = 0; v < 23; ++v) {  // offsets and positive scales do not change a correlation
    std::vector<double> s(nt);
    for (size_t t = 0; t < nt; ++t) s[t] = 500.0 + 10.0 * v + (1.0 + v % 4) * base[t];
    copies.push_back(s);
  }
  const std::vector<uint8_t> all23(23, 1);
  EXPECT_NEAR(series_quality(as_run(copies), nt, 23, all23).gcor, 1.0, 1e-12);

  // Two independent series: the mean of the 2x2 correlation matrix, (1 + 1 + 2r) / 4; r ~ N(0, 1/T), |r| < 4/sqrt(T).
  std::vector<std::vector<double>> two(2, std::vector<double>(nt));
  for (auto& s : two) {
    for (double& v : s) v = 100.0 + noise(rng);
  }
  const std::vector<float> run2 = as_run(two);
  const double r = pearson(run2, 2, nt, 0, 1);
  const std::vector<uint8_t> both(2, 1);
  const double gcor2 = series_quality(run2, nt, 2, both).gcor;
  EXPECT_NEAR(gcor2, 0.5 * (1.0 + r), 1e-12);
  EXPECT_NEAR(gcor2, 0.5, 2.0 / std::sqrt(static_cast<double>(nt)));

  // N independent series: E = 1/N (the N self-correlations among N^2 pairs); the off-diagonal mean has SD
  // sqrt(2) / (N sqrt(T)); 6 of those bound it.
  const size_t n = 400, t_many = 300;
  std::vector<std::vector<double>> many(n, std::vector<double>(t_many));
  for (auto& s : many) {
    for (double& v : s) v = 100.0 + noise(rng);
  }
  const std::vector<uint8_t> all(n, 1);
  const double gcor = series_quality(as_run(many), t_many, n, all).gcor;
  EXPECT_NEAR(gcor, 1.0 / n, 6.0 * std::sqrt(2.0) / (n * std::sqrt(static_cast<double>(t_many))));
}

TEST(SeriesQuality, DvarsOfAHandComputedSeries) {
  // Voxel A: 0 1 0 1. Sorted 0 0 1 1: numpy's "lower" P25 is element floor(0.75) = 0 (0), P75 element floor(2.25) = 2
  // (1); robust SD 1 / 1.349. Demeaned +-0.5: lag-1 sum 3 * (-0.25), sum of squares 1, AR(1) -0.75. Predicted SD of
  // the differences sqrt(2 * 1.75) / 1.349. Voxel B = 7 + 2 A: all of it doubled. Differences +-1 and +-2.
  const double sd_a = std::sqrt(3.5) / 1.349;
  const std::vector<std::vector<double>> series{{0, 1, 0, 1}, {7, 9, 7, 9}};
  const std::vector<uint8_t> both(2, 1);
  const SeriesQuality q = series_quality(as_run(series), 4, 2, both);
  ASSERT_EQ(q.dvars_std.size(), 4u);
  EXPECT_TRUE(std::isnan(q.dvars_std[0]) && std::isnan(q.dvars_vstd[0]));
  for (size_t t = 1; t < 4; ++t) {
    EXPECT_NEAR(q.dvars_std[t], std::sqrt((1.0 + 4.0) / 2.0) / (1.5 * sd_a), 1e-12) << t;  // RMS / mean SD
    EXPECT_NEAR(q.dvars_vstd[t], 1.0 / sd_a, 1e-12) << t;  // each difference over its own SD
  }
  EXPECT_NEAR(q.dvars_std_mean, std::sqrt(2.5) / (1.5 * sd_a), 1e-12);
  EXPECT_NEAR(q.dvars_vstd_mean, 1.0 / sd_a, 1e-12);
  EXPECT_EQ(q.dvars_voxels, 2);
}

TEST(SeriesQuality, DvarsOfAnAr1ProcessIsAboutOne) {
  // x_t = phi x_{t-1} + e_t around a per-voxel offset: the robust SD estimates the marginal SD, the AR(1) estimate
  // phi, so sqrt(2 (1 - phi)) * SD is the differences' SD and both DVARS are ~1. The Yule-Walker estimate's bias
  // -(1 + 3 phi) / T moves them by ~0.6 %, the spread over 1500 voxels and 299 volumes is smaller: 3 % bounds them.
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, 1.0);
  const size_t nv = 1500, nt = 300;
  const double phi = 0.4;
  std::vector<std::vector<double>> series(nv, std::vector<double>(nt));
  for (size_t v = 0; v < nv; ++v) {
    double x = noise(rng) / std::sqrt(1 - phi * phi);  // stationary from the start
    const double offset = 800.0 + 400.0 * std::uniform_real_distribution<double>(0, 1)(rng);
    for (size_t t = 0; t < nt; ++t) {
      series[v][t] = offset + 10.0 * x;
      x = phi * x + noise(rng);
    }
  }
  const std::vector<uint8_t> all(nv, 1);
  SeriesQuality q = series_quality(as_run(series), nt, nv, all);
  EXPECT_NEAR(q.dvars_std_mean, 1.0, 0.03);
  EXPECT_NEAR(q.dvars_vstd_mean, 1.0, 0.03);
  EXPECT_EQ(q.dvars_voxels, static_cast<int64_t>(nv));
  // A spike of 8 marginal SDs in every voxel at volume 150: DVARS into and out of it ~ 8 / sqrt(2 (1 - phi)) ~ 7
  // (a little less: the spike also lowers the AR(1) estimate), then back to ~1.
  for (auto& s : series) s[150] += 8 * 10.0 / std::sqrt(1 - phi * phi);
  q = series_quality(as_run(series), nt, nv, all);
  EXPECT_GT(q.dvars_std[150], 6.0);
  EXPECT_GT(q.dvars_std[151], 6.0);
  EXPECT_LT(q.dvars_std[152], 1.5);
  EXPECT_GT(q.dvars_vstd[150], 6.0);
}

// Brute force, written apart from the library's one-pass form: percentiles by full sorts, the per-volume sums
// volume by volume, GCOR as the mean of the whole correlation matrix (constant voxels' correlations 0).
SeriesQuality brute_force(const std::vector<float>& run, size_t nt, size_t nv, const std::vector<uint8_t>& mask) {
  SeriesQuality q;
  q.dvars_std.assign(nt, std::nan(""));
  q.dvars_vstd.assign(nt, std::nan(""));
  std::vector<size_t> in;
  for (size_t v = 0; v < nv; ++v) {
    if (mask[v] != 0) in.push_back(v);
  }
  std::vector<size_t> kept;
  std::vector<double> sd_hat;
  std::vector<bool> constant(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    std::vector<double> s(nt);
    for (size_t t = 0; t < nt; ++t) s[t] = run[t * nv + in[i]];
    std::vector<double> sorted = s;
    std::sort(sorted.begin(), sorted.end());
    const double iqr = sorted[static_cast<size_t>(std::floor(0.75 * (nt - 1)))] -
                       sorted[static_cast<size_t>(std::floor(0.25 * (nt - 1)))];
    const double mean = std::accumulate(s.begin(), s.end(), 0.0) / nt;
    double r0 = 0, r1 = 0;
    for (size_t t = 0; t < nt; ++t) r0 += (s[t] - mean) * (s[t] - mean);
    for (size_t t = 1; t < nt; ++t) r1 += (s[t] - mean) * (s[t - 1] - mean);
    constant[i] = r0 == 0;
    if (iqr > 0) {
      kept.push_back(in[i]);
      sd_hat.push_back(std::sqrt(2 * (1 - r1 / r0)) * iqr / 1.349);
    }
  }
  const double mean_sd = std::accumulate(sd_hat.begin(), sd_hat.end(), 0.0) / static_cast<double>(sd_hat.size());
  double sum_std = 0, sum_vstd = 0;
  for (size_t t = 1; t < nt; ++t) {
    double a = 0, b = 0;
    for (size_t k = 0; k < kept.size(); ++k) {
      const double dv = static_cast<double>(run[t * nv + kept[k]]) - run[(t - 1) * nv + kept[k]];
      a += dv * dv;
      b += (dv / sd_hat[k]) * (dv / sd_hat[k]);
    }
    q.dvars_std[t] = std::sqrt(a / kept.size()) / mean_sd;
    q.dvars_vstd[t] = std::sqrt(b / kept.size());
    sum_std += q.dvars_std[t];
    sum_vstd += q.dvars_vstd[t];
  }
  q.dvars_std_mean = sum_std / (nt - 1);
  q.dvars_vstd_mean = sum_vstd / (nt - 1);
  double corr_sum = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    for (size_t j = 0; j < in.size(); ++j) {
      if (!constant[i] && !constant[j]) corr_sum += pearson(run, nv, nt, in[i], in[j]);
    }
  }
  q.gcor = corr_sum / static_cast<double>(in.size() * in.size());
  return q;
}

TEST(SeriesQuality, FreshRandomDataOnOddGridsEqualsBruteForce) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  for (const auto& [d, nt] :
       {std::pair<Dims, size_t>{{7, 5, 3}, 37}, {{5, 9, 4}, 2}, {{11, 3, 5}, 61}, {{3, 3, 3}, 5}, {{13, 7, 2}, 120}}) {
    SCOPED_TRACE(::testing::Message() << d[0] << "x" << d[1] << "x" << d[2] << "x" << nt);
    const size_t nv = voxels(d);
    std::vector<uint8_t> mask(nv);
    for (auto& m : mask) m = std::uniform_int_distribution<int>(0, 3)(rng) != 0 ? 1 : 0;
    mask[0] = 1;
    // int16-like values (many ties), a shared signal (GCOR well above 0), a constant voxel and one of few values.
    std::vector<float> run(nv * nt);
    std::normal_distribution<double> noise(0.0, 3.0);
    std::vector<double> shared(nt);
    for (double& s : shared) s = noise(rng);
    for (size_t t = 0; t < nt; ++t) {
      for (size_t v = 0; v < nv; ++v) {
        run[t * nv + v] =
            static_cast<float>(std::round(500.0 + 7.0 * static_cast<double>(v % 5) + shared[t] + noise(rng)));
      }
      run[t * nv + 0] = 321.0f;                    // constant: no DVARS, a zero vector in GCOR
      run[t * nv + 1] = t % 7 == 0 ? 1.0f : 0.0f;  // IQR 0 for long runs: left out of DVARS, still in GCOR
    }
    const SeriesQuality got = series_quality(run, static_cast<int64_t>(nt), static_cast<int64_t>(nv), mask);
    if (nt < 3) {  // two volumes: every IQR of the "lower" percentiles is 0
      EXPECT_TRUE(std::isnan(got.dvars_std_mean));
      continue;
    }
    const SeriesQuality want = brute_force(run, nt, nv, mask);
    EXPECT_TRUE(std::isnan(got.dvars_std[0]) && std::isnan(got.dvars_vstd[0]));
    for (size_t t = 1; t < nt; ++t) {
      EXPECT_NEAR(got.dvars_std[t], want.dvars_std[t], 1e-9 * std::abs(want.dvars_std[t])) << t;
      EXPECT_NEAR(got.dvars_vstd[t], want.dvars_vstd[t], 1e-9 * std::abs(want.dvars_vstd[t])) << t;
    }
    EXPECT_NEAR(got.dvars_std_mean, want.dvars_std_mean, 1e-9 * want.dvars_std_mean);
    EXPECT_NEAR(got.dvars_vstd_mean, want.dvars_vstd_mean, 1e-9 * want.dvars_vstd_mean);
    EXPECT_NEAR(got.gcor, want.gcor, 1e-9 * std::abs(want.gcor));
  }
}

TEST(ImageQuality, FreshRandomImagesOnOddGridsGiveFiniteMeasuresInTheirRanges) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  for (const Dims& d : {Dims{15, 17, 9}, Dims{17, 19, 11}, Dims{13, 23, 9}}) {  // >= 450 voxels after erosion
    std::vector<float> image(voxels(d));
    const auto mask = box(d, {2, 2, 1}, {d[0] - 2, d[1] - 3, d[2] - 1});
    std::normal_distribution<double> noise(0.0, 5.0);
    for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<float>((mask[i] != 0 ? 800.0 : 20.0) + noise(rng));
    const ImageQuality q = image_quality(image, mask, d, {2.5, 2.5, 3.3});
    EXPECT_GT(q.efc, 0.0);
    EXPECT_LT(q.efc, 1.0);
    EXPECT_NEAR(q.fber, 800.0 * 800.0 / (20.0 * 20.0), 0.2 * 1600.0);
    EXPECT_NEAR(q.snr, 800.0 / 5.0, 0.25 * 160.0);  // the SD of >= 450 values: within ~4 %
    EXPECT_NEAR(q.gsr_x, 0.0, 0.05);                // no ghost: background noise only
    EXPECT_NEAR(q.gsr_y, 0.0, 0.05);
  }
}

TEST(ImageAndSeriesQuality, UndefinedInputsGiveNanNeverACrash) {
  const Dims d{5, 4, 3};
  const std::vector<uint8_t> none(voxels(d), 0), all(voxels(d), 1);
  std::vector<float> image(voxels(d));
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<float>(100 + i % 7);
  const ImageQuality empty = image_quality(image, none, d, {1, 1, 1});
  EXPECT_TRUE(std::isfinite(empty.efc));  // of the whole image: no mask needed
  for (const double v : {empty.fber, empty.snr, empty.gsr_x, empty.gsr_y, empty.fwhm_x, empty.fwhm_avg}) {
    EXPECT_TRUE(std::isnan(v));
  }
  EXPECT_TRUE(std::isnan(image_quality(image, all, d, {1, 1, 1}).fber));  // nothing outside
  EXPECT_TRUE(std::isnan(image_quality(std::vector<float>(voxels(d), 0.0f), all, d, {1, 1, 1}).efc));
  std::vector<float> with_nan = image;
  with_nan[3] = std::nanf("");  // counts as 0
  EXPECT_TRUE(std::isfinite(image_quality(with_nan, all, d, {1, 1, 1}).efc));

  const size_t nv = voxels(d);
  std::vector<float> run(nv * 6);
  for (size_t i = 0; i < run.size(); ++i) run[i] = static_cast<float>(50 + (i * 31) % 17);
  const auto nan_everywhere = [](const SeriesQuality& q) {
    return std::isnan(q.gcor) && std::isnan(q.dvars_std_mean) && std::isnan(q.dvars_vstd_mean) &&
           std::all_of(q.dvars_std.begin(), q.dvars_std.end(), [](double v) { return std::isnan(v); }) &&
           std::all_of(q.dvars_vstd.begin(), q.dvars_vstd.end(), [](double v) { return std::isnan(v); });
  };
  SeriesQuality q = series_quality(run, 6, static_cast<int64_t>(nv), none);  // empty mask
  EXPECT_EQ(q.dvars_std.size(), 6u);
  EXPECT_TRUE(nan_everywhere(q));
  q = series_quality(std::span<const float>(run).first(nv), 1, static_cast<int64_t>(nv), all);  // one volume
  EXPECT_EQ(q.dvars_std.size(), 1u);
  EXPECT_TRUE(nan_everywhere(q));
  EXPECT_TRUE(nan_everywhere(series_quality({}, 0, static_cast<int64_t>(nv), all)));  // none
  const std::vector<float> constant(nv * 6, 3.0f);
  EXPECT_TRUE(nan_everywhere(series_quality(constant, 6, static_cast<int64_t>(nv), all)));
  std::vector<float> with_inf = run;
  for (size_t t = 0; t < 6; ++t) with_inf[t * nv + 2] = t == 3 ? INFINITY : 1.0f;  // voxel 2 left out
  std::vector<float> without = run;
  for (size_t t = 0; t < 6; ++t) without[t * nv + 2] = 1.0f;
  std::vector<uint8_t> but2 = all;
  but2[2] = 0;
  const SeriesQuality a = series_quality(with_inf, 6, static_cast<int64_t>(nv), all);
  const SeriesQuality b = series_quality(without, 6, static_cast<int64_t>(nv), but2);
  EXPECT_DOUBLE_EQ(a.gcor, b.gcor);
  EXPECT_DOUBLE_EQ(a.dvars_std_mean, b.dvars_std_mean);
  EXPECT_EQ(a.gcor_voxels, static_cast<int64_t>(nv) - 1);
}

TEST(ImageAndSeriesQuality, WrongSizesThrow) {
  const Dims d{4, 3, 2};
  const std::vector<float> image(voxels(d), 1.0f);
  const std::vector<uint8_t> mask(voxels(d), 1);
  EXPECT_THROW(image_quality(std::span<const float>(image).first(23), mask, d, {1, 1, 1}), std::invalid_argument);
  EXPECT_THROW(image_quality(image, std::span<const uint8_t>(mask).first(5), d, {1, 1, 1}), std::invalid_argument);
  EXPECT_THROW(image_quality(image, mask, {4, 3, 0}, {1, 1, 1}), std::invalid_argument);
  EXPECT_THROW(image_quality(image, mask, {-4, -3, 2}, {1, 1, 1}), std::invalid_argument);
  EXPECT_THROW(image_quality(image, mask, d, {1, 0, 1}), std::invalid_argument);
  const std::vector<float> run(24 * 3, 1.0f);
  EXPECT_THROW(series_quality(run, 4, 24, mask), std::invalid_argument);
  EXPECT_THROW(series_quality(run, 3, 24, std::span<const uint8_t>(mask).first(20)), std::invalid_argument);
  EXPECT_THROW(series_quality(run, -3, -24, mask), std::invalid_argument);
  EXPECT_NO_THROW(series_quality(run, 3, 24, mask));
}

}  // namespace
}  // namespace rtf
