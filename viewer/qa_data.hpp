// The scanner-side QA the viewer shows (docs/protocol.md §8 `qa`, `qa_alarm`, frames `qa_tsnr`, `qa_cnr` and
// `qa_carpet`): QaUpdate is one message's worth, QaState what a run has accumulated (traces, the carpet ring, the last
// tSNR and CNR maps, the usable-data tally, flagged slices, the newest alarms). No OpenGL here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace rtf::viewer {

inline constexpr double kQaNaN = std::numeric_limits<double>::quiet_NaN();

// Alarm thresholds of the QA stage (NaN: no alarm on that metric).
struct QaThresholds {
  double fd_mm = kQaNaN, outlier_fraction = kQaNaN, slice_z = kQaNaN, tsnr_min = kQaNaN;
};

// One row of the usable-data tally: volumes with FD at or below fd_threshold_mm so far.
struct QaUsable {
  double fd_threshold_mm = kQaNaN;
  int64_t frames = 0;
  double minutes = kQaNaN;
  double minutes_to_target = kQaNaN;  // NaN: never at this rate
};

struct QaAlarm {
  std::string metric;  // fd_mm | outlier_fraction | slice_z | tsnr_min | usable_minutes (others kept as sent)
  int64_t volume = -1;
  double value = kQaNaN, threshold = kQaNaN;
  std::string where;  // e.g. "slice 12"; may be empty
};

struct QaFlaggedSlice {
  int64_t volume = 0;
  int64_t slice = 0;
  double z = kQaNaN;  // the slice's z score when it was the volume's worst slice; NaN otherwise (not sent)
};

// One volume's QA values (NaN: null, undefined at that volume).
struct QaSample {
  int64_t volume = 0;
  double fd_mm = kQaNaN;  // FD of the respiration-filtered motion
  double dvars = kQaNaN;  // the header's top-level "dvars" (qa.dvars when that is absent)
  double global_signal = kQaNaN, outlier_fraction = kQaNaN, quality_index = kQaNaN;
  double slice_z_worst = kQaNaN, tsnr_median = kQaNaN;
  double sliding_tsnr_median = kQaNaN;  // the median tSNR over the GLM's sliding window
  double cnr_p95 = kQaNaN;              // with a design: the 95th percentile of the contrast's CNR in the mask
};

// The `qa` object, `qa_alarm` array and QA frames of one message.
struct QaUpdate {
  bool present = false;  // the header had a `qa` object
  QaSample sample;       // sample.volume: qa.volume (the message's volume when absent)
  int64_t worst_slice = -1;
  std::vector<int64_t> flagged_slices;
  std::vector<QaUsable> usable;
  double target_minutes = kQaNaN;
  bool has_thresholds = false;
  QaThresholds thresholds;
  int64_t carpet_rows = -1;  // -1: not sent
  int64_t carpet_split = 0;
  bool tsnr_map_in_this_message = false;
  std::vector<float> tsnr;           // frame qa_tsnr (empty: not in this message)
  std::vector<float> cnr;            // frame qa_cnr (empty: not in this message; sent only with a design)
  std::vector<float> carpet_column;  // frame qa_carpet (empty: not in this message)
  std::vector<QaAlarm> alarms;       // qa_alarm, in the header's order
};

// The carpet: a ring of the newest columns (one per volume, `rows` values each, z-scored by the server); rows before
// `split` are grey matter (0: unknown).
class QaCarpet {
 public:
  QaCarpet() = default;
  explicit QaCarpet(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  // Empties the ring and fixes its row count.
  void restart(int64_t rows, int64_t split);
  // Appends one column (a column of another length than `rows` restarts the ring with that length first).
  void append(int64_t volume, std::span<const float> column);
  void set_split(int64_t split) { split_ = split; }

  int64_t rows() const { return rows_; }
  int64_t split() const { return split_; }
  size_t capacity() const { return capacity_; }
  size_t columns() const { return count_; }
  // Column k (0: the oldest kept) and its volume.
  std::span<const float> column(size_t k) const;
  int64_t column_volume(size_t k) const;
  int64_t restarts() const { return restarts_; }  // restarts that discarded columns
  uint64_t version() const { return version_; }   // +1 per change

 private:
  size_t capacity_ = 600;
  int64_t rows_ = 0, split_ = 0;
  std::vector<float> values_;     // slot s at [s * rows, (s + 1) * rows)
  std::vector<int64_t> volumes_;  // per slot
  size_t next_ = 0, count_ = 0;   // the slot written next; columns kept
  int64_t restarts_ = 0;
  uint64_t version_ = 0;
};

inline constexpr size_t kQaMaxAlarms = 50;
inline constexpr size_t kQaMaxFlaggedSlices = 1000;

// A run's QA. Reset by a new run, another grid or a restarted server (ViewerData::apply).
struct QaState {
  bool seen = false;              // a message of this run carried `qa`
  bool on = false;                // the newest message carried `qa`
  std::vector<QaSample> samples;  // one per volume with `qa`, in arrival order
  QaSample latest;
  int64_t worst_slice = -1;
  std::vector<int64_t> flagged_now;  // the newest message's flagged slices
  QaThresholds thresholds;
  QaCarpet carpet;
  std::vector<float> tsnr;  // the last tSNR map (x fastest; empty: none yet)
  int64_t tsnr_volume = -1;
  uint64_t tsnr_version = 0;  // +1 per map received
  std::vector<float> cnr;     // the last CNR map of the design's contrast (empty: none yet, or no design)
  int64_t cnr_volume = -1;
  uint64_t cnr_version = 0;  // +1 per map received
  std::vector<QaUsable> usable;
  double target_minutes = kQaNaN;
  std::vector<QaFlaggedSlice> flagged;  // oldest first, the newest kQaMaxFlaggedSlices
  std::vector<QaAlarm> alarms;          // newest message's first (in its order), at most kQaMaxAlarms
  int64_t alarms_seen = 0;              // in this run, including those no longer listed

  void reset();
  // One message's QA; `dvars` is the header's top-level DVARS of the same volume (NaN: keep qa.dvars). A `qa` that
  // repeats the newest sample's volume adds no sample or flagged slice; an alarm already listed (same metric, volume
  // and place) is not listed again.
  void apply(QaUpdate&& update, double dvars);
};

// "0.2 mm: 40 frames, 0.33 min - 12.1 more min to reach 12.5 min" (or "... - reached 12.5 min", "... - never at this
// rate"; no target: the tally alone).
std::string usable_line(const QaUsable& row, double target_minutes);
// "volume 41  fd_mm 0.9 (threshold 0.5)  slice 12".
std::string alarm_line(const QaAlarm& alarm);

}  // namespace rtf::viewer
