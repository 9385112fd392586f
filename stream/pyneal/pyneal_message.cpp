// pyneal header parsing, NumPy dtype names, C-order -> x-fastest reorder and the protocol-1 VolumeHeader built
// from them (docs/pyneal.md). Untrusted input: every access is type-checked and nothing here throws on bad input.
#include "stream/pyneal/pyneal_message.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>

#include "stream/protocol/checksum.hpp"
#include "stream/protocol/json_fields.hpp"
#include "stream/protocol_version.hpp"

namespace rtf::stream::pyneal {

using detail::as_int;
using detail::field_error;
using detail::find;
using detail::missing;
using detail::show;
using detail::StopParse;
using nlohmann::json;

namespace {

struct DtypeName {
  std::string_view name;  // str(numpy.dtype) on a little-endian machine
  char kind;              // array-protocol kind: 'u', 'i', 'f'
  size_t bytes;
  DataType type;
};

constexpr std::array<DtypeName, 6> kDtypes{{
    {"uint8", 'u', 1, DataType::kUint8},
    {"int16", 'i', 2, DataType::kInt16},
    {"uint16", 'u', 2, DataType::kUint16},
    {"int32", 'i', 4, DataType::kInt32},
    {"float32", 'f', 4, DataType::kFloat32},
    {"float64", 'f', 8, DataType::kFloat64},
}};

constexpr std::string_view kDtypeList = "uint8, int16, uint16, int32, float32, float64 (or '<u1', '<i2', '>f8', ...)";

std::string_view trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// 4 rows of 4 finite numbers, last row [0, 0, 0, 1] (within 1e-6; stored exactly).
ProtocolError read_affine_rows(const json& rows, std::array<std::array<double, 4>, 4>& out) {
  if (!rows.is_array() || rows.size() != 4) {
    return field_error(ErrorCode::kInvalidField, "affine",
                       "must be a 4x4 list (4 rows of 4 numbers), got " + show(rows));
  }
  std::array<std::array<double, 4>, 4> a{};
  for (size_t r = 0; r < 4; ++r) {
    const json& row = rows[r];
    if (!row.is_array() || row.size() != 4) {
      return field_error(ErrorCode::kInvalidField, fmt::format("affine[{}]", r),
                         "must be a row of 4 numbers, got " + show(row));
    }
    for (size_t c = 0; c < 4; ++c) {
      const json& v = row[c];
      if (!v.is_number()) {
        return field_error(ErrorCode::kInvalidField, fmt::format("affine[{}][{}]", r, c),
                           "must be a number, got " + show(v));
      }
      a[r][c] = v.get<double>();
      if (!std::isfinite(a[r][c])) {
        return field_error(ErrorCode::kInvalidField, fmt::format("affine[{}][{}]", r, c), "must be finite");
      }
    }
  }
  constexpr std::array<double, 4> kLastRow{0, 0, 0, 1};
  for (size_t c = 0; c < 4; ++c) {
    if (!(std::abs(a[3][c] - kLastRow[c]) <= 1e-6)) {
      return field_error(
          ErrorCode::kInvalidField, "affine[3]",
          fmt::format("last row must be [0, 0, 0, 1], got [{}, {}, {}, {}]", a[3][0], a[3][1], a[3][2], a[3][3]));
    }
  }
  a[3] = kLastRow;
  out = a;
  return {};
}

// pyneal sends the affine as a string: json.dumps(affine.tolist()). A plain 4x4 JSON list is accepted too.
ProtocolError read_affine(const json& value, std::array<std::array<double, 4>, 4>& out) {
  if (value.is_array()) return read_affine_rows(value, out);
  if (!value.is_string()) {
    return field_error(ErrorCode::kInvalidField, "affine",
                       "must be a string holding a JSON 4x4 list (json.dumps(affine.tolist())), got " + show(value));
  }
  const auto& text = value.get_ref<const std::string&>();
  if (text.size() > kMaxAffineChars) {
    return field_error(ErrorCode::kInvalidField, "affine",
                       fmt::format("string is {} characters, the limit is {}", text.size(), kMaxAffineChars));
  }
  const json::parser_callback_t callback = [](int depth, json::parse_event_t event, json&) {
    if (event == json::parse_event_t::object_start) throw StopParse{"an object where a 4x4 list belongs"};
    if (event == json::parse_event_t::array_start && depth >= 2) throw StopParse{"lists nested deeper than 4x4"};
    return true;
  };
  json rows;
  try {
    rows = json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const StopParse& stop) {
    return field_error(ErrorCode::kInvalidField, "affine", stop.reason);
  } catch (const json::exception& e) {
    return field_error(ErrorCode::kInvalidField, "affine",
                       "string is not a JSON 4x4 list (NaN/Infinity are not JSON): " + detail::sanitize(e.what()));
  }
  return read_affine_rows(rows, out);
}

// "TR": pyneal sends str(seconds) ("2.0"); json.loads-able text or a plain JSON number is accepted.
ProtocolError read_tr(const json& value, double& seconds, bool& was_ms) {
  double v = 0;
  if (value.is_number()) {
    v = value.get<double>();
  } else if (value.is_string()) {
    const auto& s = value.get_ref<const std::string&>();
    if (s.size() > kMaxTrChars) {
      return field_error(ErrorCode::kInvalidField, "TR", fmt::format("longer than {} characters", kMaxTrChars));
    }
    const std::string_view text = trim(s);
    const json parsed = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_number()) {
      return field_error(
          ErrorCode::kInvalidField, "TR",
          fmt::format("must be a number in a string (e.g. \"2.0\"), got \"{}\"", detail::sanitize(s, 64)));
    }
    v = parsed.get<double>();
  } else {
    return field_error(ErrorCode::kInvalidField, "TR", "must be a string holding a number, got " + show(value));
  }
  if (!std::isfinite(v) || !(v > 0.0)) {
    return field_error(ErrorCode::kInvalidField, "TR", fmt::format("must be positive and finite, got {}", v));
  }
  was_ms = v >= kTrMillisecondThreshold;
  seconds = was_ms ? v / 1000.0 : v;
  return {};
}

ProtocolError read_header(const json& obj, const ProtocolLimits& limits, PynealHeader& h) {
  // volIdx: 0-based index within the run.
  int64_t index = 0;
  ProtocolError e = detail::read_int(obj, "volIdx", 0, std::numeric_limits<int64_t>::max(), index);
  if (!e.ok()) return e;
  if (index >= limits.max_volumes) {
    return field_error(ErrorCode::kIndexOutOfRange, "volIdx",
                       fmt::format("{} is not below this server's max_volumes {}", index, limits.max_volumes));
  }
  h.vol_idx = index;

  e = detail::read_string(obj, "dtype", 32, h.dtype_name);
  if (!e.ok()) return e;
  const auto dtype = parse_numpy_dtype(h.dtype_name);
  if (!dtype) {
    return field_error(ErrorCode::kInvalidField, "dtype",
                       fmt::format("must be one of {}, got \"{}\"", kDtypeList, detail::sanitize(h.dtype_name, 32)));
  }
  h.dtype = *dtype;

  const json* shape = find(obj, "shape");
  if (shape == nullptr) return missing("shape");
  if (!shape->is_array() || shape->size() != 3) {
    return field_error(ErrorCode::kInvalidField, "shape",
                       "must be a list of 3 integers (a 3D volume, x, y, z), got " + show(*shape));
  }
  for (size_t i = 0; i < 3; ++i) {
    const auto v = as_int((*shape)[i]);
    if (!v || *v < 1 || *v > kMaxDim) {
      return field_error(ErrorCode::kInvalidField, fmt::format("shape[{}]", i),
                         fmt::format("must be an integer in [1, {}], got {}", kMaxDim, show((*shape)[i])));
    }
    h.shape[i] = *v;
  }
  if (h.shape[0] * h.shape[1] * h.shape[2] > kMaxVoxels) {
    return field_error(ErrorCode::kInvalidField, "shape",
                       fmt::format("{}x{}x{} has more than {} voxels", h.shape[0], h.shape[1], h.shape[2], kMaxVoxels));
  }
  if (h.payload_bytes() > limits.max_payload_bytes) {
    return field_error(ErrorCode::kTooLarge, "shape",
                       fmt::format("{}x{}x{} of {} is {} bytes, above this server's limit of {}", h.shape[0],
                                   h.shape[1], h.shape[2], h.dtype_name, h.payload_bytes(), limits.max_payload_bytes));
  }

  const json* affine = find(obj, "affine");
  if (affine == nullptr) return missing("affine");
  e = read_affine(*affine, h.affine);
  if (!e.ok()) return e;

  h.tr_s.reset();
  h.tr_was_milliseconds = false;
  if (const json* tr = find(obj, "TR")) {
    double seconds = 0;
    e = read_tr(*tr, seconds, h.tr_was_milliseconds);
    if (!e.ok()) return e;
    h.tr_s = seconds;
  }

  h.ignored_fields.clear();
  for (const auto& [key, value] : obj.items()) {
    if (key != "volIdx" && key != "dtype" && key != "shape" && key != "affine" && key != "TR") {
      h.ignored_fields.push_back(detail::sanitize(key, 64));
    }
  }
  return {};
}

template <size_t B>
void reorder(const std::byte* in, const std::array<int64_t, 3>& shape, bool swap, std::byte* out) {
  const auto nx = static_cast<size_t>(shape[0]);
  const auto ny = static_cast<size_t>(shape[1]);
  const auto nz = static_cast<size_t>(shape[2]);
  const size_t x_stride = ny * nz * B;  // bytes between (i, j, k) and (i+1, j, k) in the C-ordered input
  std::byte* dst = out;
  // Writes are sequential (x fastest); reads stride through the input.
  for (size_t k = 0; k < nz; ++k) {
    for (size_t j = 0; j < ny; ++j) {
      const std::byte* src = in + (j * nz + k) * B;
      for (size_t i = 0; i < nx; ++i, src += x_stride, dst += B) {
        if (swap) {
          for (size_t b = 0; b < B; ++b) dst[b] = src[B - 1 - b];
        } else {
          std::memcpy(dst, src, B);
        }
      }
    }
  }
}

}  // namespace

std::optional<NumpyDtype> parse_numpy_dtype(std::string_view name) {
  for (const auto& d : kDtypes) {
    if (name == d.name) return NumpyDtype{d.type, d.bytes, false};
  }
  // Array-protocol type string: [<>=|] kind size.
  if (name.size() < 2 || name.size() > 3) return std::nullopt;
  char order = '=';
  if (name.size() == 3) {
    order = name[0];
    name.remove_prefix(1);
    if (order != '<' && order != '>' && order != '=' && order != '|') return std::nullopt;
  }
  const char kind = name[0];
  if (name[1] < '1' || name[1] > '9') return std::nullopt;
  const auto bytes = static_cast<size_t>(name[1] - '0');
  if (order == '|' && bytes != 1) return std::nullopt;  // '|' is NumPy's "byte order not applicable"
  for (const auto& d : kDtypes) {
    if (d.kind == kind && d.bytes == bytes) return NumpyDtype{d.type, d.bytes, order == '>' && bytes > 1};
  }
  return std::nullopt;
}

uint64_t PynealHeader::payload_bytes() const {
  for (const int64_t d : shape)
    if (d <= 0) return 0;
  return static_cast<uint64_t>(shape[0]) * static_cast<uint64_t>(shape[1]) * static_cast<uint64_t>(shape[2]) *
         dtype.bytes;
}

Parsed<PynealHeader> parse_pyneal_header(std::string_view text, const ProtocolLimits& limits) {
  using Result = Parsed<PynealHeader>;
  auto parsed = detail::parse_json_object(text, limits.max_header_bytes);
  if (!parsed.ok()) return Result::failure(parsed.error.code, std::move(parsed.error.reason));
  PynealHeader header;
  ProtocolError e;
  try {
    e = read_header(*parsed.value, limits, header);
  } catch (const std::exception& ex) {  // not expected: every access above is type-checked first
    e = {ErrorCode::kMalformed, "header frame: " + detail::sanitize(ex.what())};
  }
  if (!e.ok()) return Result::failure(e.code, std::move(e.reason));
  return {std::move(header), {}};
}

void c_order_to_x_fastest(std::span<const std::byte> in, const std::array<int64_t, 3>& shape, size_t sample_bytes,
                          bool swap_bytes, std::span<std::byte> out) {
  for (const int64_t d : shape) {
    if (d < 1) throw std::invalid_argument("c_order_to_x_fastest: shape must be positive");
  }
  const uint64_t bytes = static_cast<uint64_t>(shape[0]) * static_cast<uint64_t>(shape[1]) *
                         static_cast<uint64_t>(shape[2]) * sample_bytes;
  if (in.size() != bytes || out.size() != bytes) {
    throw std::invalid_argument(fmt::format("c_order_to_x_fastest: {} and {} bytes for {}x{}x{} of {}-byte samples",
                                            in.size(), out.size(), shape[0], shape[1], shape[2], sample_bytes));
  }
  switch (sample_bytes) {
    case 1:
      return reorder<1>(in.data(), shape, false, out.data());
    case 2:
      return reorder<2>(in.data(), shape, swap_bytes, out.data());
    case 4:
      return reorder<4>(in.data(), shape, swap_bytes, out.data());
    case 8:
      return reorder<8>(in.data(), shape, swap_bytes, out.data());
    default:
      throw std::invalid_argument(
          fmt::format("c_order_to_x_fastest: sample size {} is not 1, 2, 4 or 8", sample_bytes));
  }
}

Parsed<PynealVolume> to_volume(const PynealHeader& h, std::span<const std::byte> data,
                               const PynealParseOptions& options) {
  using Result = Parsed<PynealVolume>;
  if (!valid_id(options.session) || !valid_id(options.run)) {
    return Result::failure(ErrorCode::kInternal,
                           fmt::format("rtfmri's session \"{}\" / run \"{}\" is not a valid id",
                                       detail::sanitize(options.session, 80), detail::sanitize(options.run, 80)));
  }
  if (data.size() != h.payload_bytes()) {
    return Result::failure(
        ErrorCode::kPayloadSize,
        fmt::format("data frame has {} bytes, shape {}x{}x{} of {} needs {}", data.size(), h.shape[0], h.shape[1],
                    h.shape[2], detail::sanitize(h.dtype_name, 32), h.payload_bytes()));
  }
  PynealVolume v;
  VolumeHeader& out = v.header;
  out.protocol = kProtocolVersion;
  out.session = options.session;
  out.run = options.run;
  out.index = h.vol_idx;
  out.dims = h.shape;
  out.affine = h.affine;
  for (size_t c = 0; c < 3; ++c) {
    const double norm = std::hypot(h.affine[0][c], h.affine[1][c], h.affine[2][c]);
    if (!(norm > 1e-6) || !std::isfinite(norm)) {
      return Result::failure(
          ErrorCode::kInvalidField,
          fmt::format("field 'affine': column {} has length {} (voxel size must be positive)", c, norm));
    }
    out.voxel_mm[c] = norm;
  }
  out.datatype = h.dtype.type;
  if (options.tr_override_s) {
    out.tr_s = *options.tr_override_s;
  } else if (h.tr_s) {
    out.tr_s = *h.tr_s;
  } else {
    return Result::failure(ErrorCode::kMissingField,
                           "field 'TR': required (this sender sends no TR; give rtfmri a TR override)");
  }
  if (!std::isfinite(out.tr_s) || !(out.tr_s > 0.0)) {
    return Result::failure(ErrorCode::kInternal, fmt::format("TR override {} is not positive", out.tr_s));
  }
  out.payload_bytes = h.payload_bytes();
  v.payload.resize(static_cast<size_t>(out.payload_bytes));
  c_order_to_x_fastest(data, h.shape, h.dtype.bytes, h.dtype.big_endian, v.payload);
  out.checksum = crc32(v.payload);
  return {std::move(v), {}};
}

Parsed<PynealVolume> parse_pyneal_volume(std::string_view header_json, std::span<const std::byte> data,
                                         const PynealParseOptions& options) {
  auto header = parse_pyneal_header(header_json, options.limits);
  if (!header.ok()) return Parsed<PynealVolume>::failure(header.error.code, std::move(header.error.reason));
  return to_volume(*header.value, data, options);
}

}  // namespace rtf::stream::pyneal
