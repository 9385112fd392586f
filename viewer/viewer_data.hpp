// ViewerData: everything the viewer shows, built from the server's per-TR results (docs/protocol.md §8) or from a
// recorded session: the newest volume and maps, the R x R matrix, and the per-TR history (motion, FD, feedback, ROI
// values, design row, latency per stage) and the run's QA (qa_data.hpp). No OpenGL here.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "viewer/qa_data.hpp"

namespace rtf::viewer {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The latency steps drawn stacked, in pipeline order (names of the header's latency_ms fields; each bar segment is
// the time from the previous step that happened).
inline const std::vector<std::string>& latency_step_names() {
  static const std::vector<std::string> names{"written", "uploaded", "motion",    "smoothed",
                                              "stats",   "feedback", "end_to_end"};
  return names;
}

struct TrSample {
  int64_t volume = 0;
  double feedback = kNaN;
  std::array<double, 6> motion{kNaN, kNaN, kNaN, kNaN, kNaN, kNaN};  // mm, mm, mm, deg, deg, deg
  double fd_mm = kNaN;
  double dvars = kNaN;
  std::vector<double> rois;        // feedback ROI means, in roi_names order
  std::vector<double> design_row;  // this volume's design matrix row, in design_columns order
  std::vector<double> latency_ms;  // cumulative ms after "received", in latency_step_names() order (NaN: absent)
  int64_t skipped_before = 0;      // volumes skipped since the previous sample
};

// One message's worth of data (a PUB message, or one volume of a recorded session).
struct TrUpdate {
  std::string run;
  std::string device;
  std::string contrast;  // of t_map
  std::string stream;    // the publisher's random id (changes when the server restarts)
  int64_t seq = -1;      // PUB sequence number (-1: none)
  std::array<int64_t, 3> dims{0, 0, 0};
  std::array<double, 16> affine{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};  // voxel -> mm, row-major
  std::vector<float> volume, t_map, sliding_t_map, cca_map, seed_map;
  std::vector<float> connectivity;  // R x R row-major
  int64_t regions_count = 0;        // R
  std::vector<std::string> regions, roi_names, design_columns;
  // Counters as the server reports them (-1: not reported).
  int64_t received = -1, analysed = -1, skipped = -1, dropped = -1, duplicates = -1, missing = -1;
  // The ROIs on the grid (docs/protocol.md §8 `roi_labels`): bit k of a voxel's value set when it lies in
  // roi_label_names[k]. The frame comes now and then; the header names its version every TR (-1: no ROIs yet).
  std::vector<float> roi_labels;
  std::vector<std::string> roi_label_names;
  int64_t roi_labels_version = -1;
  std::string roi_status;  // pending | ready | failed ("" without subject-space ROIs)
  QaUpdate qa;             // the QA stage's values, alarms and frames (qa.present false: no `qa` in the header)
  TrSample sample;
};

struct ViewerData {
  std::string run, device, contrast;
  std::array<int64_t, 3> dims{0, 0, 0};
  std::array<double, 16> affine{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  std::vector<float> volume, t_map, sliding_t_map, cca_map, seed_map, connectivity;
  int64_t regions_count = 0;
  std::vector<std::string> regions, roi_names, design_columns;
  int64_t received = -1, analysed = -1, skipped = -1, dropped = -1, duplicates = -1, missing = -1;
  std::vector<float> roi_labels;  // bits per voxel, of roi_labels_version (empty: none yet)
  std::vector<std::string> roi_label_names;
  int64_t roi_labels_version = -1;
  std::string roi_status;
  std::vector<TrSample> history;  // one per analysed TR, in arrival order
  QaState qa;                     // this run's QA
  int64_t messages = 0;           // updates applied
  int64_t seq_gaps = 0;           // PUB messages lost (sequence gaps)
  int64_t last_seq = -1;
  std::string stream;
  int64_t restarts = 0;  // server restarts or new runs seen (history cleared)
  uint64_t version = 0;  // +1 per applied update

  // Applies one update: replaces the maps it carries, appends its sample. A new run, another grid or a sequence
  // number not above the last one (a restarted server) clears the history first (and the ROI labels and the QA). ROI
  // labels are kept until the header names another version; those of another version are dropped until its frame comes.
  void apply(TrUpdate&& update);

  int64_t voxels() const { return dims[0] * dims[1] * dims[2]; }
  // Voxel size in mm along each axis (column norms of the affine).
  std::array<double, 3> voxel_mm() const;
};

}  // namespace rtf::viewer
