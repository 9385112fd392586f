// Acquisition order -> times (order[m] is acquired at m * duration); the NIfTI header read raw through zlib (which
// reads .nii and .nii.gz alike), NIfTI-1 (348 bytes) or NIfTI-2 (540 bytes), either byte order; the BIDS sidecar's
// SliceTiming through nlohmann-json.
#include "sim/dicom/slice_timing.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace rtf::sim {

namespace {

std::vector<double> times_of(const std::vector<int64_t>& order, int64_t nz, double duration) {
  std::vector<double> t(static_cast<size_t>(nz), 0.0);
  for (size_t m = 0; m < order.size(); ++m) t[static_cast<size_t>(order[m])] = static_cast<double>(m) * duration;
  return t;
}

// Acquisition order of slices low .. high for NIfTI slice code `code` (1 .. 6).
std::vector<int64_t> nifti_order(int code, int64_t low, int64_t high) {
  std::vector<int64_t> order;
  const auto run = [&](int64_t from, int64_t step) {
    for (int64_t k = from; k >= low && k <= high; k += step) order.push_back(k);
  };
  switch (code) {
    case 1:
      run(low, 1);
      break;
    case 2:
      run(high, -1);
      break;
    case 3:
      run(low, 2);
      run(low + 1, 2);
      break;
    case 4:
      run(high, -2);
      run(high - 1, -2);
      break;
    case 5:
      run(low + 1, 2);
      run(low, 2);
      break;
    case 6:
      run(high - 1, -2);
      run(high, -2);
      break;
    default:
      throw std::invalid_argument(fmt::format("unknown NIfTI slice_code {}", code));
  }
  return order;
}

template <typename T>
T field(const std::array<unsigned char, 540>& h, size_t offset, bool swap) {
  std::array<unsigned char, sizeof(T)> bytes{};
  std::memcpy(bytes.data(), h.data() + offset, sizeof(T));
  if (swap) std::reverse(bytes.begin(), bytes.end());
  T v;
  std::memcpy(&v, bytes.data(), sizeof(T));
  return v;
}

}  // namespace

SliceOrder parse_slice_order(std::string_view name) {
  if (name == "none") return SliceOrder::kNone;
  if (name == "ascending") return SliceOrder::kAscending;
  if (name == "descending") return SliceOrder::kDescending;
  if (name == "interleaved") return SliceOrder::kInterleaved;
  if (name == "siemens-interleaved") return SliceOrder::kSiemensInterleaved;
  throw std::invalid_argument(
      fmt::format("slice order '{}': expected none, ascending, descending, interleaved or siemens-interleaved", name));
}

std::vector<double> slice_timing(SliceOrder order, int64_t nz, double tr_s) {
  if (order == SliceOrder::kNone || nz < 1) return {};
  const int64_t high = nz - 1;
  const double duration = tr_s / static_cast<double>(nz);
  switch (order) {
    case SliceOrder::kAscending:
      return times_of(nifti_order(1, 0, high), nz, duration);
    case SliceOrder::kDescending:
      return times_of(nifti_order(2, 0, high), nz, duration);
    case SliceOrder::kInterleaved:
      return times_of(nifti_order(3, 0, high), nz, duration);
    case SliceOrder::kSiemensInterleaved:
      return times_of(nifti_order(nz % 2 == 1 ? 3 : 5, 0, high), nz, duration);
    case SliceOrder::kNone:
      break;
  }
  return {};
}

std::optional<std::vector<double>> nifti_slice_timing(const std::filesystem::path& path, int64_t nz) {
  gzFile in = gzopen(path.c_str(), "rb");
  if (in == nullptr) throw std::runtime_error(fmt::format("{}: cannot open", path.string()));
  std::array<unsigned char, 540> h{};
  const int got = gzread(in, h.data(), static_cast<unsigned>(h.size()));
  gzclose(in);
  if (got < 348) throw std::runtime_error(fmt::format("{}: too short for a NIfTI header", path.string()));
  const int32_t size = field<int32_t>(h, 0, false);
  const bool swap = size != 348 && size != 540;
  const int32_t sizeof_hdr = field<int32_t>(h, 0, swap);
  int code = 0, dim_info = 0, time_units = 0;
  int64_t start = 0, end = 0;
  double duration = 0;
  if (sizeof_hdr == 348) {
    dim_info = h[39];
    start = field<int16_t>(h, 74, swap);
    end = field<int16_t>(h, 120, swap);
    code = h[122];
    time_units = h[123] & 0x38;
    duration = field<float>(h, 132, swap);
  } else if (sizeof_hdr == 540 && got >= 540) {
    duration = field<double>(h, 208, swap);
    start = field<int64_t>(h, 224, swap);
    end = field<int64_t>(h, 232, swap);
    code = field<int32_t>(h, 496, swap);
    time_units = field<int32_t>(h, 500, swap) & 0x38;
    dim_info = h[524];
  } else {
    throw std::runtime_error(fmt::format("{}: not a NIfTI-1 or NIfTI-2 header", path.string()));
  }
  if (code == 0 || !(duration > 0)) return std::nullopt;
  const int slice_dim = (dim_info >> 4) & 3;
  if (slice_dim != 0 && slice_dim != 3) {
    throw std::invalid_argument(
        fmt::format("{}: slice timing along dimension {} (dim_info); DICOM slices are the third dimension",
                    path.string(), slice_dim));
  }
  if (time_units == 16) duration /= 1e3;  // ms
  if (time_units == 24) duration /= 1e6;  // us
  if (end <= 0 || end >= nz) end = nz - 1;
  if (start < 0 || start > end) start = 0;
  return times_of(nifti_order(code, start, end), nz, duration);
}

std::filesystem::path bids_sidecar(const std::filesystem::path& nifti) {
  std::string name = nifti.filename().string();
  for (const char* ext : {".nii.gz", ".nii"}) {
    const std::string e(ext);
    if (name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0) {
      name.resize(name.size() - e.size());
      break;
    }
  }
  return nifti.parent_path() / (name + ".json");
}

std::optional<std::vector<double>> bids_slice_timing(const std::filesystem::path& nifti, int64_t nz, double tr_s) {
  const std::filesystem::path sidecar = bids_sidecar(nifti);
  std::ifstream in(sidecar);
  if (!in) return std::nullopt;
  const nlohmann::json json = nlohmann::json::parse(in, nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    throw std::invalid_argument(fmt::format("{}: not a JSON object", sidecar.string()));
  }
  if (!json.contains("SliceTiming")) return std::nullopt;
  const nlohmann::json& times = json["SliceTiming"];
  std::vector<double> out;
  if (times.is_array()) {
    for (const auto& t : times) {
      if (!t.is_number()) break;
      out.push_back(t.get<double>());
    }
  }
  const bool within = std::all_of(out.begin(), out.end(), [&](double t) { return t >= 0.0 && t < tr_s; });
  if (!times.is_array() || static_cast<int64_t>(out.size()) != nz || out.size() != times.size() || !within) {
    throw std::invalid_argument(
        fmt::format("{}: SliceTiming must be {} numbers in [0, TR {} s)", sidecar.string(), nz, tr_s));
  }
  return out;
}

}  // namespace rtf::sim
