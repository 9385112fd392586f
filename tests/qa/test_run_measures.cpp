// ctest-label: gpu
// measure_run_volumes (core/qa/run_measures.hpp) against what `rtfmri qa` did before it: each volume uploaded on its
// own and measured with a wait (DeviceVoxelMoments, DeviceSliceMeans, DeviceDvars). On an odd grid with NaN voxels, a
// spike and a slice drop-out, for batches of 2, 5 and 16 volumes and a batch larger than the run: every row's global
// signal, DVARS and slice z-scores, and the mean, SD and tSNR maps, the same bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/motion/device_dvars.hpp"
#include "core/qa/run_measures.hpp"
#include "core/qa/slice_means.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof(double)) == 0;
}

void expect_same_floats(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << what;
}

// The old per-volume loop of `rtfmri qa`.
RunMeasures one_by_one(Device& device, const std::vector<float>& run, int64_t nt, std::array<int64_t, 3> dims,
                       const std::vector<uint8_t>& mask, const SliceZScoreOptions& options) {
  const int64_t voxels = dims[0] * dims[1] * dims[2];
  DeviceVoxelMoments moments(device, voxels);
  DeviceSliceMeans slice_means(device, dims, mask);
  DeviceDvars dvars(device, mask);
  SliceZScores slice_z(options);
  DeviceBuffer<float> volume(device, static_cast<size_t>(voxels));
  RunMeasures out;
  out.rows.resize(static_cast<size_t>(nt));
  for (int64_t t = 0; t < nt; ++t) {
    volume.write(device.queue(),
                 std::span<const float>(run).subspan(static_cast<size_t>(t * voxels), static_cast<size_t>(voxels)));
    QaVolumeRow& r = out.rows[static_cast<size_t>(t)];
    r.volume = t;
    moments.add(volume);
    const SliceMeans means = slice_means.measure(volume);
    r.global = means.global;
    r.slices = slice_z.next(means.slice);
    r.dvars = dvars.next(volume);
  }
  out.maps = moments.read_maps();
  return out;
}

TEST(RunMeasures, TheSameNumbersAsVolumeByVolume) {
  Device& device = test::test_device();
  const std::array<int64_t, 3> dims{13, 11, 7};
  const int64_t voxels = dims[0] * dims[1] * dims[2];
  const int64_t nt = 37;
  std::mt19937 rng(1234);
  std::normal_distribution<float> noise(1000.0f, 30.0f);
  std::vector<float> run(static_cast<size_t>(voxels * nt));
  for (float& v : run) v = noise(rng);
  run[static_cast<size_t>(5 * voxels + 17)] = std::nanf("");
  for (int64_t i = 0; i < dims[0] * dims[1]; ++i) {
    run[static_cast<size_t>(20 * voxels + 3 * dims[0] * dims[1] + i)] *= 0.2f;  // slice 3 drops out in volume 20
    run[static_cast<size_t>(30 * voxels + 5 * dims[0] * dims[1] + i)] *= 3.0f;  // slice 5 spikes in volume 30
  }
  std::vector<uint8_t> mask(static_cast<size_t>(voxels));
  for (auto& m : mask) m = rng() % 4 != 0 ? 1 : 0;
  const SliceZScoreOptions options{.history = 12, .min_history = 4, .threshold = 5};

  DeviceBuffer<float> on_device(device, run.size());
  on_device.write(device.queue(), std::span<const float>(run));
  const RunMeasures want = one_by_one(device, run, nt, dims, mask, options);
  bool flagged = false;
  for (const int slots : {2, 5, 16, 64}) {
    SCOPED_TRACE("slots " + std::to_string(slots));
    const RunMeasures got = measure_run_volumes(device, on_device, nt, dims, mask, options, slots);
    ASSERT_EQ(got.rows.size(), want.rows.size());
    for (size_t t = 0; t < want.rows.size(); ++t) {
      const QaVolumeRow& a = got.rows[t];
      const QaVolumeRow& b = want.rows[t];
      EXPECT_EQ(a.volume, b.volume);
      EXPECT_TRUE(same_bits(a.global, b.global)) << t << ": " << a.global << " vs " << b.global;
      EXPECT_TRUE(same_bits(a.dvars, b.dvars)) << t << ": " << a.dvars << " vs " << b.dvars;
      ASSERT_EQ(a.slices.z.size(), b.slices.z.size());
      for (size_t z = 0; z < b.slices.z.size(); ++z) EXPECT_TRUE(same_bits(a.slices.z[z], b.slices.z[z])) << t;
      EXPECT_EQ(a.slices.flagged, b.slices.flagged) << t;
      flagged = flagged || !b.slices.flagged.empty();
    }
    EXPECT_TRUE(std::isnan(got.rows[0].dvars));
    expect_same_floats(got.maps.mean, want.maps.mean, "mean");
    expect_same_floats(got.maps.sd, want.maps.sd, "sd");
    expect_same_floats(got.maps.tsnr, want.maps.tsnr, "tsnr");
  }
  EXPECT_TRUE(flagged);  // the artefacts were seen
}

TEST(RunMeasures, RefusesARunShorterThanItsVolumes) {
  Device& device = test::test_device();
  const std::array<int64_t, 3> dims{4, 4, 2};
  DeviceBuffer<float> run(device, 32 * 3 - 1);
  const std::vector<uint8_t> mask(32, 1);
  EXPECT_THROW(measure_run_volumes(device, run, 3, dims, mask, {}), std::invalid_argument);
  EXPECT_THROW(measure_run_volumes(device, run, 2, dims, std::vector<uint8_t>(31, 1), {}), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
