// ChunkSchedule: in order first, then backups of the chunk expected to finish last, when this slot would beat it.
#include "core/scale/chunk_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/device/device_info.hpp"

namespace rtf {

namespace {
constexpr double kMinimumGain = 0.25;  // seconds
}  // namespace

ChunkSchedule::ChunkSchedule(size_t chunks, size_t slots, std::vector<double> peaks, size_t capacity)
    : available_(chunks),
      done_(new std::atomic<bool>[std::max(chunks, capacity)]),
      running_(std::max(chunks, capacity)),
      seconds_(slots, 0.0),
      finished_(slots, 0),
      peaks_(std::move(peaks)),
      lower_(slots, 0.0) {
  for (size_t k = 0; k < running_.size(); ++k) done_[k] = false;
  if (peaks_.size() != slots) peaks_.assign(slots, 1.0);
}

double ChunkSchedule::expected_seconds(size_t slot) const {
  const double mean = mean_seconds(slot);
  if (mean > 0.0) return mean;
  double best = std::numeric_limits<double>::quiet_NaN();  // from the measured slot with the highest peak
  double best_peak = 0.0;
  for (size_t o = 0; o < peaks_.size(); ++o) {
    const double m = mean_seconds(o);
    if (m > 0.0 && peaks_[o] > best_peak) {
      best_peak = peaks_[o];
      best = m * peaks_[o] / peaks_[slot];
    }
  }
  return std::isnan(best) ? best : std::max(best, lower_[slot]);
}

bool ChunkSchedule::worth_taking(size_t slot, double now) const {
  const double max_peak = *std::max_element(peaks_.begin(), peaks_.end());
  const double mine = expected_seconds(slot);
  if (std::isnan(mine)) return peaks_[slot] >= 0.5 * max_peak;  // nothing measured: the fast ones start
  double others = 0.0;                                          // chunks per second of the other slots
  double fastest_other = std::numeric_limits<double>::infinity();
  for (size_t o = 0; o < peaks_.size(); ++o) {
    const double t = expected_seconds(o);
    if (o != slot && t > 0.0) {
      others += 1.0 / t;
      fastest_other = std::min(fastest_other, t);
    }
  }
  // The others' work before they could do all that is left: the chunks left and what remains of those they are
  // running (in chunks; without it, slots of one speed that finish a chunk together would each find the others as
  // quick to do the rest, by a hair, and leave it to them).
  double work = static_cast<double>(available_ - next_);
  for (size_t k = 0; k < available_; ++k) {
    if (done_[k]) continue;
    for (const Running& r : running_[k]) {
      const double t = expected_seconds(r.slot);
      if (r.slot != slot && t > 0.0) work += std::max(0.0, r.since + t - now) / t;
    }
  }
  // A slot as fast as any other always takes one (so that some slot always does, whatever the rounding).
  return others == 0.0 || mine <= fastest_other * (1.0 + 1e-6) || mine <= work / others;
}

double ChunkSchedule::mean_seconds(size_t slot) const {
  return finished_[slot] > 0 ? seconds_[slot] / static_cast<double>(finished_[slot])
                             : std::numeric_limits<double>::quiet_NaN();
}

std::optional<size_t> ChunkSchedule::take(size_t slot, double now) {
  if (next_ < available_) {
    if (!worth_taking(slot, now)) return std::nullopt;  // running_elsewhere() tells the caller to look again
    const size_t k = next_++;
    running_[k].push_back({slot, now});
    return k;
  }
  // A backup only on a slot whose speed is known, of the chunk whose copies are expected to finish last, when this
  // slot would finish it with a margin before them: half its mean chunk time and kMinimumGain (a backup of a chunk
  // about to end gains nothing).
  const double mine = mean_seconds(slot);
  if (!(mine > 0.0)) return std::nullopt;
  std::optional<size_t> best;
  double latest = now + mine + std::max(0.5 * mine, kMinimumGain);
  for (size_t k = 0; k < available_; ++k) {
    if (done_[k] || running_[k].empty()) continue;
    if (std::any_of(running_[k].begin(), running_[k].end(), [&](const Running& r) { return r.slot == slot; })) continue;
    double expected = std::numeric_limits<double>::infinity();  // the soonest of its copies
    for (const Running& r : running_[k]) {
      const double mean = mean_seconds(r.slot);
      // A slot with no chunk finished yet has been at this one longer than `mine` at least when it is worth a look:
      // expect it to take as long again.
      const double guess = mean > 0.0 ? r.since + mean : now + std::max(now - r.since, mine);
      expected = std::min(expected, guess);
    }
    if (expected > latest) {
      latest = expected;
      best = k;
    }
  }
  if (best) {
    running_[*best].push_back({slot, now});
    ++backups_;
  }
  return best;
}

bool ChunkSchedule::running_elsewhere(size_t slot) const {
  if (next_ < available_) return true;  // chunks left, declined for now
  for (size_t k = 0; k < available_; ++k) {
    if (done_[k]) continue;
    for (const Running& r : running_[k]) {
      if (r.slot != slot) return true;
    }
  }
  return false;
}

size_t ChunkSchedule::add() {
  if (available_ >= running_.size()) throw std::logic_error("chunk schedule: more chunks than its capacity");
  return available_++;
}

bool ChunkSchedule::finish(size_t k, size_t slot, double seconds) {
  seconds_[slot] += seconds;
  ++finished_[slot];
  abandon(k, slot, 0.0);
  if (done_[k]) {
    ++wasted_;
    return false;
  }
  done_[k] = true;
  return true;
}

void ChunkSchedule::abandon(size_t k, size_t slot, double seconds) {
  lower_[slot] = std::max(lower_[slot], seconds);
  auto& r = running_[k];
  r.erase(std::remove_if(r.begin(), r.end(), [&](const Running& x) { return x.slot == slot; }), r.end());
}

double relative_peak(const DeviceInfo& info) {
  const double lanes = info.is_gpu() ? 64.0 : 16.0;
  return std::max(1.0, static_cast<double>(info.compute_units)) * std::max(1.0, static_cast<double>(info.clock_mhz)) *
         lanes;
}

}  // namespace rtf
