// SeedCorrelation: seed means, window-slot uploads and the sliding and cumulative map kernels.
#include "core/connectivity/seed_correlation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/device/launch.hpp"
#include "core/device/vector_width.hpp"

namespace rtf {
namespace {

constexpr const char* kSource = "connectivity_seed_map.cl";
constexpr size_t kLocalSize = 128;      // one voxel per work-item (GPUs)
constexpr size_t kVectorLocalSize = 8;  // vector work-items (CPU devices): small groups, as kernels/glm.cl's
constexpr int kStatePlanes = 14;        // kernels/connectivity_seed_map.cl

std::vector<int32_t> seed_regions(int64_t voxels, std::span<const int32_t> seed_voxels) {
  if (seed_voxels.empty()) throw std::invalid_argument("seed correlation: the seed is empty");
  std::vector<int32_t> region(static_cast<size_t>(std::max<int64_t>(voxels, 0)), -1);
  for (int32_t v : seed_voxels) {
    if (v < 0 || v >= voxels) {
      throw std::invalid_argument(
          fmt::format("seed correlation: seed voxel {} outside the grid of {} voxels", v, voxels));
    }
    region[static_cast<size_t>(v)] = 0;
  }
  return region;
}

}  // namespace

SeedCorrelation::SeedCorrelation(Device& device, const ImageHeader& grid, std::span<const int32_t> seed_voxels,
                                 int64_t slots, ConnectivityOptions options)
    : device_(device),
      voxels_(grid.voxels_per_volume()),
      slots_(slots),
      options_(options),
      vec_(options.vector_width == 0 ? preferred_vector_width(device) : options.vector_width),
      seed_(device, seed_regions(grid.voxels_per_volume(), seed_voxels), 1, slots) {
  check_connectivity_options("seed correlation", options_, slots);
  if (vec_ != 1 && vec_ != 2 && vec_ != 4 && vec_ != 8 && vec_ != 16) {
    throw std::invalid_argument(
        fmt::format("seed correlation: vector width {} (0, 1, 2, 4, 8 or 16)", options_.vector_width));
  }
  seed_valid_.assign(static_cast<size_t>(slots), 0);
  seen_.assign(static_cast<size_t>(slots), 0);
  const auto n = static_cast<size_t>(voxels_);
  const std::vector<std::string> defines{fmt::format("NVOX={}", voxels_), fmt::format("VEC={}", vec_)};
  if (options_.sliding) {
    const auto w = static_cast<size_t>(options_.window);
    window_slots_ = DeviceBuffer<cl_int>(device, w, CL_MEM_READ_ONLY);
    for (auto& s : staging_) s.resize(w);
    maps_[0] = DeviceBuffer<float>(device, n);
    maps_[1] = DeviceBuffer<float>(device, n);
    window_kernel_ = device.kernel(kSource, "seed_window_map", defines);
  }
  if (options_.cumulative) {
    state_ = DeviceBuffer<float>(device, n * kStatePlanes);
    maps_[2] = DeviceBuffer<float>(device, n);
    maps_[3] = DeviceBuffer<float>(device, n);
    cumulative_kernel_ = device.kernel(kSource, "seed_cumulative_map", defines);
    reset_cumulative();
  }
}

SeedCorrelation::~SeedCorrelation() {
  for (const ClEvent& staged : staged_) {
    if (!staged) continue;
    cl_event e = staged.get();
    clWaitForEvents(1, &e);  // a destructor never throws; a failed wait leaves nothing to do
  }
}

size_t SeedCorrelation::work_items() const {
  return (static_cast<size_t>(voxels_) + static_cast<size_t>(vec_) - 1) / static_cast<size_t>(vec_);
}

size_t SeedCorrelation::local_size() const {
  return vec_ > 1 ? kVectorLocalSize : kLocalSize;
}

void SeedCorrelation::set_profile(KernelProfile* profile) {
  profile_ = profile;
  seed_.set_profile(profile, "seed means");
}

void SeedCorrelation::reset_cumulative() {
  cumulative_volumes_ = 0;
  if (options_.cumulative) state_.fill(device_.queue(), 0.0f);
}

ClEvent SeedCorrelation::update(const DeviceBuffer<float>& data, std::span<const int64_t> slots_in_time_order,
                                int64_t newest_slot, const ClEvent* after) {
  const auto window =
      checked_window("seed correlation", slots_in_time_order, newest_slot, slots_, options_.window, seen_);
  if (static_cast<int64_t>(data.size()) < slots_ * voxels_) {
    throw std::invalid_argument(
        fmt::format("seed correlation: the data buffer has {} floats, {} slots of {} voxels need {}", data.size(),
                    slots_, voxels_, slots_ * voxels_));
  }
  enqueue_wait(device_.queue(), after);
  // Seed means: the newest volume's, and any window slot's not computed yet (the first TRs, or after a reset).
  seed_valid_[static_cast<size_t>(newest_slot)] = 0;
  for (int64_t slot : options_.sliding ? window : window.last(1)) {
    if (seed_valid_[static_cast<size_t>(slot)]) continue;
    seed_.enqueue(data, slot);
    seed_valid_[static_cast<size_t>(slot)] = 1;
  }
  ClEvent last;
  if (options_.sliding) {
    // The window's slots go up from host memory that stays untouched until that upload has finished.
    auto& host = staging_[static_cast<size_t>(next_staging_)];
    ClEvent& staged = staged_[static_cast<size_t>(next_staging_)];
    next_staging_ = 1 - next_staging_;
    if (staged) {
      cl_event e = staged.get();
      RTF_CL_CHECK(clWaitForEvents(1, &e));
    }
    for (size_t k = 0; k < window.size(); ++k) host[k] = static_cast<cl_int>(window[k]);
    ClEvent uploaded;
    RTF_CL_CHECK(clEnqueueWriteBuffer(device_.queue(), window_slots_.get(), CL_FALSE, 0, window.size() * sizeof(cl_int),
                                      host.data(), 0, nullptr, uploaded.out()));
    if (profile_) profile_->add("upload window slots", uploaded);
    staged = std::move(uploaded);
    window_volumes_ = static_cast<int64_t>(window.size());
    set_args(window_kernel_, data, seed_.means(), window_slots_, static_cast<cl_int>(window.size()), maps_[0],
             maps_[1]);
    last = launch<1>(device_.queue(), window_kernel_, {work_items()}, {local_size()});
    if (profile_) profile_->add("seed sliding map", last);
  }
  if (options_.cumulative) {
    const auto offset = static_cast<cl_ulong>(newest_slot * voxels_);
    set_args(cumulative_kernel_, data, offset, seed_.means(), static_cast<cl_int>(newest_slot), state_, maps_[2],
             maps_[3]);
    last = launch<1>(device_.queue(), cumulative_kernel_, {work_items()}, {local_size()});
    if (profile_) profile_->add("seed cumulative map", last);
    ++cumulative_volumes_;
  }
  return last;
}

std::vector<float> SeedCorrelation::read(const DeviceBuffer<float>& map) const {
  if (map.size() == 0) throw std::logic_error("seed correlation: that estimate is not enabled");
  return map.read_all(device_.queue());
}

SeedMaps seed_correlation_series(Device& device, const Image& bold, std::span<const int32_t> seed_voxels,
                                 ConnectivityOptions options) {
  const auto nvox = static_cast<size_t>(bold.header().voxels_per_volume());
  const int64_t nt = bold.nt();
  SeedCorrelation seed(device, bold.header(), seed_voxels, nt, options);
  DeviceBuffer<float> series(device, nvox * static_cast<size_t>(nt), CL_MEM_READ_ONLY);
  series.write(device.queue(), bold.data());
  std::vector<int64_t> slots(static_cast<size_t>(nt));
  for (int64_t t = 0; t < nt; ++t) {
    slots[static_cast<size_t>(t)] = t;
    const int64_t held = std::min(t + 1, options.sliding ? options.window : int64_t{1});
    seed.update(series,
                std::span<const int64_t>(slots).subspan(static_cast<size_t>(t + 1 - held), static_cast<size_t>(held)),
                t);
  }
  SeedMaps maps;
  if (options.sliding) {
    maps.sliding_r = seed.read(seed.sliding_r());
    maps.sliding_z = seed.read(seed.sliding_z());
  }
  if (options.cumulative) {
    maps.cumulative_r = seed.read(seed.cumulative_r());
    maps.cumulative_z = seed.read(seed.cumulative_z());
  }
  return maps;
}

}  // namespace rtf
