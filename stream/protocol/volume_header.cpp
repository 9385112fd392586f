// VOLUME header of the ingest protocol: strict parsing/validation of untrusted JSON, serialization, payload check,
// within-run consistency (docs/protocol.md).
#include "stream/protocol/volume_header.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "stream/protocol/checksum.hpp"
#include "stream/protocol/json_fields.hpp"
#include "stream/protocol_version.hpp"

namespace rtf::stream {

using detail::field_error;  // read_finite, read_numbers below; the rest of the parsing lives in detail
using detail::show;
using nlohmann::json;

namespace {

constexpr std::array<std::pair<ErrorCode, std::string_view>, 16> kErrorNames{{
    {ErrorCode::kOk, "ok"},
    {ErrorCode::kMalformed, "malformed"},
    {ErrorCode::kUnsupportedProtocol, "unsupported_protocol"},
    {ErrorCode::kMissingField, "missing_field"},
    {ErrorCode::kUnknownField, "unknown_field"},
    {ErrorCode::kInvalidField, "invalid_field"},
    {ErrorCode::kIndexOutOfRange, "index_out_of_range"},
    {ErrorCode::kTooLarge, "too_large"},
    {ErrorCode::kPayloadSize, "payload_size"},
    {ErrorCode::kChecksumMismatch, "checksum_mismatch"},
    {ErrorCode::kInconsistentRun, "inconsistent_run"},
    {ErrorCode::kBadFrames, "bad_frames"},
    {ErrorCode::kRunClosed, "run_closed"},
    {ErrorCode::kIncompleteRun, "incomplete_run"},
    {ErrorCode::kWrongSession, "wrong_session"},
    {ErrorCode::kInternal, "internal"},
}};

// The datatypes the protocol carries; their wire names are rtf::to_string's and their sizes bytes_per_voxel's.
constexpr std::array<DataType, 6> kWireTypes{DataType::kUint8, DataType::kInt16,   DataType::kUint16,
                                             DataType::kInt32, DataType::kFloat32, DataType::kFloat64};

bool carried(DataType type) {
  return std::find(kWireTypes.begin(), kWireTypes.end(), type) != kWireTypes.end();
}

ProtocolError read_finite(const json& value, std::string_view name, double& out) {
  if (!value.is_number()) return field_error(ErrorCode::kInvalidField, name, "must be a number, got " + show(value));
  const double v = value.get<double>();
  if (!std::isfinite(v)) return field_error(ErrorCode::kInvalidField, name, "must be finite");
  out = v;
  return {};
}

// Array of exactly n numbers.
ProtocolError read_numbers(const json& value, std::string_view name, size_t n, std::vector<double>& out) {
  if (!value.is_array() || value.size() != n) {
    return field_error(ErrorCode::kInvalidField, name,
                       fmt::format("must be an array of {} numbers, got {}", n, show(value)));
  }
  out.assign(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    ProtocolError e = read_finite(value[i], fmt::format("{}[{}]", name, i), out[i]);
    if (!e.ok()) return e;
  }
  return {};
}

}  // namespace

std::string_view to_string(ErrorCode code) {
  for (const auto& [c, name] : kErrorNames)
    if (c == code) return name;
  return "internal";
}

std::optional<ErrorCode> error_code_from_string(std::string_view name) {
  for (const auto& [c, n] : kErrorNames)
    if (n == name) return c;
  return std::nullopt;
}

std::optional<DataType> datatype_from_wire(std::string_view name) {
  for (DataType type : kWireTypes)
    if (to_string(type) == name) return type;
  return std::nullopt;
}

std::string datatype_to_wire(DataType type) {
  return carried(type) ? to_string(type) : std::string();
}

size_t datatype_bytes(DataType type) {
  return carried(type) ? static_cast<size_t>(bytes_per_voxel(type)) : 0;
}

bool valid_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxIdLength || id.front() == '.') return false;
  for (const char c : id) {
    const bool ok =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

uint64_t VolumeHeader::expected_payload_bytes() const {
  for (const int64_t d : dims)
    if (d <= 0) return 0;
  return static_cast<uint64_t>(dims[0]) * static_cast<uint64_t>(dims[1]) * static_cast<uint64_t>(dims[2]) *
         datatype_bytes(datatype);
}

namespace detail {

std::string sanitize(std::string_view text, size_t max_length) {
  std::string out;
  out.reserve(std::min(text.size(), max_length));
  for (const char c : text) {
    if (out.size() >= max_length) {
      out += "...";
      break;
    }
    out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  }
  return out;
}

std::string dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

Parsed<json> parse_json_object(std::string_view text, size_t max_bytes) {
  using Result = Parsed<json>;
  if (text.size() > max_bytes) {
    return Result::failure(ErrorCode::kTooLarge,
                           fmt::format("header frame is {} bytes, the limit is {}", text.size(), max_bytes));
  }
  if (text.empty()) return Result::failure(ErrorCode::kMalformed, "header frame is empty (expected a JSON object)");
  std::vector<std::set<std::string>> keys;  // keys seen in each open object
  const json::parser_callback_t callback = [&keys](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= kMaxJsonDepth) {
          throw StopParse{fmt::format("JSON nested more than {} levels deep", kMaxJsonDepth)};
        }
        if (event == json::parse_event_t::object_start) keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second) {
          throw StopParse{fmt::format("duplicate key '{}'", sanitize(parsed.get<std::string>(), 64))};
        }
        break;
      default:
        break;
    }
    return true;
  };
  json value;
  try {
    value = json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const StopParse& stop) {
    return Result::failure(ErrorCode::kMalformed, "header frame: " + stop.reason);
  } catch (const json::exception& e) {
    return Result::failure(ErrorCode::kMalformed, "header frame is not valid JSON: " + sanitize(e.what()));
  }
  if (!value.is_object()) {
    return Result::failure(ErrorCode::kMalformed, "header frame must be a JSON object, got " + show(value));
  }
  return {std::move(value), {}};
}

ProtocolError check_fields(const json& obj, std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : obj.items()) {
    bool known = false;
    for (const auto name : allowed) known = known || key == name;
    if (!known) return field_error(ErrorCode::kUnknownField, sanitize(key, 64), "not a field of this message");
  }
  return {};
}

ProtocolError check_protocol_and_type(const json& obj, std::string_view type) {
  const json* protocol = find(obj, "protocol");
  if (protocol == nullptr) return missing("protocol");
  if (!protocol->is_number_integer()) {
    return field_error(ErrorCode::kInvalidField, "protocol", "must be an integer, got " + show(*protocol));
  }
  if (as_int(*protocol) != std::optional<int64_t>(kProtocolVersion)) {
    return field_error(ErrorCode::kUnsupportedProtocol, "protocol",
                       fmt::format("this server speaks protocol {}, got {}", kProtocolVersion, show(*protocol)));
  }
  const json* t = find(obj, "type");
  if (t == nullptr) return missing("type");
  if (!t->is_string() || t->get_ref<const std::string&>() != type) {
    return field_error(ErrorCode::kInvalidField, "type", fmt::format("must be \"{}\", got {}", type, show(*t)));
  }
  return {};
}

ProtocolError read_int(const json& obj, const char* name, int64_t lo, int64_t hi, int64_t& out) {
  const json* value = find(obj, name);
  if (value == nullptr) return missing(name);
  const std::string range = fmt::format("must be an integer in [{}, {}], got {}", lo, hi, show(*value));
  const auto v = as_int(*value);
  if (!v || *v < lo || *v > hi) return field_error(ErrorCode::kInvalidField, name, range);
  out = *v;
  return {};
}

ProtocolError read_string(const json& obj, const char* name, size_t max_length, std::string& out) {
  const json* value = find(obj, name);
  if (value == nullptr) return missing(name);
  if (!value->is_string()) return field_error(ErrorCode::kInvalidField, name, "must be a string, got " + show(*value));
  const auto& s = value->get_ref<const std::string&>();
  if (s.size() > max_length) {
    return field_error(ErrorCode::kInvalidField, name, fmt::format("longer than {} bytes", max_length));
  }
  out = s;
  return {};
}

ProtocolError read_id(const json& obj, const char* name, std::string& out) {
  std::string s;
  ProtocolError e = read_string(obj, name, 1u << 16, s);
  if (!e.ok()) return e;
  if (!valid_id(s)) {
    return field_error(ErrorCode::kInvalidField, name,
                       fmt::format("must be 1..{} characters of [A-Za-z0-9._-] not starting with '.', got \"{}\"",
                                   kMaxIdLength, sanitize(s, 80)));
  }
  out = std::move(s);
  return {};
}

ProtocolError read_bool(const json& obj, const char* name, bool& out) {
  const json* value = find(obj, name);
  if (value == nullptr) return missing(name);
  if (!value->is_boolean())
    return field_error(ErrorCode::kInvalidField, name, "must be true or false, got " + show(*value));
  out = value->get<bool>();
  return {};
}

// Validation of a parsed object as a VOLUME header; first problem wins.
ProtocolError read_volume(const json& obj, const ProtocolLimits& limits, VolumeHeader& h) {
  using detail::read_id;
  using detail::read_int;
  ProtocolError e = detail::check_protocol_and_type(obj, "volume");
  if (e.ok())
    e = detail::check_fields(
        obj, {"protocol", "type", "session", "run", "index", "dims", "voxel_mm", "affine", "datatype", "tr_s",
              "acquisition_time", "slice_timing_s", "payload_bytes", "checksum"});
  if (e.ok()) e = read_id(obj, "session", h.session);
  if (e.ok()) e = read_id(obj, "run", h.run);
  if (!e.ok()) return e;
  h.protocol = kProtocolVersion;

  // index: bounded by the server's max_volumes (its own code, so the sender can tell it from a typo).
  int64_t index = 0;
  e = read_int(obj, "index", 0, std::numeric_limits<int64_t>::max(), index);
  if (!e.ok()) return e;
  if (index >= limits.max_volumes) {
    return field_error(ErrorCode::kIndexOutOfRange, "index",
                       fmt::format("{} is not below this server's max_volumes {}", index, limits.max_volumes));
  }
  h.index = index;

  const json* dims = find(obj, "dims");
  if (dims == nullptr) return missing("dims");
  if (!dims->is_array() || dims->size() != 3) {
    return field_error(ErrorCode::kInvalidField, "dims",
                       "must be an array of 3 integers [nx, ny, nz], got " + show(*dims));
  }
  for (size_t i = 0; i < 3; ++i) {
    const json& d = (*dims)[i];
    const auto v = as_int(d);
    if (!v || *v < 1 || *v > kMaxDim) {
      return field_error(ErrorCode::kInvalidField, fmt::format("dims[{}]", i),
                         fmt::format("must be an integer in [1, {}], got {}", kMaxDim, show(d)));
    }
    h.dims[i] = *v;
  }
  if (h.voxels() > kMaxVoxels) {
    return field_error(ErrorCode::kInvalidField, "dims",
                       fmt::format("{}x{}x{} has more than {} voxels", h.dims[0], h.dims[1], h.dims[2], kMaxVoxels));
  }

  const json* voxel = find(obj, "voxel_mm");
  if (voxel == nullptr) return missing("voxel_mm");
  std::vector<double> values;
  e = read_numbers(*voxel, "voxel_mm", 3, values);
  if (!e.ok()) return e;
  for (size_t i = 0; i < 3; ++i) {
    if (!(values[i] > 0.0)) {
      return field_error(ErrorCode::kInvalidField, fmt::format("voxel_mm[{}]", i), "must be positive");
    }
    h.voxel_mm[i] = values[i];
  }

  const json* affine = find(obj, "affine");
  if (affine == nullptr) return missing("affine");
  if (!affine->is_array() || affine->size() != 4) {
    return field_error(ErrorCode::kInvalidField, "affine",
                       "must be 4 rows of 4 numbers (row-major), got " + show(*affine));
  }
  for (size_t r = 0; r < 4; ++r) {
    e = read_numbers((*affine)[r], fmt::format("affine[{}]", r), 4, values);
    if (!e.ok()) return e;
    for (size_t c = 0; c < 4; ++c) h.affine[r][c] = values[c];
  }
  if (h.affine[3] != std::array<double, 4>{0, 0, 0, 1}) {
    return field_error(ErrorCode::kInvalidField, "affine[3]", "last row must be [0, 0, 0, 1]");
  }

  std::string datatype;
  e = detail::read_string(obj, "datatype", 64, datatype);
  if (!e.ok()) return e;
  const auto type = datatype_from_wire(datatype);
  if (!type) {
    return field_error(ErrorCode::kInvalidField, "datatype",
                       fmt::format("must be one of uint8, int16, uint16, int32, float32, float64, got \"{}\"",
                                   detail::sanitize(datatype, 64)));
  }
  h.datatype = *type;

  const json* tr = find(obj, "tr_s");
  if (tr == nullptr) return missing("tr_s");
  e = read_finite(*tr, "tr_s", h.tr_s);
  if (!e.ok()) return e;
  if (!(h.tr_s > 0.0)) return field_error(ErrorCode::kInvalidField, "tr_s", "must be positive");

  h.acquisition_time.reset();
  if (const json* t = find(obj, "acquisition_time")) {
    double v = 0;
    e = read_finite(*t, "acquisition_time", v);
    if (!e.ok()) return e;
    h.acquisition_time = v;
  }

  h.slice_timing_s.clear();
  if (const json* st = find(obj, "slice_timing_s")) {
    const size_t nz = static_cast<size_t>(h.dims[2]);
    e = read_numbers(*st, "slice_timing_s", nz, values);
    if (!e.ok()) return e;
    for (size_t i = 0; i < nz; ++i) {
      if (values[i] < 0.0 || values[i] >= h.tr_s) {
        return field_error(ErrorCode::kInvalidField, fmt::format("slice_timing_s[{}]", i),
                           fmt::format("must be in [0, tr_s={}), got {}", h.tr_s, values[i]));
      }
    }
    h.slice_timing_s = values;
  }

  int64_t payload = 0;
  e = read_int(obj, "payload_bytes", 0, std::numeric_limits<int64_t>::max(), payload);
  if (!e.ok()) return e;
  h.payload_bytes = static_cast<uint64_t>(payload);
  if (h.payload_bytes != h.expected_payload_bytes()) {
    return field_error(ErrorCode::kInvalidField, "payload_bytes",
                       fmt::format("{} does not match dims {}x{}x{} of {} ({} bytes)", h.payload_bytes, h.dims[0],
                                   h.dims[1], h.dims[2], datatype, h.expected_payload_bytes()));
  }
  if (h.payload_bytes > limits.max_payload_bytes) {
    return field_error(
        ErrorCode::kTooLarge, "payload_bytes",
        fmt::format("{} is above this server's limit of {} bytes", h.payload_bytes, limits.max_payload_bytes));
  }

  std::string checksum;
  e = detail::read_string(obj, "checksum", 64, checksum);
  if (!e.ok()) return e;
  const auto crc = parse_checksum(checksum);
  if (!crc) {
    return field_error(
        ErrorCode::kInvalidField, "checksum",
        fmt::format("must be \"crc32:\" and 8 lowercase hex digits, got \"{}\"", detail::sanitize(checksum, 64)));
  }
  h.checksum = *crc;
  return {};
}

}  // namespace detail

ParseResult parse_volume_header(std::string_view text, const ProtocolLimits& limits) {
  auto parsed = detail::parse_json_object(text, limits.max_header_bytes);
  if (!parsed.ok()) return ParseResult::failure(parsed.error.code, std::move(parsed.error.reason));
  VolumeHeader header;
  ProtocolError e;
  try {
    e = detail::read_volume(*parsed.value, limits, header);
  } catch (const std::exception& ex) {  // not expected: every access above is type-checked first
    e = {ErrorCode::kMalformed, "header frame: " + detail::sanitize(ex.what())};
  }
  if (!e.ok()) return ParseResult::failure(e.code, std::move(e.reason));
  return {std::move(header), {}};
}

std::string serialize(const VolumeHeader& h) {
  json j = json::object();
  json affine = json::array();
  for (const auto& row : h.affine) affine.push_back(row);
  // nlohmann keeps object keys sorted; field order on the wire carries no meaning.
  j["protocol"] = h.protocol;
  j["type"] = "volume";
  j["session"] = h.session;
  j["run"] = h.run;
  j["index"] = h.index;
  j["dims"] = h.dims;
  j["voxel_mm"] = h.voxel_mm;
  j["affine"] = std::move(affine);
  j["datatype"] = datatype_to_wire(h.datatype);
  j["tr_s"] = h.tr_s;
  if (h.acquisition_time) j["acquisition_time"] = *h.acquisition_time;
  if (!h.slice_timing_s.empty()) j["slice_timing_s"] = h.slice_timing_s;
  j["payload_bytes"] = h.payload_bytes;
  j["checksum"] = format_checksum(h.checksum);
  return detail::dump(j);
}

ProtocolError check_payload(const VolumeHeader& header, std::span<const std::byte> payload) {
  if (payload.size() != header.payload_bytes) {
    return {ErrorCode::kPayloadSize, fmt::format("payload frame has {} bytes, header field 'payload_bytes' says {}",
                                                 payload.size(), header.payload_bytes)};
  }
  const uint32_t crc = crc32(payload);
  if (crc != header.checksum) {
    return {ErrorCode::kChecksumMismatch, fmt::format("payload checksum is {}, header field 'checksum' says {}",
                                                      format_checksum(crc), format_checksum(header.checksum))};
  }
  return {};
}

bool consistent_within_run(const VolumeHeader& first, const VolumeHeader& next, std::string* why) {
  auto fail = [why](std::string reason) {
    if (why != nullptr) *why = std::move(reason);
    return false;
  };
  if (next.session != first.session || next.run != first.run) {
    return fail(fmt::format("session/run {}/{} differs from {}/{}", next.session, next.run, first.session, first.run));
  }
  if (next.dims != first.dims) {
    return fail(fmt::format("field 'dims': {}x{}x{} differs from the run's {}x{}x{}", next.dims[0], next.dims[1],
                            next.dims[2], first.dims[0], first.dims[1], first.dims[2]));
  }
  if (next.datatype != first.datatype) {
    return fail(fmt::format("field 'datatype': {} differs from the run's {}", datatype_to_wire(next.datatype),
                            datatype_to_wire(first.datatype)));
  }
  for (size_t i = 0; i < 3; ++i) {
    if (!(std::abs(next.voxel_mm[i] - first.voxel_mm[i]) <= kAffineTolerance)) {
      return fail(
          fmt::format("field 'voxel_mm[{}]': {} differs from the run's {}", i, next.voxel_mm[i], first.voxel_mm[i]));
    }
  }
  for (size_t r = 0; r < 4; ++r) {
    for (size_t c = 0; c < 4; ++c) {
      if (!(std::abs(next.affine[r][c] - first.affine[r][c]) <= kAffineTolerance)) {
        return fail(fmt::format("field 'affine[{}][{}]': {} differs from the run's {} by more than {}", r, c,
                                next.affine[r][c], first.affine[r][c], kAffineTolerance));
      }
    }
  }
  if (!(std::abs(next.tr_s - first.tr_s) <= kTrTolerance)) {
    return fail(fmt::format("field 'tr_s': {} differs from the run's {}", next.tr_s, first.tr_s));
  }
  return true;
}

ImageHeader to_image_header(const VolumeHeader& h, int64_t num_volumes) {
  ImageHeader out;
  out.dims = h.dims;
  out.num_volumes = num_volumes;
  out.voxel_mm = h.voxel_mm;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) out.affine(r, c) = h.affine[static_cast<size_t>(r)][static_cast<size_t>(c)];
  out.xform_code = 1;  // scanner space
  out.tr_s = h.tr_s;
  out.source_type = h.datatype;
  out.description = fmt::format("rtfmri stream {}/{}", h.session, h.run).substr(0, 79);
  return out;
}

}  // namespace rtf::stream
