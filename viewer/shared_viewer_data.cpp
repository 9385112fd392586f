// SharedViewerData: applying updates, keeping the recent volumes within their byte budget, copies for the UI.
#include "viewer/shared_viewer_data.hpp"

namespace rtf::viewer {

void SharedViewerData::apply(TrUpdate&& u) {
  std::lock_guard lock(mutex_);
  if (!u.volume.empty()) {
    recent_.emplace_back(u.sample.volume, u.volume);
    const size_t per_volume = u.volume.size() * sizeof(float);
    while (recent_.size() > 1 && recent_.size() * per_volume > budget_) recent_.pop_front();
  }
  const int64_t restarts = data_.restarts;
  data_.apply(std::move(u));
  if (data_.restarts != restarts) {
    while (recent_.size() > 1) recent_.pop_front();  // the new run's first volume only
  }
}

bool SharedViewerData::refresh(ViewerData& out) const {
  std::lock_guard lock(mutex_);
  if (out.version == data_.version && out.messages == data_.messages) return false;
  out = data_;
  return true;
}

std::vector<std::pair<int64_t, float>> SharedViewerData::voxel_series(int64_t index) const {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<int64_t, float>> out;
  for (const auto& [volume, data] : recent_) {
    if (index >= 0 && static_cast<size_t>(index) < data.size())
      out.emplace_back(volume, data[static_cast<size_t>(index)]);
  }
  return out;
}

}  // namespace rtf::viewer
