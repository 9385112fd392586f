// Seeded fault plan for replay.
#include "sim/replay/fault_plan.hpp"

#include <random>
#include <utility>

namespace rtf::sim {

std::vector<PlannedSend> plan_faults(int64_t first, int64_t count, const FaultOptions& o) {
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<PlannedSend> plan;
  plan.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    PlannedSend s;
    s.index = first + i;
    // One fault per volume at most, in a fixed priority, so each rate means what it says.
    const double u = uniform(rng);
    double edge = o.drop;
    if (u < edge) {
      s.tamper = stream::Tamper::kDrop;
    } else if (u < (edge += o.duplicate)) {
      s.tamper = stream::Tamper::kDuplicate;
    } else if (u < (edge += o.corrupt)) {
      const bool header = o.corrupt_target == CorruptTarget::kHeader ||
                          (o.corrupt_target == CorruptTarget::kBoth && uniform(rng) < 0.5);
      s.tamper = header ? stream::Tamper::kCorruptHeader : stream::Tamper::kCorruptPayload;
    }
    s.delay_s = o.jitter_s > 0 ? o.jitter_s * uniform(rng) : 0.0;
    plan.push_back(s);
  }
  for (size_t i = 0; i + 1 < plan.size(); ++i) {
    if (o.reorder > 0 && uniform(rng) < o.reorder) {
      std::swap(plan[i], plan[i + 1]);
      ++i;  // a volume moves at most one place
    }
  }
  if (o.disconnect_after > 0 && o.disconnect_after < count)
    plan[static_cast<size_t>(o.disconnect_after)].reconnect_before = true;
  return plan;
}

}  // namespace rtf::sim
