// decode_qa_header and take_qa_frame: absent or null fields are "not known" (NaN, -1), a field of another type is an
// error (the message is refused rather than shown half-read).
#include "viewer/qa_message.hpp"

#include <nlohmann/json.hpp>

namespace rtf::viewer {

namespace {

// Reads fields of one JSON object, remembering the first type error.
class Reader {
 public:
  Reader(const nlohmann::json& object, std::string where) : j_(object), where_(std::move(where)) {}

  double number(const char* key) {
    const auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return kQaNaN;
    if (it->is_number()) return it->get<double>();
    fail(key, "a number or null");
    return kQaNaN;
  }

  // An integer at least `min`; `fallback` when absent or null.
  int64_t integer(const char* key, int64_t fallback, int64_t min = -1) {
    const auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return fallback;
    if (it->is_number_integer() && it->get<int64_t>() >= min) return it->get<int64_t>();
    fail(key, "an integer >= " + std::to_string(min) + " or null");
    return fallback;
  }

  std::string text(const char* key) {
    const auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return {};
    if (it->is_string()) return it->get<std::string>();
    fail(key, "a string");
    return {};
  }

  bool flag(const char* key) {
    const auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return false;
    if (it->is_boolean()) return it->get<bool>();
    fail(key, "true or false");
    return false;
  }

  // The member if it has type `kind` (nullptr when absent or null, or of another type: then an error).
  const nlohmann::json* member(const char* key, nlohmann::json::value_t kind, const char* what) {
    const auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return nullptr;
    if (it->type() == kind) return &*it;
    fail(key, what);
    return nullptr;
  }

  void fail(const std::string& key, const std::string& what) {
    if (!error.has_value()) error = "'" + where_ + "." + key + "' is not " + what;
  }

  std::optional<std::string> error;

 private:
  const nlohmann::json& j_;
  std::string where_;
};

std::optional<std::string> decode_alarms(const nlohmann::json& list, std::vector<QaAlarm>& out) {
  if (!list.is_array()) return "'qa_alarm' is not an array";
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = "qa_alarm[" + std::to_string(i) + "]";
    if (!list[i].is_object()) return "'" + where + "' is not an object";
    Reader r(list[i], where);
    QaAlarm a;
    a.metric = r.text("metric");
    if (!r.error && a.metric.empty()) r.fail("metric", "a non-empty string");
    a.volume = r.integer("volume", -1);
    a.value = r.number("value");
    a.threshold = r.number("threshold");
    a.where = r.text("where");
    if (r.error) return r.error;
    out.push_back(std::move(a));
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> decode_qa_header(const nlohmann::json& header, int64_t message_volume, QaUpdate& out) {
  out = QaUpdate{};
  out.sample.volume = message_volume;
  if (const auto it = header.find("qa_alarm"); it != header.end() && !it->is_null()) {
    if (auto e = decode_alarms(*it, out.alarms)) return e;
  }
  const auto it = header.find("qa");
  if (it == header.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return "'qa' is not an object";
  out.present = true;
  using Kind = nlohmann::json::value_t;
  Reader r(*it, "qa");
  QaSample& s = out.sample;
  s.volume = r.integer("volume", message_volume, 0);
  s.fd_mm = r.number("fd_mm");
  s.dvars = r.number("dvars");
  s.global_signal = r.number("global_signal");
  s.outlier_fraction = r.number("outlier_fraction");
  s.quality_index = r.number("quality_index");
  s.slice_z_worst = r.number("slice_z_worst");
  s.tsnr_median = r.number("tsnr_median");
  s.sliding_tsnr_median = r.number("sliding_tsnr_median");
  s.cnr_p95 = r.number("cnr_p95");
  out.worst_slice = r.integer("worst_slice", -1);
  if (const auto* list = r.member("flagged_slices", Kind::array, "an array of slice indices")) {
    for (const auto& v : *list) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0) {
        r.fail("flagged_slices", "an array of slice indices");
        break;
      }
      out.flagged_slices.push_back(v.get<int64_t>());
    }
  }
  if (const auto* list = r.member("usable", Kind::array, "an array of objects")) {
    for (size_t i = 0; i < list->size() && !r.error; ++i) {
      if (!(*list)[i].is_object()) {
        r.fail("usable[" + std::to_string(i) + "]", "an object");
        break;
      }
      Reader row((*list)[i], "qa.usable[" + std::to_string(i) + "]");
      QaUsable u;
      u.fd_threshold_mm = row.number("fd_threshold_mm");
      u.frames = row.integer("frames", 0, 0);
      u.minutes = row.number("minutes");
      u.minutes_to_target = row.number("minutes_to_target");
      if (row.error) return row.error;
      out.usable.push_back(u);
    }
  }
  out.target_minutes = r.number("target_minutes");
  if (const auto* t = r.member("thresholds", Kind::object, "an object")) {
    Reader th(*t, "qa.thresholds");
    out.has_thresholds = true;
    out.thresholds.fd_mm = th.number("fd_mm");
    out.thresholds.outlier_fraction = th.number("outlier_fraction");
    out.thresholds.slice_z = th.number("slice_z");
    out.thresholds.tsnr_min = th.number("tsnr_min");
    if (th.error) return th.error;
  }
  out.carpet_rows = r.integer("carpet_rows", -1, 0);
  out.carpet_split = r.integer("carpet_split", 0, 0);
  if (!r.error && out.carpet_split > std::max<int64_t>(out.carpet_rows, 0)) {
    r.fail("carpet_split", "within [0, carpet_rows]");
  }
  out.tsnr_map_in_this_message = r.flag("tsnr_map_in_this_message");
  return r.error;
}

std::optional<std::string> take_qa_frame(const std::string& name, const nlohmann::json& shape,
                                         std::array<int64_t, 3> dims, std::vector<float>&& data, QaUpdate& out) {
  if (name == "qa_tsnr" || name == "qa_cnr") {  // maps on the run's grid
    bool same = shape.is_array() && shape.size() == 3;
    for (size_t i = 0; same && i < 3; ++i) same = shape[i].is_number_integer() && shape[i].get<int64_t>() == dims[i];
    if (!same) return "frame '" + name + "' has shape " + shape.dump() + ", not 'dims'";
    (name == "qa_tsnr" ? out.tsnr : out.cnr) = std::move(data);
    return std::nullopt;
  }
  if (name == "qa_carpet") {
    if (!out.present) return "frame 'qa_carpet' without a 'qa' header";
    if (!shape.is_array() || shape.size() != 1 || static_cast<int64_t>(data.size()) != out.carpet_rows) {
      return "frame 'qa_carpet' has shape " + shape.dump() + ", not [qa.carpet_rows] = [" +
             std::to_string(out.carpet_rows) + "]";
    }
    out.carpet_column = std::move(data);
    return std::nullopt;
  }
  return "not a QA frame: '" + name + "'";
}

}  // namespace rtf::viewer
