// LiveStage: drain the queue, upload all, analyse the newest, send; one RunPipeline per run.
#include "stream/pipeline/live_stage.hpp"

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

LiveStage::~LiveStage() = default;

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

RunPipeline& LiveStage::pipeline_for(const LiveVolume& v) {
  ImageHeader grid = v.grid;
  grid.num_volumes = 1;
  grid.source_type = DataType::kFloat32;
  if (!pipeline_ || pipeline_->run() != v.run || pipeline_->grid().dims != grid.dims) {
    pipeline_.reset();  // finishes the previous run (its final maps)
    first_volume_ = FirstVolume{now_ns(), device_.programs().stats()};
    pipeline_ = std::make_unique<RunPipeline>(device_, config_, grid, v.run, session_dir_ / "runs" / v.run,
                                              subject_space_.get(), wait_for_rois_);
    runs_.fetch_add(1);
  }
  return *pipeline_;
}

void LiveStage::finish_run() {
  pipeline_.reset();
}

void LiveStage::handle(const LiveVolume& v, bool analyse) {
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
    // Handed on before it was durable, its recording failed (NACK) and the sender sent it again: analysed already.
    spdlog::warn("run {} volume {}: arrived again after a failed recording; already analysed, not again", v.run,
                 v.index);
    return;
  }
  taken.newest = std::max(taken.newest, v.index);
  try {
    RunPipeline& p = pipeline_for(v);
    p.upload(v.index, v.payload, v.type);
    latency.uploaded_ns = now_ns();
    uploaded_.fetch_add(1);
    if (!analyse) {
      skipped_.fetch_add(1);
      ++skipped_since_sent_;
      {
        std::lock_guard lock(skipped_mutex_);
        skipped_volumes_[v.run].push_back(v.index);
      }
      log();
      return;
    }
    TrResult r = p.process(v.index);
    latency.motion_ns = r.motion_ns;
    latency.smoothed_ns = r.smoothed_ns;
    latency.stats_ns = r.stats_ns;
    latency.feedback_ns = r.feedback_ns;
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    // The feedback line first (a stimulus script waits for it), then the maps for viewers and observers.
    if (outputs_ != nullptr) outputs_->send_feedback(r, latency, skipped_since_sent_);
    if ((outputs_ != nullptr && outputs_->publisher() != nullptr) || observer_) {
      p.read_maps(r);
      if (outputs_ != nullptr && outputs_->publisher() != nullptr) {
        outputs_->publish(r, latency, skipped_since_sent_, device_label_, live_counts(taken));
      }
    }
    if (p.is_last(v.index)) p.finish();  // the run's last volume: its maps now, after its outputs went out
    skipped_since_sent_ = 0;
    analysed_.fetch_add(1);
    log();
    if (first_volume_) report_first_volume(v.run);
    if (observer_) observer_(r);
  } catch (const std::exception& e) {
    failed_.fetch_add(1);
    spdlog::error("run {} volume {}: live stage failed: {}", v.run, v.index, e.what());
    log();
  }
}

void LiveStage::run() {
  while (true) {
    std::optional<AcceptedVolume> v = queue_.pop(std::chrono::milliseconds(100));
    if (!v) {
      if (queue_.closed()) break;
      continue;
    }
    // Whatever else is already waiting: upload it all, analyse only the newest.
    while (std::optional<AcceptedVolume> next = queue_.pop(std::chrono::milliseconds(0))) {
      handle(live_volume(*v), false);
      v = std::move(next);
    }
    handle(live_volume(*v), true);
  }
  try {
    pipeline_.reset();  // the last run's final maps
  } catch (const std::exception& e) {
    spdlog::error("finishing the last run: {}", e.what());
  }
}

LiveCounts LiveStage::live_counts(const Taken& run) const {
  LiveCounts c;
  c.received = received_.load();
  c.analysed = analysed_.load() + 1;  // the volume being published
  c.skipped = skipped_.load();
  if (ingest_stats_) {
    const IngestStats s = ingest_stats_();
    c.dropped = s.queue_dropped;
    c.duplicates = s.duplicates;
  }
  c.missing = run.newest + 1 - static_cast<int64_t>(run.indices.size());
  return c;
}

void LiveStage::report_first_volume(const std::string& run) {
  const ProgramCacheStats now = device_.programs().stats();
  const int compiled = now.compiles - first_volume_->programs.compiles;
  const int loaded = now.disk_hits - first_volume_->programs.disk_hits;
  const double seconds = static_cast<double>(now_ns() - first_volume_->started_ns) * 1e-9;
  first_volume_.reset();
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
  std::lock_guard lock(skipped_mutex_);
  return skipped_volumes_;
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
  return {uploaded_.load(), analysed_.load(), skipped_.load(), failed_.load(), runs_.load(), received_.load()};
}

}  // namespace rtf::stream
