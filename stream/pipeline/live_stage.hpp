// LiveStage: the thread after ingest. It takes recorded volumes from the ingest queue, uploads each into its run's
// RunPipeline, analyses the newest one, and sends the result to the outputs. Falling behind: when more volumes are
// waiting than the one it takes, every waiting volume is uploaded (cheap) but only the newest is analysed; the
// others are counted as skipped, so feedback always refers to the newest volume and the stage catches up at once.
// Ingest and recording never wait for it (the queue drops its oldest entries for this stage only; every volume is
// recorded regardless). A failure never stops the thread. docs/live.md.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/device/device.hpp"
#include "stream/pipeline/live_outputs.hpp"
#include "stream/pipeline/run_pipeline.hpp"
#include "stream/server/drop_oldest_queue.hpp"
#include "stream/server/ingest_core.hpp"
#include "stream/server/latency_log.hpp"

namespace rtf::stream {

// A volume for the stage, from ingest (AcceptedVolume) or from a recorded session (replay).
struct LiveVolume {
  std::string run;
  int64_t index = 0;
  ImageHeader grid;  // dims, voxel size, affine, TR (num_volumes 1)
  DataType type = DataType::kInt16;
  std::span<const std::byte> payload;
  int64_t received_ns = 0;
  int64_t written_ns = 0;                         // handed on by ingest
  std::shared_ptr<const RecordedStamp> recorded;  // when ingest made it durable (null: not recorded here)
};

LiveVolume live_volume(const AcceptedVolume& v);

// "1-6, 9, 12-13": sorted indices as ranges (for the summary of skipped volumes).
std::string format_index_ranges(std::vector<int64_t> indices);

struct LiveStageCounters {
  int64_t uploaded = 0;  // volumes in a device ring
  int64_t analysed = 0;  // volumes that went through the stages and out
  int64_t skipped = 0;   // uploaded but not analysed: a newer volume was already waiting
  int64_t failed = 0;    // volumes the stage could not handle at all (e.g. an upload error)
  int64_t runs = 0;      // runs seen
  int64_t received = 0;  // volumes handed to handle() (a resend it ignores included)
};

class LiveStage {
 public:
  // `outputs` may be null (no outputs). `observer`, if set, sees every result after it was sent (tests, replay). With
  // [registration], the subject-space set-up starts here (server start: the T1's normalisation begins at once).
  LiveStage(Device& device, PipelineConfig config, DropOldestQueue<AcceptedVolume>& queue, LatencyLog& log,
            std::filesystem::path session_dir, LiveOutputs* outputs,
            std::function<void(const TrResult&)> observer = nullptr);
  ~LiveStage();

  // Consumes until the queue is closed and empty, then finishes the last run. Never throws.
  void run();

  // Processes one volume as run() would (replay: every volume, in order, none skipped).
  void handle(const LiveVolume& volume, bool analyse);

  // Finishes the current run (its final maps); the next volume starts a new RunPipeline.
  void finish_run();

  // With [registration]: the worker that places each run's subject-space ROIs (null without).
  SubjectSpaceSetup* subject_space() { return subject_space_.get(); }
  // Replay: each run waits for its subject-space ROIs on the reference volume, so that every volume after it is
  // analysed with them (live runs go on and install them when they are ready).
  void set_wait_for_rois(bool wait) { wait_for_rois_ = wait; }

  // Extra time spent per analysed volume (tests: make processing slower than the data).
  void set_injected_delay(std::chrono::milliseconds delay) { delay_ = delay; }

  // Where the PUB header's `dropped` and `duplicates` come from (the IngestCore feeding the queue); unset: 0. Called
  // on the live thread after the feedback line, so it must not wait for the ingest thread (IngestCore::quick_stats).
  // Set before run().
  void set_ingest_stats(std::function<IngestStats()> stats) { ingest_stats_ = std::move(stats); }

  LiveStageCounters counters() const;
  // Per run, the volumes uploaded but not analysed (a newer one was waiting), in the order skipped.
  std::map<std::string, std::vector<int64_t>> skipped_volumes() const;

 private:
  RunPipeline& pipeline_for(const LiveVolume& v);

  Device& device_;
  PipelineConfig config_;
  DropOldestQueue<AcceptedVolume>& queue_;
  LatencyLog& log_;
  std::filesystem::path session_dir_;
  LiveOutputs* outputs_;
  std::function<void(const TrResult&)> observer_;
  std::unique_ptr<SubjectSpaceSetup> subject_space_;  // before pipeline_: outlives it
  bool wait_for_rois_ = false;
  std::unique_ptr<RunPipeline> pipeline_;
  // Set when a run's pipeline is built; reported (once) when its first volume has been analysed: how long the set-up
  // and the first volume took and how many kernel programs had to be built for them.
  struct FirstVolume {
    int64_t started_ns = 0;
    ProgramCacheStats programs;
  };
  std::optional<FirstVolume> first_volume_;
  void report_first_volume(const std::string& run);
  mutable std::mutex skipped_mutex_;
  std::map<std::string, std::vector<int64_t>> skipped_volumes_;
  struct Taken {
    std::unordered_set<int64_t> indices;  // already handled
    int64_t newest = -1;
  };
  std::unordered_map<std::string, Taken> taken_;  // per run
  LiveCounts live_counts(const Taken& run) const;
  std::function<IngestStats()> ingest_stats_;
  std::string device_label_;
  std::chrono::milliseconds delay_{0};
  int64_t skipped_since_sent_ = 0;
  std::atomic<int64_t> received_{0}, uploaded_{0}, analysed_{0}, skipped_{0}, failed_{0}, runs_{0};
};

}  // namespace rtf::stream
