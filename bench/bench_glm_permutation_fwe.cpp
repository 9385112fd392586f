// Family-wise error rate of the FIRST-LEVEL permutation test on null data (issue 15's validity requirement; the test
// is rtf::first_level_permutation_test, core/permutation/first_level_permutation.hpp, docs/algorithms/glm_ar.md: the
// test of Eklund, Andersson & Knutsson 2012 as `rtfmri glm --noise ar4 --permutations N` runs it). The second-level
// counterpart is bench_randomise_fwe.cpp.
//
// For --datasets independent null data sets (data set d from seed + d), each a single-subject series without any
// activation, it runs the whole first-level permutation test and counts the data sets in which anything is declared
// significant at FWE p <= 0.05 (the smallest FWE p over the mask, i.e. any voxel with 1 - p >= 0.95), for each
// inference type: voxel (max t), cluster_extent and cluster_mass (t > --cluster, 26-connected) and, with --tfce, TFCE
// (E 0.5, H 2). A valid test detects in 5% of the data sets; the line gives each rate with its 95% Wilson interval and
// whether the rate (and the interval) lies in 5% +- 1.5%. With 1000 data sets a valid test's rate has a standard
// deviation of 0.69%, so it falls outside 5% +- 1.5% by chance about 3% of the time.
//
// Data (as bench_glm_permutation.cpp, plus spatial correlation): a --dims grid of 3 mm voxels, --volumes at TR 2 s;
// inside an ellipsoidal "brain" (semi-axes half the grid) baseline 1000 plus AR(4) noise (rho 0.3, 0.1, 0.05, 0.02;
// marginal sd 10) whose innovations are spatially smooth: every volume of white innovations is smoothed by a Gaussian
// of --noise-fwhm mm (rtf::GaussianSmoother, unmasked, on a grid padded by the filter's radius so that every kept
// voxel sees the whole filter), rescaled by the filter's known variance factor to unit variance, and only then run
// through the AR recursion (50 volumes of burn-in, discarded). The AR filter is the same at every voxel, so the noise
// keeps the innovations' spatial correlation and has sd 10 at every voxel. 0 outside the mask. Design: 20 s on / 20 s
// off blocks of "task", SPM's cosine drift (128 s) and the constant (rtf::build_design_matrix); contrast: task.
// Analysis: AR(--order) with --ar-iterations Cochrane-Orcutt fits and AR maps smoothed by --ar-fwhm, the data and
// every surrogate smoothed by --fwhm, --permutations rearrangements (the identity included; permutation seed = the
// data set's seed) of --permute-mode.
//
// For context, the parametric answer on the same fits: the fraction of data sets in which any mask voxel's observed t
// exceeds the one-sided Bonferroni threshold t_{1 - 0.05/V}(dof) (V mask voxels, dof = n - P - rank of the AR model),
// and the fraction of all mask voxels (over all data sets) above the uncorrected t_{0.95}(dof), which is 5% when the
// parametric t is calibrated. AR(4) estimates from 80 volumes under-whiten, so the parametric t is expected to be too
// large (rates inflated); Bonferroni ignores the spatial smoothness and is conservative, which can mask that inflation
// in the family-wise rate, hence the uncorrected voxel rate as well. The t quantiles come from the regularized
// incomplete beta function below (continued fraction), by bisection: the benchmarks do not link Boost.Math.
//
// Prints one JSON line at the end (stdout), progress with an ETA to stderr every 10 data sets, and a line to stderr
// for every rate outside 5% +- 1.5%. Exits 0 whatever the rates (this is a measurement); 1 on an error.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_stats.hpp"
#include "bench/first_level_data.hpp"
#include "bench/first_level_options.hpp"
#include "core/design/design_matrix.hpp"
#include "core/device/device.hpp"
#include "core/filters/gaussian_smoothing.hpp"
#include "core/filters/gaussian_taps.hpp"
#include "core/glm/ar_glm.hpp"
#include "core/image/image.hpp"
#include "core/permutation/first_level_permutation.hpp"
#include "sim/phantom/random.hpp"

namespace {

using rtf::bench::innovation_sd;
constexpr double kTr = rtf::bench::kFirstLevelTr;
constexpr double kVoxelMm = rtf::bench::kFirstLevelVoxelMm;
constexpr auto kRho = rtf::bench::kFirstLevelRho;
constexpr double kNoiseSd = rtf::bench::kFirstLevelNoiseSd;
constexpr float kBaseline = rtf::bench::kFirstLevelBaseline;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

constexpr int kBurnIn = 50;            // AR(4) of kRho forgets its start within a few volumes
constexpr uint64_t kNoiseStream = 17;  // rtf::sim::Rng stream of the innovations (substream: the volume)
constexpr double kAlpha = 0.05;
constexpr std::array<double, 3> kAlphas = {0.01, 0.05, 0.10};  // kAlphas[1] == kAlpha

// Continued fraction of the regularized incomplete beta function (modified Lentz; Numerical Recipes' betacf).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEps = 1e-15;
  const double qab = a + b, qap = a + 1.0, qam = a - 1.0;
  double c = 1.0, d = 1.0 - qab * x / qap;
  if (std::abs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= 1000; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1.0 + aa * d;
    if (std::abs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1.0 + aa * d;
    if (std::abs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double del = d * c;
    h *= del;
    if (std::abs(del - 1.0) < kEps) break;
  }
  return h;
}

// I_x(a, b).
double regularized_beta(double a, double b, double x) {
  if (x <= 0.0) return 0.0;
  if (x >= 1.0) return 1.0;
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_continued_fraction(a, b, x) / a;
  return 1.0 - front * beta_continued_fraction(b, a, 1.0 - x) / b;
}

// P(T > t) for Student's t with dof degrees of freedom, t >= 0.
double t_upper_tail(double t, double dof) {
  return 0.5 * regularized_beta(0.5 * dof, 0.5, dof / (dof + t * t));
}

// The t with P(T > t) = p (0 < p < 0.5), by bisection (the tail decreases in t).
double t_upper_quantile(double p, double dof) {
  double lo = 0.0, hi = 1.0;
  while (t_upper_tail(hi, dof) > p) hi *= 2.0;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (t_upper_tail(mid, dof) > p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// The null series of one data set: AR(4) noise with spatially smooth innovations inside the mask (see the top).
class NullSeries {
 public:
  NullSeries(rtf::Device& device, rtf::ImageHeader header, std::vector<uint8_t> mask, double noise_fwhm)
      : header_(std::move(header)), mask_(std::move(mask)) {
    const int64_t total = kBurnIn + header_.num_volumes;
    padded_ = header_;
    padded_.num_volumes = total;
    double variance = 1.0;  // of a filtered unit white field, at a voxel that sees the whole filter
    if (noise_fwhm > 0.0) {
      for (size_t a = 0; a < 3; ++a) {
        const std::vector<double> taps = rtf::gaussian_taps(rtf::fwhm_to_sigma(noise_fwhm) / header_.voxel_mm[a],
                                                            rtf::SmoothingSpec{}.truncate_sigmas);
        pad_[a] = static_cast<int64_t>(taps.size() / 2);
        double s = 0.0;
        for (double w : taps) s += w * w;
        variance *= s;
        padded_.dims[a] = header_.dims[a] + 2 * pad_[a];
      }
      smoother_.emplace(device, padded_.dims, padded_.voxel_mm,
                        rtf::SmoothingSpec{.fwhm_mm = noise_fwhm, .path = rtf::SmoothingPath::kSeparablePasses},
                        std::nullopt, total);
      for (size_t a = 0; a < 3; ++a) {  // the smoother's filter is the one assumed above
        if (static_cast<int64_t>(smoother_->taps()[a].size() / 2) != pad_[a])
          throw std::runtime_error("noise smoothing: unexpected filter radius");
      }
    }
    scale_ = innovation_sd() / std::sqrt(variance);
    for (size_t i = 0; i < mask_.size(); ++i) {
      if (mask_[i]) inside_.push_back(i);
    }
  }

  // The series of one data set (full grid, `num_volumes` volumes); `measured_sd` gets the sample sd of the noise over
  // the mask and the kept volumes.
  rtf::Image make(uint64_t dataset_seed, double& measured_sd) {
    rtf::Image innovations(padded_, 0.0f);
    const int64_t total = padded_.num_volumes;
    const unsigned threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
    {
      std::vector<std::jthread> workers;
      for (unsigned w = 0; w < threads; ++w) {
        workers.emplace_back([&, w] {
          for (int64_t t = w; t < total; t += threads) {  // each volume its own stream: any thread count, same data
            rtf::sim::Rng rng(dataset_seed, kNoiseStream, static_cast<uint64_t>(t));
            for (float& x : innovations.volume(t)) x = static_cast<float>(rng.normal());
          }
        });
      }
    }
    if (smoother_) innovations = smoother_->smooth(innovations);

    rtf::Image bold(header_, 0.0f);
    const int64_t nx = header_.dims[0], ny = header_.dims[1];
    const int64_t px = padded_.dims[0], py = padded_.dims[1];
    const size_t grid = static_cast<size_t>(header_.voxels_per_volume());
    const size_t padded_grid = static_cast<size_t>(padded_.voxels_per_volume());
    std::vector<double> e(static_cast<size_t>(total));
    double sum = 0.0, sum2 = 0.0;
    for (const size_t v : inside_) {
      const int64_t x = static_cast<int64_t>(v) % nx, y = (static_cast<int64_t>(v) / nx) % ny,
                    z = static_cast<int64_t>(v) / (nx * ny);
      const size_t pv = static_cast<size_t>(((z + pad_[2]) * py + (y + pad_[1])) * px + (x + pad_[0]));
      for (size_t t = 0; t < e.size(); ++t) {
        double value = scale_ * innovations.data()[t * padded_grid + pv];
        for (size_t k = 1; k <= kRho.size() && k <= t; ++k) value += kRho[k - 1] * e[t - k];
        e[t] = value;
      }
      for (int64_t t = 0; t < header_.num_volumes; ++t) {
        const double noise = e[static_cast<size_t>(kBurnIn + t)];
        bold.data()[static_cast<size_t>(t) * grid + v] = kBaseline + static_cast<float>(noise);
        sum += noise;
        sum2 += noise * noise;
      }
    }
    const double count = static_cast<double>(inside_.size()) * static_cast<double>(header_.num_volumes);
    measured_sd = std::sqrt(std::max(0.0, (sum2 - sum * sum / count) / (count - 1.0)));
    return bold;
  }

 private:
  rtf::ImageHeader header_, padded_;
  std::vector<uint8_t> mask_;
  std::vector<size_t> inside_;
  std::array<int64_t, 3> pad_{0, 0, 0};
  double scale_ = 1.0;
  std::optional<rtf::GaussianSmoother> smoother_;
};

constexpr int kInferences = 4;
const std::array<const char*, kInferences> kInferenceNames = {"voxel", "cluster_extent", "cluster_mass", "tfce"};

// The smallest FWE p over the mask from a map of 1 - p (1 when the map is empty: nothing to detect).
double smallest_p(const std::vector<double>& one_minus_p) {
  double best = 0.0;
  for (double v : one_minus_p) best = std::max(best, v);
  return 1.0 - best;
}

}  // namespace

int main(int argc, char** argv) {
  rtf::bench::FirstLevelBenchOptions o{.dims = {32, 32, 16}, .permutations = 1000};
  int datasets = 1000;
  uint64_t seed = 1;
  double noise_fwhm = 6.0, cluster = 3.1;
  bool with_tfce = false;
  CLI::App app("rtfmri FWE rate of the first-level permutation test (AR(P) GLM) on null data sets: JSON line");
  rtf::bench::add_first_level_options(app, o, 4);
  app.get_option("--permutations")->description("Rearrangements per data set, the observed one included");
  app.get_option("--order")->description("AR order P of the analysis");
  app.add_option("--datasets", datasets, "Null data sets (data set d uses seed + d)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--seed", seed, "Seed of data set 0")->capture_default_str();
  app.add_option("--noise-fwhm", noise_fwhm, "Spatial smoothness of the noise's innovations, mm (0: white)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--cluster", cluster, "Cluster-forming threshold (t), 26-connected")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--tfce", with_tfce, "Also TFCE (E 0.5, H 2)");
  CLI11_PARSE(app, argc, argv);

  try {
    const auto start = Clock::now();
    auto device = rtf::Device::open(o.device_spec);
    fmt::print(stderr, "bench_glm_permutation_fwe: device {}\n", device->info().label());

    // The grid and the ellipsoidal mask (as bench_glm_permutation.cpp).
    const rtf::bench::FirstLevelGrid first_grid = rtf::bench::first_level_grid(o.grid(), o.volumes);
    const rtf::ImageHeader& h = first_grid.header;
    const std::vector<uint8_t>& mask = first_grid.mask;
    const size_t mask_voxels = first_grid.mask_voxels;

    // The design: 20 s on / 20 s off blocks of "task", cosine drift (128 s), the constant; contrast task.
    const rtf::bench::FirstLevelDesign first_design = rtf::bench::first_level_design(o.volumes);
    const rtf::DesignMatrix& design = first_design.design;
    const std::vector<rtf::GlmContrast>& contrasts = first_design.contrasts;

    rtf::FirstLevelPermutationOptions options = o.permutation_options();
    options.cluster_extent = options.cluster_mass = true;
    options.cluster_threshold = cluster;
    options.tfce = with_tfce;

    // The parametric thresholds: one-sided, the AR model's degrees of freedom.
    const double dof = rtf::make_ar_glm_model(design.x, contrasts, o.order).dof;
    const double t_bonferroni = t_upper_quantile(kAlpha / static_cast<double>(mask_voxels), dof);
    const double t_uncorrected = t_upper_quantile(kAlpha, dof);
    fmt::print(stderr,
               "bench_glm_permutation_fwe: {} mask voxels, {} volumes, dof {}, Bonferroni t {:.4f}, uncorrected t "
               "{:.4f}\n",
               mask_voxels, o.volumes, dof, t_bonferroni, t_uncorrected);

    NullSeries source(*device, h, mask, noise_fwhm);
    const int inferences = with_tfce ? kInferences : kInferences - 1;
    std::array<std::array<int64_t, kAlphas.size()>, kInferences> detections{};
    int64_t parametric_detections = 0, voxels_above_uncorrected = 0, with_cluster = 0, done = 0;
    double sum_observed_max = 0.0, sum_null_q95 = 0.0, sum_noise_sd = 0.0, sum_clusters = 0.0;
    double seconds_data = 0.0, seconds_test = 0.0;
    int rearrangements = 0;
    bool exhaustive = false;
    const auto loop_start = Clock::now();
    for (int d = 0; d < datasets; ++d) {
      const uint64_t dataset_seed = seed + static_cast<uint64_t>(d);
      auto t0 = Clock::now();
      double noise_sd = 0.0;
      const rtf::Image bold = source.make(dataset_seed, noise_sd);
      seconds_data += seconds_since(t0);
      t0 = Clock::now();
      options.seed = dataset_seed;
      const rtf::FirstLevelPermutationResult r =
          rtf::first_level_permutation_test(*device, bold, design.x, contrasts, mask, options);
      seconds_test += seconds_since(t0);
      if (r.contrasts.size() != 1 || r.contrasts[0].observed.size() != mask_voxels)
        throw std::runtime_error("unexpected result shape");
      const rtf::FirstLevelContrastResult& c = r.contrasts[0];
      rearrangements = r.count;
      exhaustive = r.exhaustive;

      std::array<double, kInferences> p{1.0, 1.0, 1.0, 1.0};
      p[0] = smallest_p(c.vox_corrp);
      p[1] = smallest_p(c.clustere_corrp);
      p[2] = smallest_p(c.clusterm_corrp);
      if (with_tfce) p[3] = smallest_p(c.tfce_corrp);
      for (int i = 0; i < inferences; ++i) {
        for (size_t a = 0; a < kAlphas.size(); ++a)
          detections[static_cast<size_t>(i)][a] += p[static_cast<size_t>(i)] <= kAlphas[a] + 1e-9 ? 1 : 0;
      }

      // The parametric view of the same observed t map (smoothed data, AR(P) fit).
      float observed_max = -std::numeric_limits<float>::infinity();
      for (float t : c.observed) {
        if (!std::isfinite(t)) continue;
        observed_max = std::max(observed_max, t);
        voxels_above_uncorrected += t > t_uncorrected ? 1 : 0;
      }
      parametric_detections += observed_max > t_bonferroni ? 1 : 0;
      sum_observed_max += observed_max;
      std::vector<float> null = c.max_null;  // its 95th percentile: this data set's permutation threshold
      const size_t q =
          std::min(null.size() - 1, static_cast<size_t>(std::ceil(0.95 * static_cast<double>(null.size())) - 1));
      std::nth_element(null.begin(), null.begin() + static_cast<std::ptrdiff_t>(q), null.end());
      sum_null_q95 += null[q];
      with_cluster += c.clusters > 0 ? 1 : 0;
      sum_clusters += static_cast<double>(c.clusters);
      sum_noise_sd += noise_sd;
      ++done;

      if ((d + 1) % 10 == 0 || d + 1 == datasets) {
        const double elapsed = seconds_since(loop_start);
        std::string rates;
        for (int i = 0; i < inferences; ++i) {
          rates += fmt::format(" {} {:.3f}", kInferenceNames[static_cast<size_t>(i)],
                               static_cast<double>(detections[static_cast<size_t>(i)][1]) / static_cast<double>(done));
        }
        fmt::print(stderr, "[{}/{}] {:.0f} s, about {:.0f} s left;{} parametric {:.3f}\n", d + 1, datasets, elapsed,
                   elapsed / (d + 1) * (datasets - d - 1), rates,
                   static_cast<double>(parametric_detections) / static_cast<double>(done));
      }
    }

    const double k = static_cast<double>(done);
    nlohmann::json per_inference = nlohmann::json::object();
    bool all_within = true;
    for (int i = 0; i < inferences; ++i) {
      const auto& det = detections[static_cast<size_t>(i)];
      const int64_t hits = det[1];
      const double rate = static_cast<double>(hits) / k;
      const auto ci = rtf::bench::wilson(hits, done);
      const bool within = rate >= 0.035 && rate <= 0.065;
      all_within = all_within && within;
      per_inference[kInferenceNames[static_cast<size_t>(i)]] = {
          {"detections", hits},
          {"rate", rate},
          {"wilson95_low", ci[0]},
          {"wilson95_high", ci[1]},
          {"within_bounds", within},
          {"interval_within_bounds", ci[0] >= 0.035 && ci[1] <= 0.065},
          {"rate_at_alpha_0.01", static_cast<double>(det[0]) / k},
          {"rate_at_alpha_0.10", static_cast<double>(det[2]) / k}};
      if (!within) {
        fmt::print(stderr,
                   "bench_glm_permutation_fwe: OUTSIDE 5% +- 1.5%: {} FWE rate {:.4f} ({} of {} data sets, 95% "
                   "interval {:.4f} .. {:.4f})\n",
                   kInferenceNames[static_cast<size_t>(i)], rate, hits, done, ci[0], ci[1]);
      }
    }
    const auto parametric_ci = rtf::bench::wilson(parametric_detections, done);
    const double parametric_rate = static_cast<double>(parametric_detections) / k;
    nlohmann::json line = {{"bench", "glm_permutation_fwe"},
                           {"device", device->info().device_name},
                           {"device_label", device->info().label()},
                           {"voxel_mm", kVoxelMm},
                           {"tr_s", kTr},
                           {"mask_voxels", mask_voxels},
                           {"datasets", done},
                           {"seed", seed},
                           {"permutations", rearrangements},
                           {"exhaustive", exhaustive},
                           {"noise_fwhm", noise_fwhm},
                           {"noise_rho", kRho},
                           {"noise_sd", kNoiseSd},
                           {"mean_measured_noise_sd", sum_noise_sd / k},
                           {"cluster_threshold", cluster},
                           {"alpha", kAlpha},
                           {"inference", per_inference},
                           {"all_within_bounds", all_within},
                           {"dof", dof},
                           {"parametric",
                            {{"t_bonferroni", t_bonferroni},
                             {"detections", parametric_detections},
                             {"rate", parametric_rate},
                             {"wilson95_low", parametric_ci[0]},
                             {"wilson95_high", parametric_ci[1]},
                             {"t_uncorrected", t_uncorrected},
                             {"uncorrected_voxel_rate",
                              static_cast<double>(voxels_above_uncorrected) / (k * static_cast<double>(mask_voxels))}}},
                           {"mean_observed_max_t", sum_observed_max / k},
                           {"mean_permutation_t_threshold", sum_null_q95 / k},
                           {"observed_with_cluster", static_cast<double>(with_cluster) / k},
                           {"mean_observed_clusters", sum_clusters / k},
                           {"seconds", seconds_since(start)},
                           {"seconds_data", seconds_data},
                           {"seconds_tests", seconds_test}};
    line.update(o.json());
    rtf::bench::print_line(line);
    fmt::print(stderr, "bench_glm_permutation_fwe: {}; parametric (Bonferroni) FWE rate {:.4f} ({:.4f} .. {:.4f})\n",
               all_within ? "every permutation FWE rate lies within 5% +- 1.5%"
                          : "NOT every permutation FWE rate lies within 5% +- 1.5% (see above)",
               parametric_rate, parametric_ci[0], parametric_ci[1]);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_glm_permutation_fwe: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
