// The GLM benchmarks' design: four conditions ("a".."d") in 12 s blocks every 20 s, six motion confounds, one DCT
// drift term and the constant (12 columns), and its contrasts (two differences, one condition, an F over the four).
#pragma once

#include <Eigen/Core>
#include <array>
#include <initializer_list>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "core/design/design_matrix.hpp"
#include "core/glm/glm_model.hpp"

namespace rtf::bench {

enum class BenchConfounds {
  kRandomWalk,  // six random-walk "motion" regressors (offline fits)
  kZero,        // zeros, filled per TR as the live motion stage would
};

inline std::vector<Event> bench_events(int64_t volumes) {
  std::vector<Event> events;
  const std::array<const char*, 4> names{"a", "b", "c", "d"};
  for (int64_t k = 0; 8 + 20 * k < volumes; ++k) {
    events.push_back({8.0 + 20.0 * static_cast<double>(k), 12.0, names[static_cast<size_t>(k % 4)], std::nullopt});
  }
  return events;
}

inline DesignMatrix bench_design(int64_t volumes, const std::vector<Event>& events, BenchConfounds confounds) {
  DesignOptions o;
  o.tr_s = 1.0;
  o.n_scans = volumes;
  o.highpass_cutoff_s = 2.0 * static_cast<double>(volumes);  // one cosine
  o.confounds = Eigen::MatrixXd::Zero(volumes, 6);
  if (confounds == BenchConfounds::kRandomWalk) {
    std::mt19937 rng(3);
    std::normal_distribution<double> normal;
    for (Eigen::Index j = 0; j < 6; ++j) {
      double walk = 0.0;
      for (int64_t t = 0; t < volumes; ++t) o.confounds(t, j) = walk += 0.05 * normal(rng);
    }
  }
  return build_design_matrix(events, o);
}

inline std::vector<GlmContrast> bench_contrasts(const DesignMatrix& d) {
  auto row = [&](std::initializer_list<std::pair<const char*, double>> terms) {
    Eigen::MatrixXd w = Eigen::MatrixXd::Zero(1, d.x.cols());
    for (const auto& [name, weight] : terms) w(0, *d.find(name)) = weight;
    return w;
  };
  Eigen::MatrixXd f(4, d.x.cols());
  f << row({{"a", 1}}), row({{"b", 1}}), row({{"c", 1}}), row({{"d", 1}});
  return {
      {"a-b", row({{"a", 1}, {"b", -1}})}, {"c-d", row({{"c", 1}, {"d", -1}})}, {"a", row({{"a", 1}})}, {"effects", f}};
}

}  // namespace rtf::bench
