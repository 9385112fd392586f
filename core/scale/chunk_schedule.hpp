// Which chunk a device takes next (core/scale/chunk_job.cpp), so that a fast device never waits on a slow one (a GPU
// beside PoCL). While chunks are left, a device takes the next one only if it would finish it before the others have
// done all that are left and what remains of the ones they are running (from each device's mean chunk time so far;
// before a device has finished one, from its
// peak arithmetic rate relative to one that has, and a device far below the fastest peak waits for that first
// measurement). Then, a backup copy of a chunk still running elsewhere that this device should finish sooner. The
// first copy to finish counts; the other is told to stop (ChunkJob's compute sees it through
// throw_if_chunk_cancelled) or its result is dropped. Not thread-safe: the caller holds its lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace rtf {

class ChunkSchedule {
 public:
  // `peaks`: each slot's peak arithmetic rate in any unit (relative_peak); empty: all alike. `capacity` (at least
  // `chunks`): room for chunks added later (add), handed out by rank 0 during the job.
  ChunkSchedule(size_t chunks, size_t slots, std::vector<double> peaks = {}, size_t capacity = 0);

  // One more chunk at the end of the list (its index); std::logic_error beyond the capacity.
  size_t add();
  // Chunks in the list no slot has started.
  size_t untaken() const { return available_ - next_; }

  // A chunk (index into this rank's list) for `slot` at time `now` (seconds), or nothing: all started and none worth
  // a backup on this slot.
  std::optional<size_t> take(size_t slot, double now);
  // Whether a chunk is still running on another slot (one this slot might later take a backup of).
  bool running_elsewhere(size_t slot) const;
  // `slot` finished chunk k after `seconds`; true when it is the first copy to finish (its result counts).
  bool finish(size_t k, size_t slot, double seconds);
  // `slot` stopped chunk k without a result (cancelled) after `seconds`.
  void abandon(size_t k, size_t slot, double seconds = 0.0);
  // Set once a copy of chunk k has finished: the others may stop.
  const std::atomic<bool>& done(size_t k) const { return done_[k]; }

  int64_t backups() const { return backups_; }  // copies started as backups
  int64_t wasted() const { return wasted_; }    // copies finished after another

 private:
  struct Running {
    size_t slot;
    double since;
  };
  double mean_seconds(size_t slot) const;
  // A slot's expected seconds per chunk: measured, else scaled by peaks from the fastest measured slot (at least what
  // a cancelled copy had run); NaN when nothing is measured yet.
  double expected_seconds(size_t slot) const;
  bool worth_taking(size_t slot, double now) const;
  size_t next_ = 0;
  size_t available_ = 0;  // chunks in the list (<= capacity)
  std::unique_ptr<std::atomic<bool>[]> done_;
  std::vector<std::vector<Running>> running_;  // per chunk (capacity): the copies in progress
  std::vector<double> seconds_;                // per slot: time on finished chunks
  std::vector<int64_t> finished_;              // per slot: chunks finished (first or not)
  std::vector<double> peaks_, lower_;          // per slot: peak rate; seconds a cancelled copy had run
  int64_t backups_ = 0, wasted_ = 0;
};

// A device's peak arithmetic rate for ChunkSchedule (compute units x clock x lanes: 64 per GPU compute unit, 16 per
// CPU core), only to order devices before their first chunk is measured.
struct DeviceInfo;
double relative_peak(const DeviceInfo& info);

}  // namespace rtf
