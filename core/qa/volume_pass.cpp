// DeviceQaVolumePass: a 2D launch (work-groups over each slice's voxels), its groups' compensated sums and the carpet
// column read in one command, added in double by result().
#include "core/qa/volume_pass.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/device/launch.hpp"
#include "core/qa/voxel_moments.hpp"

namespace rtf {

namespace {
constexpr size_t kGroupFloats = 6;

size_t chunks_for(std::array<int64_t, 3> dims, size_t voxels_an_item, size_t local_size) {
  const auto slice_voxels = static_cast<size_t>(std::max<int64_t>(dims[0] * dims[1], 1));
  if (voxels_an_item == 0) voxels_an_item = dims[0] * dims[1] * dims[2] < 400000 ? 4 : 8;
  const size_t per_group = voxels_an_item * local_size;
  return std::max<size_t>(1, (slice_voxels + per_group - 1) / per_group);
}
}  // namespace

DeviceQaVolumePass::DeviceQaVolumePass(Device& device, std::array<int64_t, 3> dims, std::span<const uint8_t> mask,
                                       std::span<const int> carpet_voxels, ResultArena* arena, size_t voxels_an_item)
    : device_(device),
      dims_(dims),
      voxels_(dims[0] * dims[1] * dims[2]),
      carpet_rows_(static_cast<int64_t>(carpet_voxels.size())),
      kernel_(device.kernel("qa_volume_pass.cl", "qa_volume_pass", {fmt::format("LOCAL_SIZE={}", kLocalSize)})) {
  if (dims[0] <= 0 || dims[1] <= 0 || dims[2] <= 0 || voxels_ > std::numeric_limits<int>::max()) {
    throw std::invalid_argument(fmt::format("DeviceQaVolumePass: a grid of {}x{}x{}", dims[0], dims[1], dims[2]));
  }
  if (mask.size() != static_cast<size_t>(voxels_)) {
    throw std::invalid_argument(
        fmt::format("DeviceQaVolumePass: a mask of {} voxels for a grid of {}", mask.size(), voxels_));
  }
  std::vector<int> row_of(static_cast<size_t>(voxels_), -1);
  for (size_t r = 0; r < carpet_voxels.size(); ++r) {
    const int v = carpet_voxels[r];
    if (v < 0 || v >= voxels_) {
      throw std::invalid_argument(fmt::format("DeviceQaVolumePass: carpet voxel {} outside a grid of {}", v, voxels_));
    }
    row_of[static_cast<size_t>(v)] = static_cast<int>(r);
  }
  chunks_ = chunks_for(dims, voxels_an_item, kLocalSize);  // (result_bytes() counts the same groups)
  mask_ = DeviceBuffer<uint8_t>(device, mask.size());
  mask_.write(device.queue(), mask);
  carpet_row_ = DeviceBuffer<int>(device, row_of.size());
  carpet_row_.write(device.queue(), std::span<const int>(row_of));
  const size_t floats = result_bytes(dims, carpet_voxels.size(), voxels_an_item) / sizeof(float);
  if (arena != nullptr) {
    out_ = arena->take<float>(floats, out_host_);
    arena_reads_ = true;
  } else {
    out_ = DeviceBuffer<float>(device, floats);
    out_pinned_ = PinnedHost<float>(device, floats);
    out_host_ = out_pinned_.span();
  }
}

size_t DeviceQaVolumePass::result_bytes(std::array<int64_t, 3> dims, size_t carpet_rows, size_t voxels_an_item) {
  const size_t chunks = chunks_for(dims, voxels_an_item, kLocalSize);
  return sizeof(float) * (kGroupFloats * chunks * static_cast<size_t>(std::max<int64_t>(dims[2], 1)) + carpet_rows);
}

void DeviceQaVolumePass::enqueue(const DeviceBuffer<float>& ring, int newest, int previous,
                                 DeviceVoxelMoments& cumulative, DeviceVoxelMoments* sliding, int leaving) {
  const int slots = static_cast<int>(ring.size() / static_cast<size_t>(voxels_));
  const auto bad_slot = [&](int slot, int lowest) { return slot < lowest || slot >= slots; };
  if (bad_slot(newest, 0) || bad_slot(previous, -1) || (sliding != nullptr && bad_slot(leaving, -1))) {
    throw std::invalid_argument(
        fmt::format("DeviceQaVolumePass: slots {}, {}, {} of a ring of {}", newest, previous, leaving, slots));
  }
  if (cumulative.voxels() != voxels_ || (sliding != nullptr && sliding->voxels() != voxels_)) {
    throw std::invalid_argument("DeviceQaVolumePass: moments of another grid");
  }
  const DeviceVoxelMoments::Running c = cumulative.external_add();
  // Without a sliding window the cumulative state stands in for its buffers (the kernel does not touch them).
  const int leaving_arg = sliding == nullptr ? -2 : leaving;
  const DeviceVoxelMoments::Running s =
      sliding == nullptr ? c : (leaving >= 0 ? sliding->external_replace() : sliding->external_add());
  set_args(kernel_, ring, static_cast<int>(voxels_), static_cast<int>(dims_[0] * dims_[1]), newest, previous,
           leaving_arg, mask_, c.mean, c.m2, c.inv_n, s.mean, s.m2, s.inv_n, carpet_row_, out_);
  launch<2>(device_.queue(), kernel_, {chunks_ * kLocalSize, static_cast<size_t>(dims_[2])}, {kLocalSize, 1}, {},
            EventMode::kNone);
  if (!arena_reads_) out_.read_async(device_.queue(), out_host_);
  pending_ = true;
  with_dvars_ = previous >= 0;
}

QaVolumeMeasures DeviceQaVolumePass::result() const {
  if (!pending_) throw std::logic_error("DeviceQaVolumePass: result() before enqueue()");
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  const std::span<const float> out = out_host_;
  QaVolumeMeasures m;
  m.slice_means.resize(static_cast<size_t>(dims_[2]));
  double total = 0.0, dvars_sum = 0.0;
  int64_t total_count = 0, dvars_count = 0;
  for (size_t z = 0; z < m.slice_means.size(); ++z) {
    double sum = 0.0;
    int64_t count = 0;
    for (size_t g = z * chunks_; g < (z + 1) * chunks_; ++g) {
      const float* group = out.data() + kGroupFloats * g;
      sum += static_cast<double>(group[0]) + static_cast<double>(group[1]);
      dvars_sum += static_cast<double>(group[2]) + static_cast<double>(group[3]);
      count += std::bit_cast<int32_t>(group[4]);
      dvars_count += std::bit_cast<int32_t>(group[5]);
    }
    m.slice_means[z] = count > 0 ? sum / static_cast<double>(count) : kNaN;
    total += sum;
    total_count += count;
  }
  m.global = total_count > 0 ? total / static_cast<double>(total_count) : kNaN;
  m.dvars = with_dvars_ && dvars_count > 0 ? std::sqrt(dvars_sum / static_cast<double>(dvars_count)) : kNaN;
  const size_t carpet_at = kGroupFloats * chunks_ * m.slice_means.size();
  m.carpet.assign(out.begin() + static_cast<std::ptrdiff_t>(carpet_at), out.end());
  return m;
}

}  // namespace rtf
