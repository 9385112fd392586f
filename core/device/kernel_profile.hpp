// KernelProfile: an opt-in per-stage breakdown of device time for benchmarks. Code that supports it asks mode()
// whether to create events, hands each profiled launch (or span of launches) to add() under a stage name, and
// the owner calls collect() after the queue has finished to sum the device times per stage. With no profile
// attached, launches create no events (no overhead on the live path).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/device/cl_handle.hpp"
#include "core/device/launch.hpp"

namespace rtf {

class KernelProfile {
 public:
  // Records a launch (first == last) or a span of launches: device time from first's start to last's end.
  void add(const std::string& stage, ClEvent first, ClEvent last);
  void add(const std::string& stage, const ClEvent& event) { add(stage, event, event); }

  // Waits for every pending event and adds its device time (ms) to its stage; pending events are released.
  void collect();

  // Summed device time per stage and number of launches per stage since the last reset().
  const std::map<std::string, double>& total_ms() const { return total_ms_; }
  const std::map<std::string, int>& launches() const { return launches_; }
  void reset();

 private:
  struct Pending {
    std::string stage;
    ClEvent first, last;
  };
  std::vector<Pending> pending_;
  std::map<std::string, double> total_ms_;
  std::map<std::string, int> launches_;
};

// EventMode for a launch that a (possibly null) profile may want to time.
inline EventMode profile_mode(const KernelProfile* profile) {
  return profile ? EventMode::kReturn : EventMode::kNone;
}

}  // namespace rtf
