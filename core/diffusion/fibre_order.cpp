// Per voxel: the fibres' mean f, a stable sort of the fibre indices, the th/ph/f samples permuted.
#include "core/diffusion/fibre_order.hpp"

#include <algorithm>
#include <array>
#include <numeric>

namespace rtf {

void sort_fibres_by_mean_f(BallStickRun& run) {
  const auto voxels = static_cast<size_t>(run.voxels), samples = static_cast<size_t>(run.samples);
  const int fibres = run.fibres;
  const auto at = [&](int row, size_t sample, size_t voxel) -> float& {
    return run.draws[(static_cast<size_t>(row) * samples + sample) * voxels + voxel];
  };
  std::vector<float> column(3 * static_cast<size_t>(fibres) * samples);
  for (size_t v = 0; v < voxels; ++v) {
    std::array<double, kBallStickMaxFibres> mean{};
    for (int j = 0; j < fibres; ++j) {
      for (size_t s = 0; s < samples; ++s) mean[static_cast<size_t>(j)] += at(3 * j + 2, s, v);
    }
    std::array<int, kBallStickMaxFibres> order{};
    std::iota(order.begin(), order.begin() + fibres, 0);
    std::stable_sort(order.begin(), order.begin() + fibres,
                     [&](int a, int b) { return mean[static_cast<size_t>(a)] > mean[static_cast<size_t>(b)]; });
    bool identity = true;
    for (int j = 0; j < fibres; ++j) identity = identity && order[static_cast<size_t>(j)] == j;
    if (identity) continue;
    for (int row = 0; row < 3 * fibres; ++row) {
      for (size_t s = 0; s < samples; ++s) column[static_cast<size_t>(row) * samples + s] = at(row, s, v);
    }
    for (int j = 0; j < fibres; ++j) {
      const int from = order[static_cast<size_t>(j)];
      for (int w = 0; w < 3; ++w) {
        for (size_t s = 0; s < samples; ++s)
          at(3 * j + w, s, v) = column[static_cast<size_t>(3 * from + w) * samples + s];
      }
    }
  }
}

}  // namespace rtf
