// UploadStage: the first stage after ingest. It takes recorded volumes from the ingest queue and uploads each into
// a DeviceRingBuffer (one per run geometry, reallocated only when a run with another grid starts), then logs the
// volume's latency. Runs on its own thread so that a slow device never slows ingest; when it falls behind, the
// queue drops the oldest volumes for it (they are recorded all the same). Later stages will read the ring.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "core/device/device.hpp"
#include "core/motion/live_motion.hpp"
#include "core/ring/device_ring_buffer.hpp"
#include "stream/server/drop_oldest_queue.hpp"
#include "stream/server/ingest_core.hpp"
#include "stream/server/latency_log.hpp"

namespace rtf::stream {

class UploadStage {
 public:
  // `device` may be null: volumes are then only dequeued and logged (ingest-only server).
  UploadStage(Device* device, DropOldestQueue<AcceptedVolume>& queue, LatencyLog& log, int64_t ring_capacity);

  ~UploadStage();

  // Turns on live motion correction after each upload (one LiveMotionCorrection per run); per volume a row is
  // appended to SESSION_DIR/runs/<run>/motion.tsv (columns of write_motion_tsv). Call before run().
  void enable_motion_correction(const std::filesystem::path& session_dir, LiveMotionOptions options);

  // Consumes until the queue is closed and empty. Never throws; failures are logged and counted.
  void run();

  int64_t motion_flagged() const { return motion_flagged_.load(); }

  int64_t uploaded() const { return uploaded_.load(); }
  int64_t failed() const { return failed_.load(); }
  const DeviceRingBuffer* ring() const { return ring_.get(); }

 private:
  void upload(AcceptedVolume& volume, IngestLatency& latency);
  void correct_motion(const AcceptedVolume& volume, IngestLatency& latency);

  Device* device_;
  DropOldestQueue<AcceptedVolume>& queue_;
  LatencyLog& log_;
  int64_t ring_capacity_;
  std::unique_ptr<DeviceRingBuffer> ring_;
  std::string ring_run_;  // run whose volumes the ring holds
  std::atomic<int64_t> uploaded_{0};
  std::atomic<int64_t> failed_{0};
  std::atomic<int64_t> motion_flagged_{0};
  std::optional<LiveMotionOptions> motion_options_;
  std::filesystem::path session_dir_;
  std::unique_ptr<LiveMotionCorrection> motion_;
  std::string ring_run_motion_;      // run the motion stage is set up for
  std::string motion_disabled_run_;  // run whose motion stage could not be set up (logged once)
  std::FILE* motion_log_ = nullptr;
};

}  // namespace rtf::stream
