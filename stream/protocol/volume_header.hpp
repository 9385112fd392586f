// Ingest protocol (docs/protocol.md, protocol 1): the JSON header of a VOLUME message, its validation against
// ProtocolLimits, the payload check (length + CRC-32), within-run consistency, and the shared error type.
// Parsing never throws and never trusts the input: every rejection is a ProtocolError naming the field.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/image/image.hpp"

namespace rtf::stream {

// Machine-readable rejection codes; on the wire as the snake_case names given by to_string.
enum class ErrorCode {
  kOk,                   // "ok": no error
  kMalformed,            // "malformed": not a JSON object, too large, too deeply nested, duplicate keys
  kUnsupportedProtocol,  // "unsupported_protocol": "protocol" is not 1
  kMissingField,         // "missing_field"
  kUnknownField,         // "unknown_field"
  kInvalidField,         // "invalid_field": wrong type or value out of its documented range
  kIndexOutOfRange,      // "index_out_of_range": index >= max_volumes
  kTooLarge,             // "too_large": payload_bytes above the server's limit
  kPayloadSize,          // "payload_size": payload frame length differs from payload_bytes
  kChecksumMismatch,     // "checksum_mismatch"
  kInconsistentRun,      // "inconsistent_run": dims/voxel/affine/datatype/TR differ from the run's first volume
  kBadFrames,            // "bad_frames": wrong number of frames for the message type
  kRunClosed,            // "run_closed": volume or end_of_run for a run already ended
  kIncompleteRun,        // "incomplete_run": end_of_run while volumes below num_volumes are missing
  kWrongSession,         // "wrong_session": the server's session directory belongs to another session
  kInternal,             // "internal": server-side failure (e.g. recording failed); resend later
};

std::string_view to_string(ErrorCode code);
std::optional<ErrorCode> error_code_from_string(std::string_view name);

struct ProtocolError {
  ErrorCode code = ErrorCode::kOk;
  std::string reason;  // human-readable, names the offending field
  bool ok() const { return code == ErrorCode::kOk; }
};

// Result of parsing untrusted input: a value, or the error that rejected it.
template <typename T>
struct Parsed {
  std::optional<T> value;
  ProtocolError error;
  bool ok() const { return value.has_value(); }
  static Parsed failure(ErrorCode code, std::string reason) { return {std::nullopt, {code, std::move(reason)}}; }
};

// Server-side bounds applied while parsing.
struct ProtocolLimits {
  int64_t max_volumes = 100000;             // index must be < max_volumes
  uint64_t max_payload_bytes = 1ull << 30;  // 1 GiB
  size_t max_header_bytes = 64u << 10;      // 64 KiB of JSON text
};

inline constexpr int64_t kMaxDim = 2048;                 // each of nx, ny, nz
inline constexpr int64_t kMaxVoxels = int64_t{1} << 28;  // nx * ny * nz
inline constexpr size_t kMaxIdLength = 64;               // session and run ids
inline constexpr double kAffineTolerance = 1e-4;         // within-run affine / voxel size agreement (mm)
inline constexpr double kTrTolerance = 1e-6;             // within-run TR agreement (s)

// Payload sample types: "uint8", "int16", "uint16", "int32", "float32", "float64".
std::optional<DataType> datatype_from_wire(std::string_view name);
std::string datatype_to_wire(DataType type);  // "" for types the protocol does not carry
size_t datatype_bytes(DataType type);         // 0 for types the protocol does not carry

// Session and run ids: 1..64 characters of [A-Za-z0-9._-], not starting with '.' (they become path names).
bool valid_id(std::string_view id);

struct VolumeHeader {
  int protocol = 1;
  std::string session;
  std::string run;
  int64_t index = 0;                        // 0-based volume index within the run
  std::array<int64_t, 3> dims{1, 1, 1};     // nx, ny, nz
  std::array<double, 3> voxel_mm{1, 1, 1};  // voxel size (mm)
  std::array<std::array<double, 4>, 4> affine{{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}}};  // row-major
  DataType datatype = DataType::kInt16;
  double tr_s = 1.0;                       // repetition time (s)
  std::optional<double> acquisition_time;  // seconds (sender's clock), optional
  std::vector<double> slice_timing_s;      // empty: absent; otherwise nz offsets in [0, tr_s)
  uint64_t payload_bytes = 2;              // product(dims) * datatype_bytes(datatype)
  uint32_t checksum = 0;                   // zlib crc32 of the payload

  int64_t voxels() const { return dims[0] * dims[1] * dims[2]; }
  uint64_t expected_payload_bytes() const;
  bool operator==(const VolumeHeader&) const = default;
};

using ParseResult = Parsed<VolumeHeader>;

// Parses and validates one VOLUME header frame (JSON text). Never throws.
ParseResult parse_volume_header(std::string_view json, const ProtocolLimits& limits = {});

// JSON text of the header, in the field order of docs/protocol.md. parse_volume_header gives it back exactly.
std::string serialize(const VolumeHeader& header);

// Payload frame against the header: length first (kPayloadSize), then CRC-32 (kChecksumMismatch).
ProtocolError check_payload(const VolumeHeader& header, std::span<const std::byte> payload);

// Whether `next` may join the run that `first` started: same session and run, dims, datatype, voxel size and
// affine within kAffineTolerance, TR within kTrTolerance. On false, *why (if given) says which field differs.
bool consistent_within_run(const VolumeHeader& first, const VolumeHeader& next, std::string* why = nullptr);

// Image header for recording the run (num_volumes volumes of this geometry, source_type = datatype).
ImageHeader to_image_header(const VolumeHeader& header, int64_t num_volumes = 1);

// Building blocks shared by the protocol's parsers (volume_header.cpp, messages.cpp). Each read_* checks one field
// of a parsed object and returns an error naming it; `out` is left alone on error.
namespace detail {
inline constexpr int kMaxJsonDepth = 4;  // containers nested deeper than this are rejected before parsing completes
// JSON object from untrusted text: size limit, depth limit, duplicate keys and invalid UTF-8 rejected.
Parsed<nlohmann::json> parse_json_object(std::string_view text, size_t max_bytes);
// Fields not in `allowed` give kUnknownField.
ProtocolError check_fields(const nlohmann::json& obj, std::initializer_list<std::string_view> allowed);
// "protocol" must be the integer 1 and "type" the given string.
ProtocolError check_protocol_and_type(const nlohmann::json& obj, std::string_view type);
ProtocolError read_int(const nlohmann::json& obj, const char* name, int64_t lo, int64_t hi, int64_t& out);
ProtocolError read_id(const nlohmann::json& obj, const char* name, std::string& out);
ProtocolError read_bool(const nlohmann::json& obj, const char* name, bool& out);
ProtocolError read_string(const nlohmann::json& obj, const char* name, size_t max_length, std::string& out);
// Validation of a parsed object as a VOLUME header (what parse_volume_header does after parsing the JSON).
ProtocolError read_volume(const nlohmann::json& obj, const ProtocolLimits& limits, VolumeHeader& out);
// Printable ASCII copy of untrusted text (other bytes become '?'), at most max_length characters.
std::string sanitize(std::string_view text, size_t max_length = 200);
// JSON text that never throws (invalid UTF-8 in strings is replaced).
std::string dump(const nlohmann::json& value);
}  // namespace detail

}  // namespace rtf::stream
