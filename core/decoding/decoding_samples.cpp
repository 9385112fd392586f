// label_volumes: each volume's covering events found by a scan over the run's events (runs hold hundreds of events at
// most), then classes sorted and blocks numbered in order of appearance.
#include "core/decoding/decoding_samples.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

namespace rtf {

std::vector<int64_t> DecodingSamples::class_counts() const {
  std::vector<int64_t> counts(classes.size(), 0);
  for (const int l : label) ++counts[static_cast<size_t>(l)];
  return counts;
}

namespace {

struct VolumeLabel {
  std::string condition;  // empty: none
  int event = -1;         // the first covering event (its index in the run), -1 for none or rest
  bool ambiguous = false;
};

VolumeLabel cover(const DecodingRun& run, int64_t t, double lag) {
  VolumeLabel v;
  const double time = static_cast<double>(t) * run.tr_s;
  for (size_t e = 0; e < run.events.size(); ++e) {
    const Event& ev = run.events[e];
    const double start = ev.onset_s + lag;
    const double end = start + (ev.duration_s > 0.0 ? ev.duration_s : run.tr_s);
    if (time < start || time >= end) continue;
    if (v.condition.empty()) {
      v.condition = ev.trial_type;
      v.event = static_cast<int>(e);
    } else if (v.condition != ev.trial_type) {
      v.ambiguous = true;
    }
  }
  return v;
}

}  // namespace

DecodingSamples label_volumes(const std::vector<DecodingRun>& runs, const LabelOptions& options) {
  if (runs.empty()) throw std::invalid_argument("decoding: no runs");
  if (!(options.lag_s >= 0.0) || !std::isfinite(options.lag_s)) {
    throw std::invalid_argument(fmt::format("decoding: the lag must be >= 0 s, not {}", options.lag_s));
  }
  std::set<std::string> named;
  for (const DecodingRun& r : runs) {
    if (r.volumes < 1 || !(r.tr_s > 0.0)) {
      throw std::invalid_argument(fmt::format("decoding: a run of {} volumes with TR {} s", r.volumes, r.tr_s));
    }
    for (const Event& e : r.events) named.insert(e.trial_type);
  }
  if (!options.rest.empty()) named.insert(options.rest);
  for (const std::string& c : options.conditions) {
    if (!named.contains(c)) throw std::invalid_argument(fmt::format("decoding: no event has the condition '{}'", c));
  }
  const std::set<std::string> wanted(options.conditions.begin(), options.conditions.end());
  const auto is_sample = [&](const std::string& c) { return !c.empty() && (wanted.empty() || wanted.contains(c)); };

  // First pass: each volume's condition and block key (run, event) or (run, -1 - rest stretch).
  DecodingSamples s;
  std::vector<std::string> condition;
  std::vector<std::pair<int, int>> block_key;
  for (size_t r = 0; r < runs.size(); ++r) {
    int rest_stretch = -1;
    bool in_rest = false;
    for (int64_t t = 0; t < runs[r].volumes; ++t) {
      VolumeLabel v = cover(runs[r], t, options.lag_s);
      const bool rest = v.condition.empty() && !v.ambiguous && !options.rest.empty();
      if (rest) {
        v.condition = options.rest;
        if (!in_rest) ++rest_stretch;
      }
      in_rest = rest;
      if (v.ambiguous) {
        ++s.ambiguous;
        continue;
      }
      if (!is_sample(v.condition)) {
        ++s.unlabelled;
        continue;
      }
      s.run.push_back(static_cast<int>(r));
      s.volume.push_back(static_cast<int>(t));
      condition.push_back(v.condition);
      block_key.emplace_back(static_cast<int>(r), rest ? -1 - rest_stretch : v.event);
    }
  }
  std::set<std::string> present(condition.begin(), condition.end());
  if (present.size() < 2) {
    throw std::invalid_argument(
        present.empty() ? std::string("decoding: no volume is labelled (check the events, --lag and --conditions)")
                        : fmt::format("decoding: every labelled volume is '{}': a decoder needs two classes or more",
                                      *present.begin()));
  }
  s.classes.assign(present.begin(), present.end());  // std::set: byte order
  std::map<std::pair<int, int>, int> block_ids;
  for (size_t i = 0; i < condition.size(); ++i) {
    const auto c = std::lower_bound(s.classes.begin(), s.classes.end(), condition[i]);
    s.label.push_back(static_cast<int>(c - s.classes.begin()));
    const auto [it, added] = block_ids.try_emplace(block_key[i], static_cast<int>(block_ids.size()));
    s.block.push_back(it->second);
  }
  return s;
}

}  // namespace rtf
