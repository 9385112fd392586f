// The samples a decoder learns from: the volumes of one or more runs labelled by their runs' events
// (docs/algorithms/decoding.md). Volume t of a run is acquired at t TR; it takes the condition of the events whose
// interval, shifted by the haemodynamic lag, contains that time: [onset + lag, onset + duration + lag) (an event of
// duration 0 covers one TR from onset + lag). Volumes covered by events of two conditions are ambiguous and left out;
// volumes covered by none are left out, or labelled `rest` when a rest condition is named. Each event that labels at
// least one volume is a block (the unit of leave-one-block-out), and so is each unbroken stretch of rest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/design/events.hpp"

namespace rtf {

struct DecodingRun {
  int64_t volumes = 0;
  double tr_s = 0.0;
  std::vector<Event> events;
};

struct LabelOptions {
  double lag_s = 4.0;                   // the haemodynamic lag added to every event
  std::string rest;                     // non-empty: the condition of volumes no event covers
  std::vector<std::string> conditions;  // non-empty: only these conditions are samples (rest included if named)
};

struct DecodingSamples {
  std::vector<std::string> classes;  // sorted (byte order), as scikit-learn's classes_
  // One entry per sample, in run order, then volume order:
  std::vector<int> run, volume, label, block;  // label: an index into classes; block: global over the runs
  int64_t ambiguous = 0;                       // volumes left out: covered by events of two conditions
  int64_t unlabelled = 0;                      // volumes left out: no event (and no rest condition), or not a condition
  size_t size() const { return label.size(); }
  std::vector<int64_t> class_counts() const;
};

// Throws std::invalid_argument for no runs, a run without volumes or TR, a condition of `conditions` that no event
// has, a negative lag, or fewer than two classes among the samples (naming the one class found).
DecodingSamples label_volumes(const std::vector<DecodingRun>& runs, const LabelOptions& options);

}  // namespace rtf
