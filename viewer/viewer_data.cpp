// ViewerData::apply: merging a per-TR update into what the viewer shows.
#include "viewer/viewer_data.hpp"

#include <cmath>

namespace rtf::viewer {

namespace {

template <typename T>
void take_if_present(std::vector<T>& into, std::vector<T>& from) {
  if (!from.empty()) into = std::move(from);
}

}  // namespace

void ViewerData::apply(TrUpdate&& u) {
  const bool new_run = !u.run.empty() && u.run != run;
  const bool new_grid = u.dims != dims && u.dims[0] > 0;
  // A restarted server has another stream id and numbers its messages from 0 again (PUB may drop the first ones).
  const bool restarted = (!u.stream.empty() && !stream.empty() && u.stream != stream) ||
                         (u.seq >= 0 && last_seq >= 0 && u.seq <= last_seq);
  if (!u.stream.empty()) stream = u.stream;
  if ((new_run || new_grid || restarted) && messages > 0) {
    history.clear();
    volume.clear();
    t_map.clear();
    sliding_t_map.clear();
    cca_map.clear();
    seed_map.clear();
    connectivity.clear();
    roi_labels.clear();
    roi_label_names.clear();
    roi_labels_version = -1;
    qa.reset();
    ++restarts;
  }
  if (u.seq >= 0) {
    if (!restarted && last_seq >= 0 && u.seq > last_seq + 1) seq_gaps += u.seq - last_seq - 1;
    last_seq = u.seq;
  }
  if (!u.run.empty()) run = u.run;
  if (!u.device.empty()) device = u.device;
  if (!u.contrast.empty()) contrast = u.contrast;
  if (u.dims[0] > 0) {
    dims = u.dims;
    affine = u.affine;
  }
  take_if_present(volume, u.volume);
  take_if_present(t_map, u.t_map);
  take_if_present(sliding_t_map, u.sliding_t_map);
  take_if_present(cca_map, u.cca_map);
  take_if_present(seed_map, u.seed_map);
  if (!u.connectivity.empty()) {
    connectivity = std::move(u.connectivity);
    regions_count = u.regions_count;
  }
  if (u.roi_labels_version >= 0) {
    if (!u.roi_labels.empty()) {
      roi_labels = std::move(u.roi_labels);
    } else if (u.roi_labels_version != roi_labels_version) {
      roi_labels.clear();  // labels of another placement: wait for their frame
    }
    roi_labels_version = u.roi_labels_version;
    roi_label_names = std::move(u.roi_label_names);
  }
  if (!u.roi_status.empty()) roi_status = u.roi_status;
  take_if_present(regions, u.regions);
  take_if_present(roi_names, u.roi_names);
  take_if_present(design_columns, u.design_columns);
  for (auto [field, value] : {std::pair{&received, u.received},
                              {&analysed, u.analysed},
                              {&skipped, u.skipped},
                              {&dropped, u.dropped},
                              {&duplicates, u.duplicates},
                              {&missing, u.missing}}) {
    if (value >= 0) *field = value;
  }
  qa.apply(std::move(u.qa), u.sample.dvars);
  history.push_back(std::move(u.sample));
  ++messages;
  ++version;
}

std::array<double, 3> ViewerData::voxel_mm() const {
  std::array<double, 3> v{};
  for (int c = 0; c < 3; ++c) {
    v[c] = std::sqrt(affine[c] * affine[c] + affine[4 + c] * affine[4 + c] + affine[8 + c] * affine[8 + c]);
    if (!(v[c] > 0)) v[c] = 1.0;
  }
  return v;
}

}  // namespace rtf::viewer
