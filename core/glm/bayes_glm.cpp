// Host side of the Gibbs chains: the design's lag cross products S_ab, the launch, the chains read back.
#include "core/glm/bayes_glm.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/device/buffer.hpp"
#include "core/device/launch.hpp"
#include "core/random/philox.hpp"

namespace rtf {

void combine_chain_sums(const double* sums, const double* above, int chains, int contrasts, int kept,
                        BayesGlmSummary& out, int voxel) {
  const int quantities = contrasts + 1 + out.order, stride = 4 + kBayesBatches, half = kept / 2,
            batch = kept / kBayesBatches;
  const auto v = static_cast<size_t>(voxel);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int m = 0; m < quantities; ++m) {
    const auto q = static_cast<size_t>(m);
    double total = 0, total_squares = 0, within = 0, ess = 0;
    std::vector<double> half_means;
    for (int c = 0; c < chains; ++c) {
      const double* x = sums + (static_cast<size_t>(c) * static_cast<size_t>(quantities) + q) * stride;
      double chain_sum = 0, chain_squares = 0;
      for (int part = 0; part < 2; ++part) {
        const double sum = x[2 * part], squares = x[2 * part + 1];
        half_means.push_back(sum / half);
        within += half > 1 ? (squares - sum * sum / half) / (half - 1) : nan;
        chain_sum += sum;
        chain_squares += squares;
      }
      total += chain_sum;
      total_squares += chain_squares;
      // Batch means: sigma^2_BM = b / (NB - 1) sum (batch mean - mean)^2; ESS = draws x chain variance / sigma^2_BM.
      double batch_total = 0;
      for (int j = 0; j < kBayesBatches; ++j) batch_total += x[4 + j];
      const double batch_mean = batch_total / (static_cast<double>(kBayesBatches) * batch);
      double spread = 0;
      for (int j = 0; j < kBayesBatches; ++j) spread += std::pow(x[4 + j] / batch - batch_mean, 2);
      const double sigma2_bm = batch * spread / (kBayesBatches - 1);
      const double n = 2.0 * half;
      const double chain_variance = (chain_squares - chain_sum * chain_sum / n) / (n - 1);
      ess += sigma2_bm > 0 ? static_cast<double>(kBayesBatches) * batch * chain_variance / sigma2_bm : nan;
    }
    const double draws = 2.0 * half * chains;
    const double mean = total / draws;
    out.mean[q][v] = mean;
    out.sd[q][v] = std::sqrt(std::max(0.0, (total_squares - total * mean) / (draws - 1)));
    // Split-R-hat (Gelman et al., BDA3 11.4) over the 2 x chains half-chains of `half` draws.
    const auto halves = static_cast<double>(half_means.size());
    const double w = within / halves;
    double grand = 0;
    for (const double hm : half_means) grand += hm;
    grand /= halves;
    double between = 0;
    for (const double hm : half_means) between += (hm - grand) * (hm - grand);
    between *= static_cast<double>(half) / (halves - 1);
    const double var_plus = (half - 1.0) / half * w + between / half;
    out.r_hat[q][v] = w > 0 ? std::sqrt(var_plus / w) : nan;
    out.ess[q][v] = ess;
  }
  for (int m = 0; m < contrasts; ++m) {
    double count = 0;
    for (int c = 0; c < chains; ++c) count += above[static_cast<size_t>(c) * static_cast<size_t>(contrasts) + m];
    out.ppm[static_cast<size_t>(m)][v] = count / (static_cast<double>(chains) * kept);
  }
}

namespace {

// The inputs every Gibbs kernel takes: the series, the design and its lag sums S_ab = sum_(t = L..T-1) x_(t-a)
// x_(t-b)' for a, b = 0 .. L (summed in time order, as the reference sums them).
struct GibbsInputs {
  DeviceBuffer<float> y;
  DeviceBuffer<double> x, sxx;
  int t = 0, p = 0;
};

GibbsInputs upload_inputs(Device& device, const std::vector<float>& series, int voxels, const Eigen::MatrixXd& design,
                          int chains, int steps, int order) {
  const auto t = static_cast<int>(design.rows()), p = static_cast<int>(design.cols());
  if (order < 1 || order > kBayesMaxArOrder) {
    throw std::invalid_argument(fmt::format("Bayesian GLM: AR order {} (1..{})", order, kBayesMaxArOrder));
  }
  if (p < 1 || p > kBayesMaxRegressors || t < p + order + 1 || voxels < 1 || chains < 1 || steps < 1 ||
      series.size() != static_cast<size_t>(voxels) * static_cast<size_t>(t)) {
    throw std::invalid_argument(
        fmt::format("Bayesian GLM: {} regressors (1..{}), {} volumes (>= P + {}), {} values for {} voxels, {} chains, "
                    "{} steps",
                    p, kBayesMaxRegressors, t, order + 1, series.size(), voxels, chains, steps));
  }
  const int lags = order + 1;
  std::vector<double> sxx(static_cast<size_t>(lags * lags * p * p), 0.0);  // [a][b][i][j]
  for (int k = order; k < t; ++k) {
    for (int a = 0; a < lags; ++a) {
      for (int b = 0; b < lags; ++b) {
        double* s = sxx.data() + static_cast<size_t>((a * lags + b) * p * p);
        for (int i = 0; i < p; ++i) {
          for (int j = 0; j < p; ++j) s[i * p + j] += design(k - a, i) * design(k - b, j);
        }
      }
    }
  }
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const RowMajor x = design;
  const cl_command_queue q = device.queue();
  GibbsInputs in{DeviceBuffer<float>(device, series.size(), CL_MEM_READ_ONLY),
                 DeviceBuffer<double>(device, static_cast<size_t>(x.size()), CL_MEM_READ_ONLY),
                 DeviceBuffer<double>(device, sxx.size(), CL_MEM_READ_ONLY), t, p};
  in.y.write(q, series);
  in.x.write(q, std::span<const double>(x.data(), static_cast<size_t>(x.size())));
  in.sxx.write(q, std::span<const double>(sxx));
  return in;
}

}  // namespace

BayesGlmChains bayes_glm_chains(Device& device, const std::vector<float>& series, int voxels,
                                const Eigen::MatrixXd& design, const BayesGlmPrior& prior, uint64_t seed, int chains,
                                int steps, double rho0, int order, uint32_t first_voxel) {
  const GibbsInputs in = upload_inputs(device, series, voxels, design, chains, steps, order);
  const cl_command_queue q = device.queue();
  BayesGlmChains out{voxels, chains, steps, in.p, order, {}};
  out.values.resize(static_cast<size_t>(voxels) * static_cast<size_t>(chains) * static_cast<size_t>(steps) *
                    static_cast<size_t>(in.p + 1 + order));
  DeviceBuffer<double> chains_buffer(device, out.values.size());
  ClKernel kernel =
      device.kernel("bayes_glm.cl", "bayes_glm_chains", {fmt::format("NP={}", in.p), fmt::format("NAR={}", order)});
  const random::PhiloxKey key = random::seed_key(seed);
  set_args(kernel, in.y, voxels, in.t, in.x, in.sxx, prior.a0, prior.b0, prior.beta_precision, prior.rho_precision,
           key[0], key[1], first_voxel, chains, steps, rho0, chains_buffer);
  launch<2>(q, kernel, {static_cast<size_t>((voxels + 63) / 64 * 64), static_cast<size_t>(chains)}, {64, 1}, {},
            EventMode::kNone);
  chains_buffer.read(q, out.values);
  return out;
}

BayesGlmSummary bayes_glm_summary(Device& device, const std::vector<float>& series, int voxels,
                                  const Eigen::MatrixXd& design, const Eigen::MatrixXd& contrasts,
                                  const BayesGlmPrior& prior, uint64_t seed, int chains, int steps, int burn_in,
                                  double rho0, int order, uint32_t first_voxel) {
  const GibbsInputs in = upload_inputs(device, series, voxels, design, chains, steps, order);
  const auto nc = static_cast<int>(contrasts.rows());
  const int kept = steps - burn_in;
  if (contrasts.cols() != in.p || nc < 1 || burn_in < 0 || kept < 2 * kBayesBatches) {
    throw std::invalid_argument(
        fmt::format("Bayesian GLM: {} contrasts of {} weights for {} regressors; {} kept draws (steps - burn-in, at "
                    "least {})",
                    nc, contrasts.cols(), in.p, kept, 2 * kBayesBatches));
  }
  const cl_command_queue q = device.queue();
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const RowMajor c = contrasts;
  DeviceBuffer<double> dc(device, static_cast<size_t>(c.size()), CL_MEM_READ_ONLY);
  dc.write(q, std::span<const double>(c.data(), static_cast<size_t>(c.size())));
  const int quantities = nc + 1 + order;
  const size_t per_chain = static_cast<size_t>(quantities) * (4 + kBayesBatches);
  const size_t runs = static_cast<size_t>(voxels) * static_cast<size_t>(chains);
  DeviceBuffer<double> sums(device, runs * per_chain), above(device, runs * static_cast<size_t>(nc));
  ClKernel kernel = device.kernel("bayes_glm.cl", "bayes_glm_summary",
                                  {fmt::format("NP={}", in.p), fmt::format("NAR={}", order), fmt::format("NC={}", nc),
                                   fmt::format("NB={}", kBayesBatches)});
  const random::PhiloxKey key = random::seed_key(seed);
  set_args(kernel, in.y, voxels, in.t, in.x, in.sxx, prior.a0, prior.b0, prior.beta_precision, prior.rho_precision,
           key[0], key[1], first_voxel, chains, steps, burn_in, rho0, dc, sums, above);
  launch<2>(q, kernel, {static_cast<size_t>((voxels + 63) / 64 * 64), static_cast<size_t>(chains)}, {64, 1}, {},
            EventMode::kNone);
  const std::vector<double> h_sums = sums.read_all(q), h_above = above.read_all(q);
  BayesGlmSummary out;
  out.voxels = voxels;
  out.contrasts = nc;
  out.order = order;
  const auto grid = [&](int rows) {
    return std::vector<std::vector<double>>(static_cast<size_t>(rows),
                                            std::vector<double>(static_cast<size_t>(voxels)));
  };
  out.mean = out.sd = out.r_hat = out.ess = grid(quantities);
  out.ppm = grid(nc);
  for (int v = 0; v < voxels; ++v) {
    const auto at = static_cast<size_t>(v) * static_cast<size_t>(chains);
    combine_chain_sums(h_sums.data() + at * per_chain, h_above.data() + at * static_cast<size_t>(nc), chains, nc, kept,
                       out, v);
  }
  return out;
}

}  // namespace rtf
