// decode_result_message: the PUB header's fields and the float32 frames it lists.
#include "viewer/result_message.hpp"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "viewer/qa_message.hpp"

namespace rtf::viewer {

namespace {

double number_or_nan(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : kNaN;
}

int64_t count_or(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : -1;
}

std::vector<std::string> strings(const nlohmann::json& j) {
  std::vector<std::string> out;
  if (!j.is_array()) return out;
  for (const auto& v : j) out.push_back(v.is_string() ? v.get<std::string>() : std::string());
  return out;
}

}  // namespace

std::variant<TrUpdate, DecodeError> decode_result_message(std::string_view header_json,
                                                          const std::vector<std::span<const std::byte>>& frames) {
  const nlohmann::json h = nlohmann::json::parse(header_json, nullptr, false);
  if (h.is_discarded() || !h.is_object()) return DecodeError{"header is not a JSON object"};
  TrUpdate u;
  try {
    if (!h.contains("volume") || !h["volume"].is_number_integer()) return DecodeError{"header has no integer 'volume'"};
    u.sample.volume = h["volume"].get<int64_t>();
    if (h.contains("run") && h["run"].is_string()) u.run = h["run"].get<std::string>();
    if (h.contains("device") && h["device"].is_string()) u.device = h["device"].get<std::string>();
    if (h.contains("t_map_contrast") && h["t_map_contrast"].is_string()) u.contrast = h["t_map_contrast"];
    u.seq = count_or(h, "seq");
    if (h.contains("stream") && h["stream"].is_string()) u.stream = h["stream"].get<std::string>();
    u.sample.feedback = number_or_nan(h, "feedback");
    u.sample.fd_mm = number_or_nan(h, "fd_mm");
    u.sample.dvars = number_or_nan(h, "dvars");
    u.sample.skipped_before = std::max<int64_t>(0, count_or(h, "skipped"));
    if (h.contains("motion") && h["motion"].is_array() && h["motion"].size() == 6) {
      for (size_t i = 0; i < 6; ++i) {
        u.sample.motion[i] = h["motion"][i].is_number() ? h["motion"][i].get<double>() : kNaN;
      }
    }
    if (h.contains("rois") && h["rois"].is_object()) {
      for (const auto& [name, value] : h["rois"].items()) {
        u.roi_names.push_back(name);
        u.sample.rois.push_back(value.is_number() ? value.get<double>() : kNaN);
      }
    }
    if (h.contains("design") && h["design"].is_object()) {
      u.design_columns = strings(h["design"].value("columns", nlohmann::json::array()));
      const auto row = h["design"].value("row", nlohmann::json::array());
      for (const auto& v : row) u.sample.design_row.push_back(v.is_number() ? v.get<double>() : kNaN);
    }
    if (h.contains("latency_ms") && h["latency_ms"].is_object()) {
      for (const std::string& step : latency_step_names())
        u.sample.latency_ms.push_back(number_or_nan(h["latency_ms"], step.c_str()));
    }
    if (h.contains("regions")) u.regions = strings(h["regions"]);
    if (h.contains("roi_status") && h["roi_status"].is_string()) u.roi_status = h["roi_status"].get<std::string>();
    if (h.contains("roi_labels") && h["roi_labels"].is_object()) {
      u.roi_labels_version = std::max<int64_t>(0, count_or(h["roi_labels"], "version"));
      u.roi_label_names = strings(h["roi_labels"].value("names", nlohmann::json::array()));
    }
    if (h.contains("counters") && h["counters"].is_object()) {
      const auto& c = h["counters"];
      u.received = count_or(c, "received");
      u.analysed = count_or(c, "analysed");
      u.skipped = count_or(c, "skipped");
      u.dropped = count_or(c, "dropped");
      u.duplicates = count_or(c, "duplicates");
      u.missing = count_or(c, "missing");
    }
    if (h.contains("dims")) {
      const auto& d = h["dims"];
      if (!d.is_array() || d.size() != 3) return DecodeError{"'dims' is not 3 integers"};
      for (size_t i = 0; i < 3; ++i) {
        if (!d[i].is_number_integer() || d[i].get<int64_t>() < 1 || d[i].get<int64_t>() > 2048) {
          return DecodeError{"'dims' is not 3 integers in [1, 2048]"};
        }
        u.dims[i] = d[i].get<int64_t>();
      }
    }
    if (h.contains("affine") && h["affine"].is_array() && h["affine"].size() == 16) {
      for (size_t i = 0; i < 16; ++i) u.affine[i] = h["affine"][i].is_number() ? h["affine"][i].get<double>() : 0.0;
    }
    if (auto e = decode_qa_header(h, u.sample.volume, u.qa)) return DecodeError{*std::move(e)};
    const nlohmann::json listed = h.value("frames", nlohmann::json::array());
    if (!listed.is_array() || listed.size() != frames.size()) {
      return DecodeError{"header lists " + std::to_string(listed.is_array() ? listed.size() : 0) + " frames, " +
                         std::to_string(frames.size()) + " arrived"};
    }
    const int64_t voxels = u.dims[0] * u.dims[1] * u.dims[2];
    for (size_t i = 0; i < frames.size(); ++i) {
      const auto& f = listed[i];
      const std::string name = f.value("name", "");
      if (f.value("dtype", "") != "float32") return DecodeError{"frame '" + name + "' is not float32"};
      int64_t elements = 1;
      const auto shape = f.value("shape", nlohmann::json::array());
      const auto bytes = static_cast<int64_t>(frames[i].size());
      for (const auto& s : shape) {
        // Sizes and products beyond the frame's bytes cannot match it (and would overflow).
        const int64_t size = s.is_number_integer() ? s.get<int64_t>() : -1;
        elements = elements >= 0 && size >= 0 && size <= bytes && elements * size <= bytes ? elements * size : -1;
      }
      if (shape.empty() || elements < 0 || static_cast<size_t>(elements) * 4 != frames[i].size()) {
        return DecodeError{"frame '" + name + "' has " + std::to_string(frames[i].size()) + " bytes, its shape needs " +
                           std::to_string(elements * 4)};
      }
      std::vector<float> data(static_cast<size_t>(elements));
      std::memcpy(data.data(), frames[i].data(), frames[i].size());
      if (name == "connectivity") {
        if (shape.size() != 2 || shape[0] != shape[1]) return DecodeError{"'connectivity' is not square"};
        u.regions_count = shape[0].get<int64_t>();
        u.connectivity = std::move(data);
        continue;
      }
      if (name == "qa_tsnr" || name == "qa_cnr" || name == "qa_carpet") {
        if (auto e = take_qa_frame(name, shape, u.dims, std::move(data), u.qa)) return DecodeError{*std::move(e)};
        continue;
      }
      // Frames this viewer does not know are skipped whatever their shape: fields may be added (§8).
      const bool known = name == "volume" || name == "t_map" || name == "sliding_t_map" || name == "cca_map" ||
                         name == "seed_map" || name == "roi_labels";
      if (!known) continue;
      if (elements != voxels) return DecodeError{"frame '" + name + "' does not match 'dims'"};
      if (name == "volume")
        u.volume = std::move(data);
      else if (name == "t_map")
        u.t_map = std::move(data);
      else if (name == "sliding_t_map")
        u.sliding_t_map = std::move(data);
      else if (name == "cca_map")
        u.cca_map = std::move(data);
      else if (name == "seed_map")
        u.seed_map = std::move(data);
      else
        u.roi_labels = std::move(data);
    }
  } catch (const std::exception& e) {
    return DecodeError{std::string("header: ") + e.what()};
  }
  return u;
}

}  // namespace rtf::viewer
