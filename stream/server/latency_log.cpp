// LatencyLog: JSON lines per volume and the end-of-run latency summary.
#include "stream/server/latency_log.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/io/atomic_file.hpp"
#include "core/util/quantiles.hpp"

namespace rtf::stream {

LatencyLog::LatencyLog(const std::filesystem::path& path, OutputFailures* failures) : path_(path) {
  if (!path.empty()) file_ = std::make_unique<RowFile>(path, RowFile::Mode::kAppend, "", failures);
}

LatencyLog::~LatencyLog() = default;  // RowFile's close logs its errors

void LatencyLog::add(const IngestLatency& r) {
  std::lock_guard lock(mutex_);
  records_.push_back(r);
  if (file_ == nullptr) return;
  auto ms = [&](int64_t t) { return t == 0 ? std::string("null") : fmt::format("{:.4f}", (t - r.received_ns) * 1e-6); };
  file_->append(fmt::format(
      "{{\"run\":\"{}\",\"index\":{},\"received_ns\":{},\"written_ms\":{},\"recorded_ms\":{},\"dequeued_ms\":{},"
      "\"uploaded_ms\":{},"
      "\"motion_ms\":{},\"smoothed_ms\":{},\"stats_ms\":{},\"feedback_ms\":{},\"sent_ms\":{},\"published_ms\":{},"
      "\"skipped\":{}}}\n",
      r.run, r.index, r.received_ns, ms(r.written_ns), ms(r.recorded_ns), ms(r.dequeued_ns), ms(r.uploaded_ns),
      ms(r.motion_ns), ms(r.smoothed_ns), ms(r.stats_ns), ms(r.feedback_ns), ms(r.sent_ns), ms(r.published_ns),
      r.skipped));
}

int64_t LatencyLog::rows_written() const {
  std::lock_guard lock(mutex_);
  return file_ ? file_->written() : 0;
}

int64_t LatencyLog::rows_lost() const {
  std::lock_guard lock(mutex_);
  return file_ ? file_->lost() : 0;
}

std::string LatencyLog::close() {
  std::lock_guard lock(mutex_);
  return file_ ? file_->close() : std::string();
}

std::vector<IngestLatency> LatencyLog::records() const {
  std::lock_guard lock(mutex_);
  return records_;
}

std::vector<LatencyStage> LatencyLog::stages() const {
  std::lock_guard lock(mutex_);
  // Each stage from the previous stage that happened (so skipped stages do not hide their time), and end to end:
  // received -> feedback line sent (the maps are published after it), or -> the last stage without outputs.
  struct Step {
    const char* name;
    int64_t IngestLatency::*field;
  };
  static constexpr Step kSteps[] = {
      {"written", &IngestLatency::written_ns}, {"uploaded", &IngestLatency::uploaded_ns},
      {"motion", &IngestLatency::motion_ns},   {"smoothed", &IngestLatency::smoothed_ns},
      {"stats", &IngestLatency::stats_ns},     {"feedback", &IngestLatency::feedback_ns},
      {"sent", &IngestLatency::sent_ns},       {"published", &IngestLatency::published_ns}};
  std::vector<std::vector<double>> per(std::size(kSteps));
  std::vector<double> total, recorded;
  for (const auto& r : records_) {
    if (r.recorded_ns != 0) recorded.push_back((r.recorded_ns - r.received_ns) * 1e-6);
    int64_t previous = r.received_ns, last = 0;
    for (size_t i = 0; i < std::size(kSteps); ++i) {
      const int64_t t = r.*(kSteps[i].field);
      if (t == 0) continue;
      per[i].push_back((t - previous) * 1e-6);
      previous = last = t;
    }
    const int64_t end = r.sent_ns != 0 ? r.sent_ns : last;
    if (end != 0 && !r.skipped) total.push_back((end - r.received_ns) * 1e-6);
  }
  std::vector<LatencyStage> out;
  auto add = [&](std::string name, std::vector<double> v) {
    if (v.empty()) return;
    const Quantiles q = quantiles(std::move(v));
    out.push_back({std::move(name), q.count, q.median, q.p95, q.p99, q.max});
  };
  // Durability runs beside analysis (the volume is handed on once written), so it is not a step of the chain.
  add("received->recorded (durable, ACK)", std::move(recorded));
  std::string previous = "received";
  for (size_t i = 0; i < std::size(kSteps); ++i) {
    if (per[i].empty()) continue;
    add(previous + "->" + kSteps[i].name, std::move(per[i]));
    previous = kSteps[i].name;
  }
  const bool any_sent =
      std::any_of(records_.begin(), records_.end(), [](const IngestLatency& r) { return r.sent_ns != 0; });
  add("end to end (received->" + (any_sent ? std::string("sent") : previous) + ")", std::move(total));
  return out;
}

nlohmann::json stages_json(const std::vector<LatencyStage>& stages) {
  nlohmann::json out = nlohmann::json::array();
  for (const LatencyStage& s : stages) {
    out.push_back({{"stage", s.name},
                   {"n", s.count},
                   {"p50_ms", s.p50},
                   {"p95_ms", s.p95},
                   {"p99_ms", s.p99},
                   {"max_ms", s.max}});
  }
  return out;
}

nlohmann::json LatencyLog::summary_json() const {
  const nlohmann::json stages = stages_json(this->stages());
  std::lock_guard lock(mutex_);
  nlohmann::json file = nullptr;
  if (file_) file = {{"path", path_.string()}, {"rows_written", file_->written()}, {"rows_lost", file_->lost()}};
  return {{"volumes", records_.size()}, {"latency_jsonl", file}, {"stages", stages}};
}

void LatencyLog::write_summary(const std::filesystem::path& path) const {
  write_text_atomically(path, summary_json().dump(2) + "\n");
}

std::string LatencyLog::summary() const {
  std::string out;
  for (const LatencyStage& s : stages()) {
    out += fmt::format("{:<32} n={:<6} p50={:.3f} p95={:.3f} p99={:.3f} max={:.3f} ms\n", s.name, s.count, s.p50, s.p95,
                       s.p99, s.max);
  }
  return out;
}

}  // namespace rtf::stream
