// UploadStage: queue -> DeviceRingBuffer, with per-volume latency.
#include "stream/server/upload_stage.hpp"

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
      } catch (const std::exception& e) {
        failed_.fetch_add(1);
        spdlog::error("run {} volume {}: upload failed: {}", v->header.run, v->header.index, e.what());
      }
    }
    log_.add(latency);
  }
}

}  // namespace rtf::stream
