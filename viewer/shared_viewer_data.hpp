// SharedViewerData: ViewerData behind a mutex, written by the network side and read by the UI thread, plus the most
// recent volumes (bounded in bytes) for the time series of the voxel under the crosshair. The UI copies what it draws
// only when the version changed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

#include "viewer/viewer_data.hpp"

namespace rtf::viewer {

class SharedViewerData {
 public:
  explicit SharedViewerData(size_t volume_budget_bytes = size_t{256} << 20) : budget_(volume_budget_bytes) {}

  void apply(TrUpdate&& update);

  // Copies the data into `out` if `out` is older; returns whether it did.
  bool refresh(ViewerData& out) const;

  // The value of voxel `index` in each recent volume: (volume index, value), oldest first.
  std::vector<std::pair<int64_t, float>> voxel_series(int64_t index) const;

 private:
  mutable std::mutex mutex_;
  ViewerData data_;
  std::deque<std::pair<int64_t, std::vector<float>>> recent_;
  size_t budget_;
};

}  // namespace rtf::viewer
