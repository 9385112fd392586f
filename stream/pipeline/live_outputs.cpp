// LiveOutputs: the feedback line's JSON, the PUB frames, and the order of the sends.
#include "stream/pipeline/live_outputs.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>

namespace rtf::stream {

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

nlohmann::json finite_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

// Milliseconds from `received` to each stage that happened.
nlohmann::json latency_json(const IngestLatency& l) {
  nlohmann::json j = nlohmann::json::object();
  auto add = [&](const char* name, int64_t t) {
    if (t != 0) j[name] = (t - l.received_ns) * 1e-6;
  };
  add("written", l.written_ns);
  add("recorded", l.recorded_ns);  // known once durable: in the PUB header usually, in the feedback line rarely
  add("uploaded", l.uploaded_ns);
  add("motion", l.motion_ns);
  add("smoothed", l.smoothed_ns);
  add("stats", l.stats_ns);
  add("feedback", l.feedback_ns);
  add("published", l.published_ns);
  add("end_to_end", l.sent_ns);
  return j;
}

ResultFrame frame(const char* name, const std::vector<float>& data, std::vector<int64_t> shape) {
  return {name, "float32", std::move(shape), std::as_bytes(std::span<const float>(data))};
}

// A threshold for readers: null when that alarm is off.
nlohmann::json threshold_or_null(double v) {
  return v > 0 && std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

// The QA object of the feedback line and the PUB header (docs/protocol.md §8); `full`: the PUB header's extras.
nlohmann::json qa_json(const LiveQaSample& q, bool full, int64_t carpet_rows) {
  const QaVolumeRow& row = q.row;
  nlohmann::json usable = nlohmann::json::array();
  for (const UsableTally& u : q.usable) {
    usable.push_back({{"fd_threshold_mm", u.threshold_mm},
                      {"frames", u.frames},
                      {"minutes", u.minutes},
                      {"minutes_to_target", finite_or_null(u.minutes_to_target)}});
  }
  nlohmann::json j{
      {"volume", q.volume},
      {"fd_mm", finite_or_null(row.fd)},
      {"global_signal", finite_or_null(row.global)},
      {"dvars", finite_or_null(row.dvars)},
      {"outlier_fraction", finite_or_null(row.outlier_fraction)},
      {"quality_index", finite_or_null(row.quality)},
      {"slice_z_worst", row.slices.worst_slice < 0 ? nlohmann::json(nullptr) : finite_or_null(row.slices.worst_z)},
      {"worst_slice", row.slices.worst_slice},
      {"flagged_slices", row.slices.flagged},
      {"tsnr_median", finite_or_null(q.tsnr_median)},
      {"sliding_tsnr_median", finite_or_null(q.sliding_tsnr_median)},
      {"cnr_p95", finite_or_null(q.cnr_p95)},
      {"usable", usable},
      {"target_minutes", q.target_minutes}};
  if (full) {
    j["thresholds"] = {{"fd_mm", threshold_or_null(q.thresholds.fd_mm)},
                       {"outlier_fraction", threshold_or_null(q.thresholds.outlier_fraction)},
                       {"slice_z", threshold_or_null(q.slice_threshold)},
                       {"tsnr_min", threshold_or_null(q.thresholds.tsnr_min)}};
    j["carpet_rows"] = carpet_rows;
    j["carpet_split"] = q.carpet_split;
    j["tsnr_map_in_this_message"] = !q.tsnr_map.empty();
  }
  return j;
}

nlohmann::json qa_alarm_json(const std::vector<QaAlarm>& alarms) {
  nlohmann::json out = nlohmann::json::array();
  for (const QaAlarm& a : alarms) {
    out.push_back({{"metric", a.metric},
                   {"volume", a.volume},
                   {"value", finite_or_null(a.value)},
                   {"threshold", a.threshold},
                   {"where", a.where}});
  }
  return out;
}

// The live decoder's object (docs/protocol.md): status, why it is off, and when on the volume's decision value(s),
// predicted class and (logistic) class probabilities by name.
nlohmann::json decoder_json(const TrResult& r) {
  nlohmann::json j{{"status", r.decoder_status}};
  if (!r.decoder_reason.empty()) j["reason"] = r.decoder_reason;
  if (!r.decoder) return j;
  const LiveDecision& d = *r.decoder;
  const std::vector<std::string>* classes = r.decoder_classes.get();
  if (d.decision.size() == 1) {
    j["decision"] = finite_or_null(d.decision.front());
  } else {
    nlohmann::json values = nlohmann::json::array();
    for (const double v : d.decision) values.push_back(finite_or_null(v));
    j["decision"] = values;
  }
  if (classes != nullptr && d.predicted >= 0 && static_cast<size_t>(d.predicted) < classes->size()) {
    j["predicted"] = (*classes)[static_cast<size_t>(d.predicted)];
  }
  if (!d.probability.empty() && classes != nullptr) {
    nlohmann::json p = nlohmann::json::object();
    for (size_t k = 0; k < d.probability.size() && k < classes->size(); ++k)
      p[(*classes)[k]] = finite_or_null(d.probability[k]);
    j["probabilities"] = p;
  }
  return j;
}

}  // namespace

nlohmann::json feedback_json(const TrResult& r, const IngestLatency& latency, int64_t skipped_since_last) {
  nlohmann::json j{{"run", r.run}, {"volume", r.index}, {"skipped", skipped_since_last}};
  if (r.feedback) {
    j["feedback"] = finite_or_null(r.feedback->value);
    j["status"] = std::string(feedback_status_name(r.feedback->status));
    j["condition"] = std::string(volume_condition_name(r.feedback->condition));
    if (!r.feedback->reason.empty()) j["reason"] = r.feedback->reason;
  } else if (r.feedback_waits_for_rois) {
    j["feedback"] = nullptr;
    j["status"] = "rois-" + r.roi_status;  // rois-pending | rois-failed
    j["reason"] = r.roi_reason;
  } else {
    j["feedback"] = nullptr;
    j["status"] = "off";
  }
  if (!r.roi_status.empty()) j["roi_status"] = r.roi_status;
  if (r.motion) {
    const auto& p = r.motion->params;
    j["motion"] = {p.translation_mm[0], p.translation_mm[1], p.translation_mm[2],
                   p.rotation_deg[0],   p.rotation_deg[1],   p.rotation_deg[2]};
    j["fd_mm"] = finite_or_null(r.motion->fd_mm);
    j["dvars"] = finite_or_null(r.motion->dvars);
    j["motion_converged"] = r.motion->converged;
  }
  nlohmann::json rois = nlohmann::json::object();
  for (size_t i = 0; i < r.roi_names.size() && i < r.roi_means.size(); ++i)
    rois[r.roi_names[i]] = finite_or_null(r.roi_means[i]);
  if (!rois.empty()) j["rois"] = rois;
  if (!r.stage_errors.empty()) j["errors"] = r.stage_errors;
  // QA: this volume's once the stage ran (PUB), else the newest before it (the feedback line goes out first).
  if (const LiveQaSample* q = r.qa ? r.qa.get() : r.qa_previous.get()) {
    j["qa"] = qa_json(*q, false, 0);
    if (!q->alarms.empty()) j["qa_alarm"] = qa_alarm_json(q->alarms);
  }
  if (!r.decoder_status.empty()) j["decoder"] = decoder_json(r);
  j["latency_ms"] = latency_json(latency);
  return j;
}

LiveOutputs::LiveOutputs(zmq::context_t& context, const PipelineConfig& config) {
  // An output that cannot be bound (port in use...) is reported and left off: ingest and recording must go on.
  if (!config.results_pub.empty()) {
    try {
      publisher_ = std::make_unique<ResultPublisher>(context, ResultPublisherOptions{config.results_pub, 16});
    } catch (const std::exception& e) {
      spdlog::error("results PUB on {} off: {}", config.results_pub, e.what());
    }
  }
  if (!config.feedback_tcp.empty()) {
    try {
      const auto colon = config.feedback_tcp.rfind(':');
      if (colon == std::string::npos) throw std::invalid_argument("expected HOST:PORT");
      TcpFeedbackOptions o;
      o.address = config.feedback_tcp.substr(0, colon);
      o.port = static_cast<uint16_t>(std::stoi(config.feedback_tcp.substr(colon + 1)));
      tcp_ = std::make_unique<TcpFeedbackServer>(o);
    } catch (const std::exception& e) {
      spdlog::error("feedback TCP on {} off: {}", config.feedback_tcp, e.what());
    }
  }
  if (!config.feedback_udp.empty()) {
    try {
      std::vector<UdpDestination> d;
      for (const std::string& s : config.feedback_udp) d.push_back(parse_udp_destination(s));
      udp_ = std::make_unique<UdpFeedbackSender>(std::move(d));
    } catch (const std::exception& e) {
      spdlog::error("feedback UDP off: {}", e.what());
    }
  }
}

void LiveOutputs::send_feedback(const TrResult& r, IngestLatency& latency, int64_t skipped_since_last) {
  latency.sent_ns = now_ns();
  if (!tcp_ && !udp_) return;
  const std::string line = feedback_json(r, latency, skipped_since_last).dump();
  if (tcp_) tcp_->publish(line);
  if (udp_) udp_->send(line);
}

nlohmann::json not_analysed_json(const std::string& run, int64_t index, const std::string& reason,
                                 const IngestLatency& latency) {
  return {{"run", run},
          {"volume", index},
          {"skipped", 0},
          {"feedback", nullptr},
          {"status", "recorded-only"},
          {"reason", reason},
          {"latency_ms", latency_json(latency)}};
}

void LiveOutputs::send_not_analysed(const std::string& run, int64_t index, const std::string& reason,
                                    IngestLatency& latency) {
  latency.sent_ns = now_ns();
  if (!tcp_ && !udp_) return;
  const std::string line = not_analysed_json(run, index, reason, latency).dump();
  if (tcp_) tcp_->publish(line);
  if (udp_) udp_->send(line);
}

nlohmann::json result_header(const TrResult& r, const IngestLatency& latency, int64_t skipped_since_last,
                             std::string_view device, const LiveCounts& counts) {
  nlohmann::json header = feedback_json(r, latency, skipped_since_last);
  header["dims"] = r.dims;
  std::vector<double> affine;
  for (int i = 0; i < 4; ++i) {
    for (int k = 0; k < 4; ++k) affine.push_back(r.affine(i, k));
  }
  header["affine"] = affine;  // row-major voxel -> world mm
  if (!r.map_name.empty()) header["t_map_contrast"] = r.map_name;
  if (r.design_columns && !r.design_row.empty()) {
    header["design"] = {{"columns", *r.design_columns}, {"row", r.design_row}};
  }
  if (r.conditions && !r.conditions->empty()) header["conditions"] = *r.conditions;
  if (r.regions && !r.connectivity.empty()) header["regions"] = *r.regions;
  if (r.roi_labels) {
    header["roi_labels"] = {
        {"version", r.roi_labels->version}, {"names", r.roi_labels->names}, {"in_this_message", r.roi_labels_frame}};
  }
  if (r.qa) header["qa"] = qa_json(*r.qa, true, static_cast<int64_t>(r.qa->carpet.size()));
  header["device"] = device;
  header["counters"] = {{"received", counts.received},        {"analysed", counts.analysed},
                        {"skipped", counts.skipped},          {"dropped", counts.dropped},
                        {"duplicates", counts.duplicates},    {"missing", counts.missing},
                        {"not_analysed", counts.not_analysed}};
  return header;
}

void LiveOutputs::publish(const TrResult& r, IngestLatency& latency, int64_t skipped_since_last,
                          std::string_view device, const LiveCounts& counts) {
  if (!publisher_) return;
  nlohmann::json header = result_header(r, latency, skipped_since_last, device, counts);
  std::vector<ResultFrame> frames;
  const std::vector<int64_t> shape(r.dims.begin(), r.dims.end());
  auto add = [&](const char* name, const std::vector<float>& data) {
    if (!data.empty()) frames.push_back(frame(name, data, shape));
  };
  add("volume", r.volume);
  add("t_map", r.t_map);
  add("sliding_t_map", r.sliding_t_map);
  add("cca_map", r.cca_map);
  add("seed_map", r.seed_map);
  if (!r.connectivity.empty()) {
    frames.push_back(frame("connectivity", r.connectivity, {r.rois_in_atlas, r.rois_in_atlas}));
  }
  if (r.roi_labels && r.roi_labels_frame) add("roi_labels", r.roi_labels->bits);
  if (r.qa) {
    add("qa_tsnr", r.qa->tsnr_map);
    add("qa_cnr", r.qa->cnr_map);
    if (!r.qa->carpet.empty()) {
      frames.push_back(frame("qa_carpet", r.qa->carpet, {static_cast<int64_t>(r.qa->carpet.size())}));
    }
  }
  publisher_->publish(std::move(header), frames);
  latency.published_ns = now_ns();
}

void LiveOutputs::stop() {
  if (tcp_) tcp_->stop();
}

}  // namespace rtf::stream
