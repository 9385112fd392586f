// FIRMM's tally of low-motion data (Dosenbach et al. 2017, NeuroImage 161:80; FIRMM's documentation, "Summary
// table"): for each FD threshold, the frames kept and their minutes, and the scan time still needed to reach a target
// of usable minutes. FIRMM keeps the frames with FD below the threshold; Power et al. 2014's offline censoring (also
// the frame before and the two after each censored frame, then kept runs shorter than 5 frames) is the other rule.
// docs/algorithms/qa.md.
#pragma once

#include <string>
#include <vector>

namespace rtf {

enum class CensorRule {
  kFirmm,     // keep FD < threshold (the first frame, FD 0, included)
  kPower2014  // censor FD > threshold with 1 frame before and 2 after, then kept runs shorter than 5 frames
};

// "firmm" or "power2014"; throws std::invalid_argument otherwise.
CensorRule parse_censor_rule(const std::string& name);

// The frames of `fd` kept at `threshold` (mm) by `rule` (a non-finite FD is censored).
std::vector<bool> kept_frames(const std::vector<double>& fd, double threshold, CensorRule rule);

struct UsableTally {
  double threshold_mm = 0;
  int frames = 0;                // kept
  double minutes = 0;            // frames x TR / 60
  double minutes_to_target = 0;  // scanning still needed for `target` usable minutes (0: reached; inf: no frame
                                 // kept yet); the run so far's usable fraction assumed for the rest
};

// The tally of the run so far for each threshold: minutes_to_target = (target - usable) x elapsed / usable, the
// per-run extrapolation (FIRMM predicts from "the data collected so far" without publishing its formula).
std::vector<UsableTally> usable_tally(const std::vector<double>& fd, double tr_s, const std::vector<double>& thresholds,
                                      double target_minutes, CensorRule rule);

}  // namespace rtf
