// Slice orders, BIDS SliceTiming parsing and reference-slice selection.
#include "core/temporal/slice_order.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace rtf {

SliceOrder parse_slice_order(std::string_view name) {
  if (name == "ascending") return SliceOrder::kAscending;
  if (name == "descending") return SliceOrder::kDescending;
  if (name == "interleaved") return SliceOrder::kInterleaved;
  if (name == "interleaved-siemens") return SliceOrder::kInterleavedSiemens;
  throw std::invalid_argument(fmt::format(
      "unknown slice order '{}' (expected ascending, descending, interleaved or interleaved-siemens)", name));
}

std::string to_string(SliceOrder order) {
  switch (order) {
    case SliceOrder::kAscending:
      return "ascending";
    case SliceOrder::kDescending:
      return "descending";
    case SliceOrder::kInterleaved:
      return "interleaved";
    case SliceOrder::kInterleavedSiemens:
      return "interleaved-siemens";
  }
  return "unknown";
}

std::vector<int> acquisition_order(SliceOrder order, int num_slices) {
  if (num_slices < 1) throw std::invalid_argument(fmt::format("slice order: {} slices", num_slices));
  std::vector<int> result;
  result.reserve(static_cast<size_t>(num_slices));
  switch (order) {
    case SliceOrder::kAscending:
      for (int z = 0; z < num_slices; ++z) result.push_back(z);
      break;
    case SliceOrder::kDescending:
      for (int z = num_slices - 1; z >= 0; --z) result.push_back(z);
      break;
    case SliceOrder::kInterleaved:
    case SliceOrder::kInterleavedSiemens: {
      const bool second_first = order == SliceOrder::kInterleavedSiemens && num_slices % 2 == 0;
      const int first = second_first ? 1 : 0;
      for (int z = first; z < num_slices; z += 2) result.push_back(z);
      for (int z = 1 - first; z < num_slices; z += 2) result.push_back(z);
      break;
    }
  }
  return result;
}

std::vector<double> slice_times(SliceOrder order, int num_slices, double tr_s) {
  if (!(tr_s > 0.0) || !std::isfinite(tr_s)) {
    throw std::invalid_argument(fmt::format("slice timing: TR must be positive, got {} s", tr_s));
  }
  const auto acquired = acquisition_order(order, num_slices);
  std::vector<double> times(static_cast<size_t>(num_slices));
  for (int k = 0; k < num_slices; ++k) {
    times[static_cast<size_t>(acquired[static_cast<size_t>(k)])] = k * tr_s / num_slices;
  }
  return times;
}

std::vector<double> parse_slice_timing_json(std::string_view json_text) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument(fmt::format("slice timing: invalid JSON: {}", e.what()));
  }
  if (!doc.is_object() || !doc.contains("SliceTiming")) {
    throw std::invalid_argument("slice timing: JSON has no \"SliceTiming\" key");
  }
  const auto& list = doc["SliceTiming"];
  if (!list.is_array() || list.empty()) {
    throw std::invalid_argument("slice timing: \"SliceTiming\" is not a non-empty array");
  }
  std::vector<double> times;
  for (const auto& v : list) {
    if (!v.is_number()) throw std::invalid_argument("slice timing: \"SliceTiming\" holds a non-number");
    times.push_back(v.get<double>());
  }
  return times;
}

std::vector<double> parse_slice_timing_text(std::string_view text) {
  std::string cleaned;
  cleaned.reserve(text.size());
  bool comment = false;
  for (char c : text) {
    if (c == '#') comment = true;
    if (c == '\n') comment = false;
    cleaned.push_back(comment || c == ',' || c == ';' ? ' ' : c);
  }
  std::istringstream in(cleaned);
  std::vector<double> times;
  std::string token;
  while (in >> token) {
    size_t used = 0;
    double v = 0.0;
    try {
      v = std::stod(token, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != token.size()) throw std::invalid_argument(fmt::format("slice timing: '{}' is not a number", token));
    times.push_back(v);
  }
  if (times.empty()) throw std::invalid_argument("slice timing: no numbers in the text");
  return times;
}

std::vector<double> read_slice_timing(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::invalid_argument(fmt::format("slice timing: cannot open {}", file.string()));
  std::ostringstream text;
  text << in.rdbuf();
  std::string ext = file.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  try {
    return ext == ".json" ? parse_slice_timing_json(text.str()) : parse_slice_timing_text(text.str());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("{} ({})", e.what(), file.string()));
  }
}

void validate_slice_times(std::span<const double> times, int num_slices, double tr_s) {
  if (!(tr_s > 0.0) || !std::isfinite(tr_s)) {
    throw std::invalid_argument(fmt::format("slice timing: TR must be positive, got {} s", tr_s));
  }
  if (static_cast<int64_t>(times.size()) != num_slices) {
    throw std::invalid_argument(
        fmt::format("slice timing: {} slice times given for an image with {} slices", times.size(), num_slices));
  }
  for (size_t z = 0; z < times.size(); ++z) {
    if (!(times[z] >= 0.0 && times[z] < tr_s)) {
      throw std::invalid_argument(
          fmt::format("slice timing: slice {} time {} s is outside [0, TR = {} s)", z, times[z], tr_s));
    }
  }
}

int default_reference_slice(std::span<const double> times) {
  if (times.empty()) throw std::invalid_argument("slice timing: no slices");
  std::vector<int> by_time(times.size());
  std::iota(by_time.begin(), by_time.end(), 0);
  std::stable_sort(by_time.begin(), by_time.end(),
                   [&](int a, int b) { return times[static_cast<size_t>(a)] < times[static_cast<size_t>(b)]; });
  return by_time[times.size() / 2];
}

double reference_time(std::span<const double> times, double tr_s, std::optional<int> ref_slice,
                      std::optional<double> ref_time_s) {
  if (ref_slice && ref_time_s) throw std::invalid_argument("slice timing: give a reference slice or a time, not both");
  if (ref_slice) {
    if (*ref_slice < 0 || *ref_slice >= static_cast<int>(times.size())) {
      throw std::invalid_argument(
          fmt::format("slice timing: reference slice {} outside 0..{}", *ref_slice, times.size() - 1));
    }
    return times[static_cast<size_t>(*ref_slice)];
  }
  if (ref_time_s) {
    if (!(*ref_time_s >= 0.0 && *ref_time_s < tr_s)) {
      throw std::invalid_argument(
          fmt::format("slice timing: reference time {} s is outside [0, TR = {} s)", *ref_time_s, tr_s));
    }
    return *ref_time_s;
  }
  return times[static_cast<size_t>(default_reference_slice(times))];
}

}  // namespace rtf
