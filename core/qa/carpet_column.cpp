// Carpet voxels chosen on the host once; each TR one gather launch and one small read (started by enqueue_column).
#include "core/qa/carpet_column.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/device/launch.hpp"

namespace rtf {

namespace {

constexpr size_t kLocalSize = 128;

// `take` of `from`, evenly spread (every from.size() / take-th, starting half a step in).
void take_evenly(const std::vector<int>& from, int64_t take, std::vector<int>& out) {
  const auto n = static_cast<int64_t>(from.size());
  take = std::min(take, n);
  for (int64_t i = 0; i < take; ++i) {
    const int64_t k = (2 * i + 1) * n / (2 * take);
    out.push_back(from[static_cast<size_t>(k)]);
  }
}

}  // namespace

CarpetVoxels carpet_voxels(std::span<const uint8_t> mask, int64_t rows, std::span<const uint8_t> preferred) {
  if (!preferred.empty() && preferred.size() != mask.size()) {
    throw std::invalid_argument(
        fmt::format("carpet_voxels: a preferred set of {} voxels for a mask of {}", preferred.size(), mask.size()));
  }
  std::vector<int> first, rest;
  for (size_t v = 0; v < mask.size(); ++v) {
    if (mask[v] == 0) continue;
    (!preferred.empty() && preferred[v] != 0 ? first : rest).push_back(static_cast<int>(v));
  }
  CarpetVoxels out;
  const auto total = static_cast<int64_t>(first.size() + rest.size());
  if (rows <= 0 || total == 0) return out;
  int64_t take_first = first.empty() ? 0 : std::max<int64_t>(1, rows * static_cast<int64_t>(first.size()) / total);
  if (!rest.empty() && take_first >= rows && rows > 1) take_first = rows - 1;
  take_first = std::min<int64_t>(take_first, static_cast<int64_t>(first.size()));
  take_evenly(first, take_first, out.indices);
  out.split = first.empty() ? 0 : static_cast<int64_t>(out.indices.size());
  take_evenly(rest, rows - static_cast<int64_t>(out.indices.size()), out.indices);
  return out;
}

DeviceCarpetColumn::DeviceCarpetColumn(Device& device, int64_t voxels, std::vector<int> indices)
    : device_(device),
      voxels_(voxels),
      count_(indices.size()),
      kernel_(device.kernel("gather_voxels.cl", "gather_voxels")),
      indices_(device, std::max<size_t>(indices.size(), 1)),
      values_(device, std::max<size_t>(indices.size(), 1)) {
  for (const int i : indices) {
    if (i < 0 || i >= voxels) {
      throw std::invalid_argument(fmt::format("DeviceCarpetColumn: voxel {} outside a volume of {}", i, voxels));
    }
  }
  if (!indices.empty()) indices_.write(device.queue(), std::span<const int>(indices));
  column_ = PinnedHost<float>(device, count_);
}

std::vector<float> DeviceCarpetColumn::column(const DeviceBuffer<float>& volume) {
  enqueue_column(volume);
  RTF_CL_CHECK(clFinish(device_.queue()));
  return column_result();
}

std::vector<float> DeviceCarpetColumn::column_result() const {
  return {column_.span().begin(), column_.span().end()};
}

void DeviceCarpetColumn::enqueue_column(const DeviceBuffer<float>& volume) {
  if (volume.size() < static_cast<size_t>(voxels_)) {
    throw std::invalid_argument(
        fmt::format("DeviceCarpetColumn: a volume of {} floats for {} voxels", volume.size(), voxels_));
  }
  if (count_ == 0) return;
  set_args(kernel_, volume, indices_, static_cast<int>(count_), values_);
  launch<1>(device_.queue(), kernel_, {count_}, {kLocalSize}, {}, EventMode::kNone);
  values_.read_async(device_.queue(), column_.span());
}

}  // namespace rtf
