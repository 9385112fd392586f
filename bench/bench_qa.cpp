// Per-TR cost of the data-quality measures (issue 37) on the device, at 64x64x33 (3 mm) and 104x104x72 (2 mm), with a
// ring of W = 100 BOLD-like volumes (int16-like values, a brain-sized mask): (1) the running moments updated with the
// newest volume, its slice means and the global signal read back; (2) 3dToutcount's outlier count of the newest volume
// against the ring's series (the sorted series updated with it, core/qa/sorted_series.hpp; every 4th TR the update
// without the test and the count's read instead, series_update_without_outlier_test); (3) the ring's median
// volume and the newest volume's quality index (3dTqual). RTFMRI_TRACE_KERNELS=1 adds each kernel's device time. Wall
// clock per TR and stage (each ends with its results on the host), median/p95/max over the runs after a warm-up; and
// (4) the whole live QA stage as the pipeline runs it per TR (core/qa/live_qa.hpp: the above with the sliding moments,
// DVARS, the carpet column, the median volume refreshed every 16 TRs, a tSNR map every 8); (5) each measure enqueued
// back to back with one wait (the device's time and launch overhead, no round trips), among them the volume pass with
// each voxels-a-work-item setting and the quality index's bucket ranking with other counter strides, bucket sizes and
// capacities, and the cost of one round trip;
// (6) what one command of each kind (fill, small read into pageable or pinned memory, launch) costs back to back.
// JSON lines on stdout.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "core/device/cl_error.hpp"
#include "core/device/device.hpp"
#include "core/qa/bucket_ranks.hpp"
#include "core/qa/carpet_column.hpp"
#include "core/qa/live_qa.hpp"
#include "core/qa/masked_sort.hpp"
#include "core/qa/quality_index.hpp"
#include "core/qa/slice_means.hpp"
#include "core/qa/sorted_series.hpp"
#include "core/qa/volume_pass.hpp"
#include "core/qa/voxel_moments.hpp"
#include "core/reference/qa_reference.hpp"
#include "core/ring/device_ring_buffer.hpp"
#include "core/util/quantiles.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

nlohmann::json summary(const std::vector<double>& ms) {
  const rtf::Quantiles q = rtf::quantiles(ms);
  return {{"median_ms", q.median}, {"p95_ms", q.p95}, {"max_ms", q.max}};
}

void bench_grid(rtf::Device& dev, std::array<int64_t, 3> dims, int window, int warmup, int runs,
                rtf::DeviceSortedSeries::Kernel series_kernel, int series_lanes, int merge_ways) {
  const int64_t voxels = dims[0] * dims[1] * dims[2];
  std::mt19937_64 rng(7);
  std::normal_distribution<float> base(900.0f, 200.0f), noise(0.0f, 12.0f);
  // A brain-sized mask: the voxels inside an ellipsoid filling 80% of each axis (about 27% of the grid).
  std::vector<uint8_t> mask(static_cast<size_t>(voxels));
  for (int64_t z = 0; z < dims[2]; ++z) {
    for (int64_t y = 0; y < dims[1]; ++y) {
      for (int64_t x = 0; x < dims[0]; ++x) {
        const double u = (2.0 * x / (dims[0] - 1) - 1) / 0.8, v = (2.0 * y / (dims[1] - 1) - 1) / 0.8,
                     w = (2.0 * z / (dims[2] - 1) - 1) / 0.8;
        mask[static_cast<size_t>(x + dims[0] * (y + dims[1] * z))] = u * u + v * v + w * w <= 1.0 ? 1 : 0;
      }
    }
  }
  std::vector<float> mean(static_cast<size_t>(voxels));
  for (float& m : mean) m = std::max(100.0f, std::round(base(rng)));
  const int total = window + warmup + runs;
  std::vector<std::vector<float>> volumes(static_cast<size_t>(std::min(total, window + 8)),
                                          std::vector<float>(static_cast<size_t>(voxels)));
  for (auto& volume : volumes) {
    for (size_t v = 0; v < volume.size(); ++v) volume[v] = std::round(mean[v] + noise(rng));
  }
  rtf::DeviceRingBuffer ring(dev, voxels, window);
  rtf::DeviceVoxelMoments moments(dev, voxels);
  rtf::DeviceSliceMeans slices(dev, dims, mask);
  rtf::DeviceSortedSeries sorted(dev, mask, window, series_kernel, series_lanes);
  rtf::DeviceQualityIndex quality(dev, mask, int64_t{512} << 20, merge_ways);
  rtf::DeviceBuffer<float> newest(dev, static_cast<size_t>(voxels)), median(dev, static_cast<size_t>(voxels));
  median.fill(dev.queue(), 0.0f);
  rtf::ImageHeader grid;
  grid.dims = dims;
  grid.num_volumes = 1;
  grid.tr_s = 1.0;
  rtf::LiveQaOptions live_options;
  live_options.sliding_window = 30;
  rtf::LiveQa live(dev, grid, mask, live_options, window, 1.0);
  rtf::RigidParams still;
  std::vector<double> moments_ms, outliers_ms, update_only_ms, quality_ms, total_ms, live_ms;
  int64_t count = 0;
  for (int t = 0; t < total; ++t) {
    const auto& volume = volumes[static_cast<size_t>(t) % volumes.size()];
    newest.write(dev.queue(), volume);
    ring.push_device(t, newest);
    RTF_CL_CHECK(clFinish(dev.queue()));
    if (t < window) {  // the ring fills
      sorted.enqueue_replace(ring.data(), static_cast<int>(ring.slot_of(t)), false);
      continue;
    }
    const auto t0 = Clock::now();
    moments.add(newest);
    const rtf::SliceMeans m = slices.measure(newest);  // reads back: the stage's results on the host
    const double a = ms_since(t0);
    // Every 4th TR the series' update alone, without the outlier test and the count's read (what those add).
    const bool counting = t % 4 != 3;
    const auto t1 = Clock::now();
    sorted.enqueue_replace(ring.data(), static_cast<int>(ring.slot_of(t)), counting);
    RTF_CL_CHECK(clFinish(dev.queue()));
    if (counting) count = sorted.outliers_result();
    const double b = ms_since(t1);
    const auto t2 = Clock::now();
    sorted.enqueue_medians(median);
    quality.set_reference(median);
    const double qi = quality.quality(newest);
    const double c = ms_since(t2);
    const auto t3 = Clock::now();
    still.translation_mm[0] = 0.01 * (t % 3);
    const rtf::LiveQaSample sample = live.update(ring, t, &still);
    const double d = ms_since(t3);
    if (t >= window + warmup) {
      moments_ms.push_back(a);
      (counting ? outliers_ms : update_only_ms).push_back(b);
      quality_ms.push_back(c);
      total_ms.push_back(a + b + c);
      live_ms.push_back(d);
    }
    if (t == total - 1) {
      std::fprintf(stderr, "last TR: global %.1f, outliers %lld, quality index %.5f; live stage: %.5f, %.5f\n",
                   m.global, static_cast<long long>(count), qi, sample.row.outlier_fraction, sample.row.quality);
    }
  }
  // What the device itself takes: each measure enqueued `runs` times back to back with one wait at the end (launch
  // overhead included, no round trips), and what one round trip costs (a finish of an idle queue; a 4-byte read).
  const auto back_to_back = [&](auto&& enqueue) {
    RTF_CL_CHECK(clFinish(dev.queue()));
    const auto t0 = Clock::now();
    for (int i = 0; i < runs; ++i) enqueue();
    RTF_CL_CHECK(clFinish(dev.queue()));
    return ms_since(t0) / runs;
  };
  const int newest_slot = static_cast<int>(ring.slot_of(total - 1));
  const double quality_device = back_to_back([&] { quality.enqueue_quality_of_slot(ring.data(), newest_slot); });
  const double medians_device = back_to_back([&] { sorted.enqueue_medians(median); });
  const double moments_device = back_to_back([&] {
    moments.add(newest);
    slices.enqueue(newest);
  });
  // The live stage's one pass over the ring slot (moments cumulative and sliding, slice sums, DVARS, carpet), back to
  // back, with each voxels-a-work-item setting.
  nlohmann::json pass_device;
  {
    const rtf::CarpetVoxels carpet = rtf::carpet_voxels(mask, 800);
    rtf::DeviceVoxelMoments cumulative(dev, voxels), sliding(dev, voxels);
    const int previous_slot = static_cast<int>(ring.slot_of(total - 2));
    const int leaving_slot = static_cast<int>(ring.slot_of(total - 1 - std::min(30, window - 1)));  // a window of 30
    for (const size_t items : {size_t{1}, size_t{2}, size_t{4}, size_t{8}, size_t{16}}) {
      rtf::DeviceQaVolumePass pass(dev, dims, mask, carpet.indices, nullptr, items);
      pass.enqueue(ring.data(), newest_slot, previous_slot, cumulative, &sliding, -1);  // the window's first volume
      pass_device[fmt::format("voxels_an_item_{}", items)] = back_to_back(
          [&] { pass.enqueue(ring.data(), newest_slot, previous_slot, cumulative, &sliding, leaving_slot); });
    }
  }
  // The quality index's bucket ranking alone (core/qa/bucket_ranks.hpp), back to back, with the counters 1, 8 and 32
  // ints apart, against the ring's median volume (its keys and ranks made on the host), and how full the buckets are.
  nlohmann::json buckets_json;
  {
    sorted.enqueue_medians(median);
    const std::vector<float> median_host = median.read_all(dev.queue());
    std::vector<float> values;
    for (size_t v = 0; v < mask.size(); ++v) {
      if (mask[v] != 0) values.push_back(median_host[v]);
    }
    std::vector<uint32_t> keys(values.size());
    std::transform(values.begin(), values.end(), keys.begin(), rtf::float_sort_key);
    std::sort(keys.begin(), keys.end());
    const std::vector<int64_t> r64 = rtf::reference::doubled_centred_ranks(values);
    rtf::DeviceBuffer<uint32_t> sorted_keys(dev, keys.size());
    sorted_keys.write(dev.queue(), keys);
    rtf::DeviceBuffer<int> ranks(dev, r64.size());
    ranks.write(dev.queue(), std::vector<int>(r64.begin(), r64.end()));
    for (const int stride : {1, 8, 32}) {
      rtf::DeviceBucketRanks b(dev, mask, nullptr, rtf::DeviceBucketRanks::kDefaultBucket, 0, stride);
      b.enqueue_set_reference(sorted_keys, ranks);
      buckets_json[fmt::format("counters_{}_apart_ms", stride)] =
          back_to_back([&] { b.enqueue(ring.data(), newest_slot); });
      if (stride == 1) {
        const std::vector<int> counts = b.bucket_counts();
        buckets_json["buckets"] = counts.size();
        buckets_json["largest"] = *std::max_element(counts.begin(), counts.end());
        buckets_json["empty"] = std::count(counts.begin(), counts.end(), 0);
        buckets_json["capacity"] = b.capacity();
        buckets_json["overflow"] = b.result().overflow;
      }
    }
    // Other bucket sizes and capacities (counters 8 apart).
    for (const int bucket : {128, 256, 512}) {
      for (const int capacity : {1024, 2048}) {
        rtf::DeviceBucketRanks b(dev, mask, nullptr, bucket, capacity);
        b.enqueue_set_reference(sorted_keys, ranks);
        const double ms = back_to_back([&] { b.enqueue(ring.data(), newest_slot); });
        const std::vector<int> counts = b.bucket_counts();
        buckets_json[fmt::format("bucket_{}_capacity_{}", bucket, capacity)] = {
            {"ms", ms},
            {"largest", *std::max_element(counts.begin(), counts.end())},
            {"overflow", b.result().overflow}};
      }
    }
  }
  std::vector<double> finish_ms, read_ms;
  std::vector<int> one(1);
  rtf::DeviceBuffer<int> word(dev, 1);
  for (int i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    RTF_CL_CHECK(clFinish(dev.queue()));
    finish_ms.push_back(ms_since(t0));
    const auto t1 = Clock::now();
    word.read(dev.queue(), one);
    read_ms.push_back(ms_since(t1));
  }
  // What one command of each kind costs enqueued back to back (host enqueue + device, one wait per `runs`): a 4-byte
  // fill, a 4-byte read into pageable host memory, the same into pinned (mapped CL_MEM_ALLOC_HOST_PTR) memory, and a
  // one-voxel kernel launch (the moments' update of a 1-voxel volume, with its event as the stage launches it).
  const auto per_command = [&](auto&& enqueue) {
    RTF_CL_CHECK(clFinish(dev.queue()));
    const auto t0 = Clock::now();
    for (int i = 0; i < runs; ++i) enqueue(i);
    RTF_CL_CHECK(clFinish(dev.queue()));
    return ms_since(t0) / runs;
  };
  std::vector<int> pageable(static_cast<size_t>(runs));
  const double fill_cost = per_command([&](int) { word.fill_async(dev.queue(), 0); });
  const double pageable_cost =
      per_command([&](int i) { word.read_async(dev.queue(), std::span<int>(pageable).subspan(i, 1)); });
  cl_int err = CL_SUCCESS;
  cl_mem pinned_mem =
      clCreateBuffer(dev.context(), CL_MEM_ALLOC_HOST_PTR, static_cast<size_t>(runs) * sizeof(int), nullptr, &err);
  RTF_CL_CHECK(err);
  auto* pinned =
      static_cast<int*>(clEnqueueMapBuffer(dev.queue(), pinned_mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                           static_cast<size_t>(runs) * sizeof(int), 0, nullptr, nullptr, &err));
  RTF_CL_CHECK(err);
  const double pinned_cost = per_command([&](int i) { word.read_async(dev.queue(), std::span<int>(pinned + i, 1)); });
  RTF_CL_CHECK(clEnqueueUnmapMemObject(dev.queue(), pinned_mem, pinned, 0, nullptr, nullptr));
  RTF_CL_CHECK(clFinish(dev.queue()));
  clReleaseMemObject(pinned_mem);
  rtf::DeviceVoxelMoments tiny(dev, 1);
  rtf::DeviceBuffer<float> one_voxel(dev, 1);
  one_voxel.fill(dev.queue(), 1.0f);
  const double launch_cost = per_command([&](int) { tiny.add(one_voxel); });
  const int64_t inside = std::count(mask.begin(), mask.end(), 1);
  fmt::print("{}\n", nlohmann::json{{"bench", "qa per TR"},
                                    {"device", dev.info().device_name},
                                    {"size", fmt::format("{}x{}x{}", dims[0], dims[1], dims[2])},
                                    {"mask_voxels", inside},
                                    {"window", window},
                                    {"series_kernel", sorted.shared_rows() ? "shared" : "per_item"},
                                    {"series_lanes", sorted.lanes()},
                                    {"merge_ways", merge_ways},
                                    {"runs", runs},
                                    {"moments_slices", summary(moments_ms)},
                                    {"outliers_newest", summary(outliers_ms)},
                                    {"series_update_without_outlier_test", summary(update_only_ms)},
                                    {"median_and_quality_index", summary(quality_ms)},
                                    {"total", summary(total_ms)},
                                    {"live_qa_stage", summary(live_ms)},
                                    {"back_to_back_ms",
                                     {{"moments_slices", moments_device},
                                      {"median_volume", medians_device},
                                      {"quality_index", quality_device},
                                      {"volume_pass", pass_device},
                                      {"bucket_ranks", buckets_json}}},
                                    {"live_quality_index_reranked", live.quality_reranked()},
                                    {"per_command_ms",
                                     {{"fill_4_bytes", fill_cost},
                                      {"read_4_bytes_pageable", pageable_cost},
                                      {"read_4_bytes_pinned", pinned_cost},
                                      {"launch_1_voxel", launch_cost}}},
                                    {"idle_finish", summary(finish_ms)},
                                    {"blocking_read_4_bytes", summary(read_ms)}}
                         .dump());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rtfmri-bench_qa: per-TR cost of the QA measures on the device (JSON lines)"};
  std::string device;
  int window = 100, warmup = 10, runs = 100;
  app.add_option("--device", device, "OpenCL device (gpu, cpu, P:D)")->envname("RTFMRI_DEVICE");
  app.add_option("--window", window, "Volumes in the ring")->check(CLI::Range(3, 10000))->capture_default_str();
  app.add_option("--warmup", warmup, "TRs not counted")->check(CLI::Range(0, 100000))->capture_default_str();
  app.add_option("--runs", runs, "TRs timed")->check(CLI::Range(1, 100000))->capture_default_str();
  std::string grids = "small,large";
  int merge_ways = 8;
  app.add_option("--merge-ways", merge_ways, "The quality index's sorted runs merged at a time (quality_index)")
      ->check(CLI::Range(2, 64))
      ->capture_default_str();
  std::string series_kernel = "auto";
  app.add_option("--series-kernel", series_kernel,
                 "The outlier measure's sorted-series update (outliers_newest; the live stage keeps auto): auto, "
                 "shared (32 work-items a row) or per-item")
      ->check(CLI::IsMember({"auto", "shared", "per-item"}))
      ->capture_default_str();
  int series_lanes = rtf::DeviceSortedSeries::kDefaultLanes;
  app.add_option("--series-lanes", series_lanes, "The shared update's work-items a row (outliers_newest)")
      ->check(CLI::IsMember({4, 8, 16, 32}))
      ->capture_default_str();
  app.add_option("--grids", grids, "small (64x64x33), large (104x104x72) or both")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  auto dev = rtf::Device::open(device);
  const auto kernel = series_kernel == "shared"     ? rtf::DeviceSortedSeries::Kernel::kShared
                      : series_kernel == "per-item" ? rtf::DeviceSortedSeries::Kernel::kPerItem
                                                    : rtf::DeviceSortedSeries::Kernel::kAuto;
  if (grids.find("small") != std::string::npos)
    bench_grid(*dev, {64, 64, 33}, window, warmup, runs, kernel, series_lanes, merge_ways);
  if (grids.find("large") != std::string::npos)
    bench_grid(*dev, {104, 104, 72}, window, warmup, runs, kernel, series_lanes, merge_ways);
  return 0;
}
