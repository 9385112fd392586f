// Host side of the Gibbs chains: the design's lag cross products, the launch, the chains read back.
#include "core/glm/bayes_glm.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <stdexcept>

#include "core/device/buffer.hpp"
#include "core/device/launch.hpp"
#include "core/random/philox.hpp"

namespace rtf {

BayesGlmChains bayes_glm_chains(Device& device, const std::vector<float>& series, int voxels,
                                const Eigen::MatrixXd& design, const BayesGlmPrior& prior, uint64_t seed, int chains,
                                int steps, double rho0) {
  const auto t = static_cast<int>(design.rows()), p = static_cast<int>(design.cols());
  if (p < 1 || p > kBayesMaxRegressors || t < p + 2 || voxels < 1 || chains < 1 || steps < 1 ||
      series.size() != static_cast<size_t>(voxels) * static_cast<size_t>(t)) {
    throw std::invalid_argument(
        fmt::format("bayes_glm_chains: {} regressors (1..{}), {} volumes (>= P + 2), {} values for {} voxels", p,
                    kBayesMaxRegressors, t, series.size(), voxels));
  }
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  // The design's lag sums in time order (as the reference sums them).
  RowMajor s00 = RowMajor::Zero(p, p), s01 = s00, s11 = s00;
  for (int k = 1; k < t; ++k) {
    for (int i = 0; i < p; ++i) {
      for (int j = 0; j < p; ++j) {
        s00(i, j) += design(k, i) * design(k, j);
        s01(i, j) += design(k, i) * design(k - 1, j);
        s11(i, j) += design(k - 1, i) * design(k - 1, j);
      }
    }
  }
  const RowMajor x = design;
  const cl_command_queue q = device.queue();
  const auto upload = [&](const RowMajor& m) {
    DeviceBuffer<double> b(device, static_cast<size_t>(m.size()), CL_MEM_READ_ONLY);
    b.write(q, std::span<const double>(m.data(), static_cast<size_t>(m.size())));
    return b;
  };
  DeviceBuffer<double> dx = upload(x), d00 = upload(s00), d01 = upload(s01), d11 = upload(s11);
  DeviceBuffer<float> dy(device, series.size(), CL_MEM_READ_ONLY);
  dy.write(q, series);
  BayesGlmChains out{voxels, chains, steps, p, {}};
  out.values.resize(static_cast<size_t>(voxels) * static_cast<size_t>(chains) * static_cast<size_t>(steps) *
                    static_cast<size_t>(p + 2));
  DeviceBuffer<double> chains_buffer(device, out.values.size());
  ClKernel kernel = device.kernel("bayes_glm.cl", "bayes_glm_chains", {fmt::format("NP={}", p)});
  const random::PhiloxKey key = random::seed_key(seed);
  set_args(kernel, dy, voxels, t, dx, d00, d01, d11, prior.a0, prior.b0, prior.beta_precision, prior.rho_precision,
           key[0], key[1], chains, steps, rho0, chains_buffer);
  launch<2>(q, kernel, {static_cast<size_t>((voxels + 63) / 64 * 64), static_cast<size_t>(chains)}, {64, 1}, {},
            EventMode::kNone);
  chains_buffer.read(q, out.values);
  return out;
}

}  // namespace rtf
