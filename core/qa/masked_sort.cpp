// DeviceMaskedSort: one launch sorting the tiles of every row, one per merge pass.
#include "core/qa/masked_sort.hpp"

#include <fmt/format.h>

#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/device/launch.hpp"
#include "core/mask/masked_voxels.hpp"

namespace rtf {

int64_t DeviceMaskedSort::row_bytes(int64_t count) {
  const int64_t n = std::max<int64_t>(count, 1);
  const int64_t tiled = (n + kTile - 1) / kTile * kTile;
  return 4 * n + 8 * tiled + 4;
}

DeviceMaskedSort::DeviceMaskedSort(Device& device, std::span<const uint8_t> mask, int max_rows, int merge_ways)
    : device_(device), voxels_(static_cast<int64_t>(mask.size())), max_rows_(max_rows), merge_ways_(merge_ways) {
  if (mask.empty() || voxels_ > std::numeric_limits<int>::max() / 2) {
    throw std::invalid_argument(fmt::format("DeviceMaskedSort: a mask of {} voxels", mask.size()));
  }
  if (merge_ways < 2 || merge_ways > 64) {
    throw std::invalid_argument(fmt::format("DeviceMaskedSort: runs merged {} at a time (2 to 64)", merge_ways));
  }
  if (max_rows < 1) throw std::invalid_argument(fmt::format("DeviceMaskedSort: {} rows at once", max_rows));
  if (static_cast<size_t>(kLocalSize) > device.info().max_work_group_size) {
    throw std::runtime_error(fmt::format("DeviceMaskedSort: the device's work-groups hold {} items, {} needed",
                                         device.info().max_work_group_size, kLocalSize));
  }
  const std::vector<std::string> defines{fmt::format("LOCAL_SIZE={}", kLocalSize), fmt::format("TILE={}", kTile)};
  sort_tiles_ = device.kernel("rank_correlation.cl", "sort_tiles", defines);
  merge_ = device.kernel("rank_correlation.cl", "merge_runs", defines);
  const std::vector<int> masked = masked_voxels(mask);
  count_ = static_cast<int>(masked.size());
  const auto n = static_cast<size_t>(std::max(count_, 1));
  tile_count_ = static_cast<int>((n + kTile - 1) / kTile);
  const auto tiled = static_cast<size_t>(total());
  const auto rows = static_cast<size_t>(max_rows_);
  masked_ = upload_masked_voxels(device, masked);
  bad_ = DeviceBuffer<int>(device, rows);
  keys_ = DeviceBuffer<uint32_t>(device, n * rows);
  tiles_ = DeviceBuffer<uint32_t>(device, tiled * rows);
  merged_ = DeviceBuffer<uint32_t>(device, tiled * rows);
}

const DeviceBuffer<uint32_t>& DeviceMaskedSort::enqueue(const DeviceBuffer<float>& volumes, int first, int rows,
                                                        bool flag_nonfinite) {
  if (rows < 1 || rows > max_rows_ || first < 0 ||
      volumes.size() < static_cast<size_t>(voxels_) * static_cast<size_t>(first + rows)) {
    throw std::invalid_argument(
        fmt::format("DeviceMaskedSort: rows {}..{} of {} floats (volumes of {}, {} rows at once)", first,
                    first + rows - 1, volumes.size(), voxels_, max_rows_));
  }
  const cl_command_queue q = device_.queue();
  const auto r = static_cast<size_t>(rows);
  if (flag_nonfinite) bad_.fill_async(q, 0);
  set_args(sort_tiles_, volumes, static_cast<int>(voxels_), first, masked_, count_, keys_, tiles_, bad_);
  launch<2>(q, sort_tiles_, {static_cast<size_t>(tile_count_) * kLocalSize, r}, {size_t{kLocalSize}, 1}, {},
            EventMode::kNone);
  const int length = total();
  DeviceBuffer<uint32_t>* from = &tiles_;
  DeviceBuffer<uint32_t>* to = &merged_;
  for (int64_t run = kTile; run < length; run *= merge_ways_) {
    set_args(merge_, *from, *to, length, static_cast<int>(run), merge_ways_);
    launch<2>(q, merge_, {static_cast<size_t>(length), r}, {size_t{kLocalSize}, 1}, {}, EventMode::kNone);
    std::swap(from, to);
  }
  return *from;
}

}  // namespace rtf
