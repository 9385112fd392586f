// bedpostx's output order (core/diffusion/fibre_order.hpp): per voxel the fibres sorted by mean f, samples moved with
// their fibre, ties and already sorted voxels left as they are.
#include <gtest/gtest.h>

#include "core/diffusion/fibre_order.hpp"

namespace rtf {
namespace {

TEST(FibreOrder, SortsEachVoxelsFibresByMeanF) {
  BallStickRun run;
  run.voxels = 3;
  run.samples = 2;
  run.fibres = 3;
  run.draws.assign(3 * 3 * 2 * 3, 0.0f);
  const auto set = [&](int fibre, int which, int sample, int voxel, float value) {
    run.draws[(static_cast<size_t>(3 * fibre + which) * 2 + static_cast<size_t>(sample)) * 3 +
              static_cast<size_t>(voxel)] = value;
  };
  // Voxel 0: mean f 0.1, 0.5, 0.3 -> order 1, 2, 0. Voxel 1: already sorted. Voxel 2: a tie between fibres 1 and 2.
  const float f[3][3] = {{0.1f, 0.5f, 0.3f}, {0.6f, 0.2f, 0.1f}, {0.2f, 0.3f, 0.3f}};
  for (int v = 0; v < 3; ++v) {
    for (int j = 0; j < 3; ++j) {
      for (int s = 0; s < 2; ++s) {
        set(j, 0, s, v, static_cast<float>(10 * j + s));  // th: fibre and sample
        set(j, 1, s, v, static_cast<float>(100 + 10 * j + s));
        set(j, 2, s, v, f[v][j] + (s == 0 ? 0.01f : -0.01f));
      }
    }
  }
  sort_fibres_by_mean_f(run);
  const int expected[3][3] = {{1, 2, 0}, {0, 1, 2}, {1, 2, 0}};
  for (int v = 0; v < 3; ++v) {
    for (int j = 0; j < 3; ++j) {
      const int from = expected[v][j];
      for (int s = 0; s < 2; ++s) {
        EXPECT_EQ(run.th(j, s)[v], static_cast<float>(10 * from + s)) << "voxel " << v << " fibre " << j;
        EXPECT_EQ(run.ph(j, s)[v], static_cast<float>(100 + 10 * from + s));
        EXPECT_FLOAT_EQ(run.f(j, s)[v], f[v][from] + (s == 0 ? 0.01f : -0.01f));
      }
    }
  }
}

}  // namespace
}  // namespace rtf
