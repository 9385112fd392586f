// LiveStage: the thread after ingest. It takes recorded volumes from the ingest queue, uploads each into its run's
// RunPipeline, analyses the newest one of each run, and sends the result to the outputs. Several runs at once: each
// analysed run has a pipeline of its own (its ring, motion reference, GLM...), up to [server] max_live_runs; a run that
// starts while that many are analysed is recorded only, and every volume of it gets a feedback line saying so (it is
// analysed afterwards by `rtfmri replay`). A run closed by its END_OF_RUN, or with no volume for live_run_idle_s, gives
// its place to the next new run. Falling behind: when more volumes of a run are waiting than the one it takes, every
// waiting volume is uploaded (cheap) but only the newest is analysed; the others are counted as skipped, so feedback
// always refers to the newest volume and the stage catches up at once. Ingest and recording never wait for it (the
// queue drops its oldest entries for this stage only; every volume is recorded regardless). A failure never stops the
// thread. docs/live.md.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
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
  int64_t uploaded = 0;      // volumes in a device ring
  int64_t analysed = 0;      // volumes that went through the stages and out
  int64_t skipped = 0;       // uploaded but not analysed: a newer volume was already waiting
  int64_t failed = 0;        // volumes the stage could not handle at all (e.g. an upload error)
  int64_t runs = 0;          // runs given a pipeline
  int64_t received = 0;      // volumes handed to handle() (a resend it ignores included)
  int64_t not_analysed = 0;  // volumes of runs that are recorded only (no pipeline: see LiveStage)
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

  // Finishes every run being analysed (their final maps); a later volume of one of them starts it again.
  void finish_run();

  // Where the stage learns that a run was closed by its END_OF_RUN (IngestCore::run_ended); unset: runs give their
  // place up only by going idle. Must not wait for the disk. Set before run().
  void set_run_ended(std::function<bool(const std::string& run)> ended) { run_ended_ = std::move(ended); }
  // The clock of the idle rule (steady ns); tests replace it. Set before the first volume.
  void set_clock(std::function<int64_t()> clock) { clock_ = std::move(clock); }

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
  // The runs recorded but not analysed live (or only in part), with why and how many of their volumes.
  struct NotAnalysed {
    std::string reason;
    int64_t volumes = 0;
  };
  std::map<std::string, NotAnalysed> not_analysed_runs() const;
  // The runs that have a pipeline now.
  std::vector<std::string> live_runs() const;

 private:
  // A run being analysed: its pipeline and what the stage keeps for it.
  struct ActiveRun {
    std::unique_ptr<RunPipeline> pipeline;
    // Set when the pipeline is built; reported (once) when its first volume has been analysed: how long the set-up and
    // the first volume took and how many kernel programs had to be built for them.
    struct FirstVolume {
      int64_t started_ns = 0;
      ProgramCacheStats programs;
    };
    std::optional<FirstVolume> first_volume;
    int64_t last_volume_ns = 0;  // clock_() when its newest volume was handed in
    int64_t skipped_since_sent = 0;
    bool complete = false;  // its design's last volume was analysed and its final maps written
  };
  struct Taken {
    std::unordered_set<int64_t> indices;  // already handled
    int64_t newest = -1;
  };

  // The run's pipeline, built if the run may have one (a free place, or one given up by a closed or idle run); null
  // when the run is recorded only (then not_analysed_[run] says why).
  ActiveRun* active_run_for(const LiveVolume& v);
  // Finishes the run's pipeline (its final maps) and frees its place. With a reason, the run's later volumes (if any)
  // are recorded only, saying `why`; without one (finish_run), a later volume starts the run again.
  void retire(const std::string& run, const std::string& why);
  // Retires the runs that `ended` names (closed by END_OF_RUN before the batch just handled was taken).
  void retire_ended(const std::vector<std::string>& ended);
  std::vector<std::string> ended_live_runs() const;
  void not_analysed(const LiveVolume& v, IngestLatency& latency);
  void report_first_volume(ActiveRun& active, const std::string& run);
  LiveCounts live_counts(const Taken& run) const;

  // A volume whose feedback line went out and whose maps wait: when several runs' volumes are analysed from one batch,
  // every run's feedback line goes out before any run's maps are read back and published (a run's line never waits
  // for another run's maps).
  struct Outstanding {
    ActiveRun* active = nullptr;
    std::string run;
    TrResult result;
    IngestLatency latency;
    const Taken* taken = nullptr;
    int64_t skipped_since_sent = 0;
    std::shared_ptr<const RecordedStamp> recorded;
  };
  void handle(const LiveVolume& volume, bool analyse, bool defer_maps);
  // The rest of an analysed volume's work after its feedback line: maps read back and published, the run's final maps
  // at its last volume, the latency record, the observer.
  void complete(Outstanding& volume);
  void complete_outstanding();
  std::vector<Outstanding> outstanding_;
  // A run's final maps: read back on the live thread, written on a thread of their own (another run's volume never
  // waits for them); waited for by finish_run(), the end of run() and the destructor.
  void write_final_maps(RunPipeline& pipeline);
  void wait_for_final_maps();
  std::vector<std::future<void>> final_maps_;

  Device& device_;
  PipelineConfig config_;
  DropOldestQueue<AcceptedVolume>& queue_;
  LatencyLog& log_;
  std::filesystem::path session_dir_;
  LiveOutputs* outputs_;
  std::function<void(const TrResult&)> observer_;
  std::unique_ptr<SubjectSpaceSetup> subject_space_;  // before active_: outlives the pipelines
  bool wait_for_rois_ = false;
  std::map<std::string, ActiveRun> active_;       // at most config_.max_live_runs
  std::unordered_map<std::string, Taken> taken_;  // per run
  mutable std::mutex runs_mutex_;                 // guards skipped_volumes_, not_analysed_ and live_names_
  std::map<std::string, std::vector<int64_t>> skipped_volumes_;
  std::map<std::string, NotAnalysed> not_analysed_;
  std::vector<std::string> live_names_;
  std::function<IngestStats()> ingest_stats_;
  std::function<bool(const std::string&)> run_ended_;
  std::function<int64_t()> clock_;
  std::string device_label_;
  std::chrono::milliseconds delay_{0};
  std::atomic<int64_t> received_{0}, uploaded_{0}, analysed_{0}, skipped_{0}, failed_{0}, runs_{0},
      not_analysed_count_{0};
};

}  // namespace rtf::stream
