// LatencyLog: JSON lines per volume and the end-of-run latency summary.
#include "stream/server/latency_log.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/util/quantiles.hpp"

namespace rtf::stream {

LatencyLog::LatencyLog(const std::filesystem::path& path) {
  if (path.empty()) return;
  file_ = std::fopen(path.c_str(), "ae");
  if (file_ == nullptr) spdlog::warn("cannot open {}; latencies are kept in memory only", path.string());
}

LatencyLog::~LatencyLog() {
  if (file_ != nullptr) std::fclose(file_);
}

void LatencyLog::add(const IngestLatency& r) {
  std::lock_guard lock(mutex_);
  records_.push_back(r);
  if (file_ == nullptr) return;
  auto ms = [&](int64_t t) { return t == 0 ? std::string("null") : fmt::format("{:.4f}", (t - r.received_ns) * 1e-6); };
  fmt::print(
      file_,
      "{{\"run\":\"{}\",\"index\":{},\"received_ns\":{},\"recorded_ms\":{},\"dequeued_ms\":{},\"uploaded_ms\":{},"
      "\"motion_ms\":{}}}\n",
      r.run, r.index, r.received_ns, ms(r.recorded_ns), ms(r.dequeued_ns), ms(r.uploaded_ns), ms(r.motion_ns));
  std::fflush(file_);
}

std::vector<IngestLatency> LatencyLog::records() const {
  std::lock_guard lock(mutex_);
  return records_;
}

std::string LatencyLog::summary() const {
  std::lock_guard lock(mutex_);
  std::vector<double> recorded, uploaded, motion, total;
  for (const auto& r : records_) {
    recorded.push_back((r.recorded_ns - r.received_ns) * 1e-6);
    if (r.uploaded_ns != 0) uploaded.push_back((r.uploaded_ns - r.recorded_ns) * 1e-6);
    if (r.motion_ns != 0) motion.push_back((r.motion_ns - r.uploaded_ns) * 1e-6);
    const int64_t last = r.motion_ns != 0 ? r.motion_ns : r.uploaded_ns;
    if (last != 0) total.push_back((last - r.received_ns) * 1e-6);
  }
  std::string out;
  auto line = [&](const char* name, std::vector<double> v) {
    if (v.empty()) return;
    const Quantiles q = quantiles(std::move(v));
    out += fmt::format("{:<22} n={:<6} p50={:.3f} p95={:.3f} p99={:.3f} max={:.3f} ms\n", name, q.count, q.median,
                       q.p95, q.p99, q.max);
  };
  line("received->recorded", std::move(recorded));
  line("recorded->uploaded", std::move(uploaded));
  const char* total_name = motion.empty() ? "received->uploaded" : "received->motion";
  line("uploaded->motion", std::move(motion));
  line(total_name, std::move(total));
  return out;
}

}  // namespace rtf::stream
