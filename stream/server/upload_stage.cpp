// UploadStage: queue -> DeviceRingBuffer, with per-volume latency.
#include "stream/server/upload_stage.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "core/device/cl_error.hpp"

namespace rtf::stream {

UploadStage::UploadStage(Device* device, DropOldestQueue<AcceptedVolume>& queue, LatencyLog& log, int64_t ring_capacity)
    : device_(device), queue_(queue), log_(log), ring_capacity_(ring_capacity) {}

void UploadStage::upload(AcceptedVolume& v, IngestLatency& latency) {
  const int64_t voxels = v.header.voxels();
  if (!ring_ || ring_->voxels() != voxels || v.header.run != ring_run_) {
    // A new run starts a new window (allocated here, once per run, never per volume).
    ring_ = std::make_unique<DeviceRingBuffer>(*device_, voxels, ring_capacity_);
    ring_run_ = v.header.run;
  }
  if (ring_->newest() >= 0 && v.header.index <= ring_->newest() - ring_capacity_) {
    spdlog::warn("run {} volume {}: older than the ring's window, not uploaded", v.header.run, v.header.index);
    return;
  }
  ClEvent done = ring_->push(v.header.index, v.payload, v.header.datatype);
  const cl_event e = done.get();
  RTF_CL_CHECK(clWaitForEvents(1, &e));
  latency.uploaded_ns = steady_now_ns();
  uploaded_.fetch_add(1);
}

UploadStage::~UploadStage() {
  if (motion_log_ != nullptr) std::fclose(motion_log_);
}

void UploadStage::enable_motion_correction(const std::filesystem::path& session_dir, LiveMotionOptions options) {
  if (device_ == nullptr) throw std::invalid_argument("motion correction needs a device (--ring > 0)");
  session_dir_ = session_dir;
  motion_options_ = std::move(options);
}

void UploadStage::correct_motion(const AcceptedVolume& v, IngestLatency& latency) {
  if (v.header.run == motion_disabled_run_) return;
  const bool new_run = !motion_ || v.header.run != ring_run_motion_;
  if (new_run) {
    ImageHeader grid = stream::to_image_header(v.header);
    grid.source_type = DataType::kFloat32;
    motion_.reset();
    try {
      motion_ = std::make_unique<LiveMotionCorrection>(*device_, grid, *motion_options_);
    } catch (const std::invalid_argument& e) {
      // E.g. --motion-ref on another grid, or a grid too small to register: said once, the run goes on uncorrected.
      motion_disabled_run_ = v.header.run;
      spdlog::error("run {}: motion correction off for this run: {}", v.header.run, e.what());
      return;
    }
    ring_run_motion_ = v.header.run;
    if (motion_log_ != nullptr) std::fclose(motion_log_);
    const std::filesystem::path path = session_dir_ / "runs" / v.header.run / "motion.tsv";
    std::error_code ec;
    const bool fresh = !std::filesystem::exists(path, ec) || std::filesystem::file_size(path, ec) == 0;
    motion_log_ = std::fopen(path.c_str(), "ae");
    if (motion_log_ == nullptr) {
      spdlog::warn("cannot write {}", path.string());
    } else {
      if (fresh) std::fputs(motion_tsv_header().c_str(), motion_log_);  // a restarted server appends to its rows
    }
  }
  const VolumeMotion m = motion_->process(*ring_, v.header.index);
  latency.motion_ns = steady_now_ns();
  if (!m.converged) {
    motion_flagged_.fetch_add(1);
    spdlog::warn("run {} volume {}: motion flagged: {}", v.header.run, v.header.index, m.failure);
  }
  if (motion_log_ != nullptr) {
    std::fputs(motion_tsv_row(v.header.index, m).c_str(), motion_log_);
    std::fflush(motion_log_);
  }
}

void UploadStage::run() {
  while (true) {
    std::optional<AcceptedVolume> v = queue_.pop(std::chrono::milliseconds(100));
    if (!v) {
      if (queue_.closed()) return;
      continue;
    }
    IngestLatency latency{v->header.run, v->header.index, v->received_ns, v->recorded_ns, steady_now_ns(), 0};
    if (device_ != nullptr) {
      try {
        upload(*v, latency);
        if (motion_options_ && latency.uploaded_ns != 0) correct_motion(*v, latency);
      } catch (const std::exception& e) {
        failed_.fetch_add(1);
        spdlog::error("run {} volume {}: upload failed: {}", v->header.run, v->header.index, e.what());
      }
    }
    log_.add(latency);
  }
}

}  // namespace rtf::stream
