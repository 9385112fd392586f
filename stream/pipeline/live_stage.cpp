// LiveStage: drain the queue, upload all, analyse the newest of each run, send; one RunPipeline per analysed run, up to
// max_live_runs; the other runs recorded only, each of their volumes answered by a "recorded-only" feedback line.
#include "stream/pipeline/live_stage.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "stream/pipeline/warm_up.hpp"

namespace rtf::stream {

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

template <typename Run>
std::string join_names(const std::map<std::string, Run>& runs) {
  std::string out;
  for (const auto& [name, run] : runs) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

LiveStage::LiveStage(Device& device, PipelineConfig config, DropOldestQueue<AcceptedVolume>& queue, LatencyLog& log,
                     std::filesystem::path session_dir, LiveOutputs* outputs,
                     std::function<void(const TrResult&)> observer)
    : device_(device),
      config_(std::move(config)),
      queue_(queue),
      log_(log),
      session_dir_(std::move(session_dir)),
      outputs_(outputs),
      observer_(std::move(observer)),
      clock_(now_ns),
      device_label_(device.info().label()) {
  if (config_.registration()) {
    subject_space_ = std::make_unique<SubjectSpaceSetup>(device, config_, session_dir_);
    if (!config_.warm.empty()) {
      try {
        subject_space_->warm(warm_grid(config_.warm));  // the registration's kernels too, before the first run
      } catch (const std::exception& e) {
        spdlog::warn("subject space: no warm-up: {}", e.what());
      }
    }
  }
}

LiveStage::~LiveStage() {
  wait_for_final_maps();
}

void LiveStage::write_final_maps(RunPipeline& pipeline) {
  std::function<void()> write;
  try {
    write = pipeline.final_maps();
  } catch (const std::exception& e) {
    spdlog::error("run {}: reading the final maps back failed: {}", pipeline.run(), e.what());
  }
  if (write) final_maps_.push_back(std::async(std::launch::async, std::move(write)));  // never throws: write_output
}

void LiveStage::wait_for_final_maps() {
  for (std::future<void>& f : final_maps_) f.wait();
  final_maps_.clear();
}

LiveVolume live_volume(const AcceptedVolume& v) {
  LiveVolume l;
  l.run = v.header.run;
  l.index = v.header.index;
  l.grid = to_image_header(v.header);
  l.type = v.header.datatype;
  l.payload = v.payload;
  l.received_ns = v.received_ns;
  l.written_ns = v.written_ns;
  l.recorded = v.recorded;
  return l;
}

LiveStage::ActiveRun* LiveStage::active_run_for(const LiveVolume& v) {
  ImageHeader grid = v.grid;
  grid.num_volumes = 1;
  grid.source_type = DataType::kFloat32;
  if (auto it = active_.find(v.run); it != active_.end()) {
    if (it->second.pipeline->grid().dims != grid.dims) {
      throw std::runtime_error("the volume's grid differs from the run's first volume's");  // ingest refuses these
    }
    return &it->second;
  }
  {
    std::lock_guard lock(runs_mutex_);
    if (not_analysed_.count(v.run) != 0) return nullptr;  // decided at the run's first volume, kept for the run
  }
  if (static_cast<int64_t>(active_.size()) >= config_.max_live_runs) {
    // A place is given up by a run whose design ended, else by the run idle the longest, if idle long enough.
    const int64_t now = clock_();
    const auto idle_ns = static_cast<int64_t>(config_.live_run_idle_s * 1e9);
    const ActiveRun* best = nullptr;
    std::string best_name;
    for (const auto& [name, run] : active_) {
      const bool can_go = run.complete || now - run.last_volume_ns >= idle_ns;
      const bool better = best == nullptr || (run.complete && !best->complete) ||
                          (run.complete == best->complete && run.last_volume_ns < best->last_volume_ns);
      if (can_go && better) {
        best = &run;
        best_name = name;
      }
    }
    if (best == nullptr) {
      std::string reason = fmt::format(
          "{} runs are being analysed (max_live_runs {}): {}; this run is recorded only (analyse it afterwards with "
          "rtfmri replay)",
          active_.size(), config_.max_live_runs, join_names(active_));
      spdlog::warn("run {}: not analysed live: {}", v.run, reason);
      std::lock_guard lock(runs_mutex_);
      not_analysed_[v.run].reason = std::move(reason);
      return nullptr;
    }
    const std::string why =
        best->complete
            ? fmt::format("its design's last volume was analysed and run {} started", v.run)
            : fmt::format("no volume for {:.0f} s (live_run_idle_s {}) when run {} started",
                          static_cast<double>(now - best->last_volume_ns) * 1e-9, config_.live_run_idle_s, v.run);
    retire(best_name, why);
  }
  ActiveRun run;
  run.first_volume = ActiveRun::FirstVolume{now_ns(), device_.programs().stats()};
  try {
    run.pipeline = std::make_unique<RunPipeline>(device_, config_, grid, v.run, session_dir_ / "runs" / v.run,
                                                 subject_space_.get(), wait_for_rois_);
  } catch (const std::exception& e) {
    std::string reason = fmt::format("its pipeline could not be set up: {}", e.what());
    spdlog::error("run {}: not analysed live: {}", v.run, reason);
    std::lock_guard lock(runs_mutex_);
    not_analysed_[v.run].reason = std::move(reason);
    return nullptr;
  }
  runs_.fetch_add(1);
  auto [it, fresh] = active_.emplace(v.run, std::move(run));
  if (active_.size() > 1) {
    spdlog::info("run {}: analysed beside {} other run(s) ({} of max_live_runs {})", v.run, active_.size() - 1,
                 active_.size(), config_.max_live_runs);
  }
  std::lock_guard lock(runs_mutex_);
  live_names_.clear();
  for (const auto& [name, r] : active_) live_names_.push_back(name);
  return &it->second;
}

void LiveStage::retire(const std::string& run, const std::string& why) {
  const auto it = active_.find(run);
  if (it == active_.end()) return;
  complete_outstanding();  // none may point at the pipeline about to go
  write_final_maps(*it->second.pipeline);
  try {
    it->second.pipeline.reset();  // closes its files (the final maps were handed to a writer above)
  } catch (const std::exception& e) {
    spdlog::error("run {}: finishing: {}", run, e.what());
  }
  active_.erase(it);
  std::lock_guard lock(runs_mutex_);
  live_names_.clear();
  for (const auto& [name, r] : active_) live_names_.push_back(name);
  if (!why.empty()) {
    spdlog::info("run {}: live analysis ended: {}", run, why);
    not_analysed_[run].reason = "its live analysis ended: " + why + "; later volumes are recorded only";
  }
}

void LiveStage::finish_run() {
  while (!active_.empty()) retire(active_.begin()->first, "");
  wait_for_final_maps();
}

std::vector<std::string> LiveStage::ended_live_runs() const {
  std::vector<std::string> ended;
  if (!run_ended_) return ended;
  for (const auto& [name, run] : active_) {
    if (run_ended_(name)) ended.push_back(name);
  }
  return ended;
}

void LiveStage::retire_ended(const std::vector<std::string>& ended) {
  for (const std::string& run : ended) retire(run, "its end_of_run arrived");
}

void LiveStage::not_analysed(const LiveVolume& v, IngestLatency& latency) {
  not_analysed_count_.fetch_add(1);
  std::string reason;
  {
    std::lock_guard lock(runs_mutex_);
    NotAnalysed& n = not_analysed_[v.run];
    ++n.volumes;
    reason = n.reason;
  }
  if (outputs_ != nullptr) outputs_->send_not_analysed(v.run, v.index, reason, latency);
}

void LiveStage::handle(const LiveVolume& v, bool analyse) {
  handle(v, analyse, false);
}

void LiveStage::handle(const LiveVolume& v, bool analyse, bool defer_maps) {
  IngestLatency latency;
  latency.run = v.run;
  latency.index = v.index;
  latency.received_ns = v.received_ns;
  latency.written_ns = v.written_ns;
  latency.dequeued_ns = now_ns();
  latency.skipped = !analyse;
  // Durability runs beside analysis; its time is asked for only after this volume's work (and never waited for
  // before it).
  auto log = [&] {
    if (v.recorded) latency.recorded_ns = v.recorded->recorded_ns();
    log_.add(latency);
  };
  received_.fetch_add(1);
  Taken& taken = taken_[v.run];
  if (!taken.indices.insert(v.index).second) {
    // Handed on before it was durable, its recording failed (NACK) and the sender sent it again: handled already.
    spdlog::warn("run {} volume {}: arrived again after a failed recording; already handled, not again", v.run,
                 v.index);
    return;
  }
  taken.newest = std::max(taken.newest, v.index);
  try {
    ActiveRun* active = active_run_for(v);
    if (active == nullptr) {
      latency.skipped = true;  // not analysed: left out of the end-to-end latency like a skipped volume
      not_analysed(v, latency);
      log();
      return;
    }
    active->last_volume_ns = clock_();
    RunPipeline& p = *active->pipeline;
    p.upload(v.index, v.payload, v.type);
    latency.uploaded_ns = now_ns();
    uploaded_.fetch_add(1);
    if (!analyse) {
      skipped_.fetch_add(1);
      ++active->skipped_since_sent;
      {
        std::lock_guard lock(runs_mutex_);
        skipped_volumes_[v.run].push_back(v.index);
      }
      log();
      return;
    }
    Outstanding o{active, v.run, p.process(v.index), latency, &taken, active->skipped_since_sent, v.recorded};
    o.latency.motion_ns = o.result.motion_ns;
    o.latency.smoothed_ns = o.result.smoothed_ns;
    o.latency.stats_ns = o.result.stats_ns;
    o.latency.feedback_ns = o.result.feedback_ns;
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    // The feedback line first (a stimulus script waits for it), then the maps for viewers and observers.
    if (outputs_ != nullptr) outputs_->send_feedback(o.result, o.latency, o.skipped_since_sent);
    active->skipped_since_sent = 0;
    if (defer_maps) {
      outstanding_.push_back(std::move(o));
    } else {
      complete(o);
    }
  } catch (const std::exception& e) {
    failed_.fetch_add(1);
    spdlog::error("run {} volume {}: live stage failed: {}", v.run, v.index, e.what());
    log();
  }
}

void LiveStage::complete(Outstanding& o) {
  try {
    RunPipeline& p = *o.active->pipeline;
    p.run_qa(o.result);  // after the feedback line: QA adds nothing to its latency
    if ((outputs_ != nullptr && outputs_->publisher() != nullptr) || observer_) {
      p.read_maps(o.result);
      if (outputs_ != nullptr && outputs_->publisher() != nullptr) {
        outputs_->publish(o.result, o.latency, o.skipped_since_sent, device_label_, live_counts(*o.taken));
      }
    }
    if (p.is_last(o.result.index)) {
      write_final_maps(p);  // the run's last volume: its maps now, after its outputs went out
      o.active->complete = true;
    }
    analysed_.fetch_add(1);
  } catch (const std::exception& e) {
    failed_.fetch_add(1);
    spdlog::error("run {} volume {}: live stage failed after its feedback line: {}", o.run, o.result.index, e.what());
  }
  if (o.recorded) o.latency.recorded_ns = o.recorded->recorded_ns();
  log_.add(o.latency);
  if (o.active->first_volume) report_first_volume(*o.active, o.run);
  if (observer_) observer_(o.result);
}

void LiveStage::complete_outstanding() {
  std::vector<Outstanding> pending;
  pending.swap(outstanding_);
  for (Outstanding& o : pending) complete(o);
}

void LiveStage::run() {
  while (true) {
    // Runs closed before this batch is taken: every volume of theirs is in the queue now, so in this batch.
    const std::vector<std::string> ended = ended_live_runs();
    std::optional<AcceptedVolume> v = queue_.pop(std::chrono::milliseconds(100));
    if (!v) {
      retire_ended(ended);
      if (queue_.closed()) break;
      continue;
    }
    // Whatever else is already waiting: upload it all, analyse only the newest volume of each run.
    std::vector<AcceptedVolume> batch;
    batch.push_back(std::move(*v));
    while (std::optional<AcceptedVolume> next = queue_.pop(std::chrono::milliseconds(0))) {
      batch.push_back(std::move(*next));
    }
    std::unordered_map<std::string_view, size_t> last_of_run;
    for (size_t i = 0; i < batch.size(); ++i) last_of_run[batch[i].header.run] = i;
    const bool several_runs = last_of_run.size() > 1;  // each run's feedback line before any run's maps
    for (size_t i = 0; i < batch.size(); ++i) {
      handle(live_volume(batch[i]), last_of_run.at(batch[i].header.run) == i, several_runs);
    }
    complete_outstanding();
    retire_ended(ended);
  }
  finish_run();  // the last runs' final maps
}

LiveCounts LiveStage::live_counts(const Taken& run) const {
  LiveCounts c;
  c.received = received_.load();
  c.analysed = analysed_.load() + 1;  // the volume being published
  c.skipped = skipped_.load();
  c.not_analysed = not_analysed_count_.load();
  if (ingest_stats_) {
    const IngestStats s = ingest_stats_();
    c.dropped = s.queue_dropped;
    c.duplicates = s.duplicates;
  }
  c.missing = run.newest + 1 - static_cast<int64_t>(run.indices.size());
  return c;
}

void LiveStage::report_first_volume(ActiveRun& active, const std::string& run) {
  const ProgramCacheStats now = device_.programs().stats();
  const int compiled = now.compiles - active.first_volume->programs.compiles;
  const int loaded = now.disk_hits - active.first_volume->programs.disk_hits;
  const double seconds = static_cast<double>(now_ns() - active.first_volume->started_ns) * 1e-9;
  active.first_volume.reset();
  if (compiled > 0) {
    spdlog::warn(
        "run {}: the first volume took {:.2f} s: {} kernel programs were compiled for this grid ({} loaded from the "
        "disk cache); volumes arriving meanwhile are skipped. Start the server with --warm GRID|FILE ([run] warm) to "
        "build them before the scan",
        run, seconds, compiled, loaded);
  } else {
    spdlog::info(
        "run {}: the first volume took {:.3f} s (set-up; {} kernel programs loaded from the disk cache, none "
        "compiled)",
        run, seconds, loaded);
  }
}

std::map<std::string, std::vector<int64_t>> LiveStage::skipped_volumes() const {
  std::lock_guard lock(runs_mutex_);
  return skipped_volumes_;
}

std::map<std::string, LiveStage::NotAnalysed> LiveStage::not_analysed_runs() const {
  std::lock_guard lock(runs_mutex_);
  std::map<std::string, NotAnalysed> out;
  for (const auto& [run, n] : not_analysed_) {
    if (n.volumes > 0) out.emplace(run, n);  // not a run whose live analysis ended with its last volume
  }
  return out;
}

std::vector<std::string> LiveStage::live_runs() const {
  std::lock_guard lock(runs_mutex_);
  return live_names_;
}

std::string format_index_ranges(std::vector<int64_t> indices) {
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  std::string out;
  for (size_t i = 0; i < indices.size();) {
    size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? std::to_string(indices[i]) : std::to_string(indices[i]) + "-" + std::to_string(indices[j]);
    i = j + 1;
  }
  return out;
}

LiveStageCounters LiveStage::counters() const {
  return {uploaded_.load(), analysed_.load(), skipped_.load(),           failed_.load(),
          runs_.load(),     received_.load(), not_analysed_count_.load()};
}

}  // namespace rtf::stream
