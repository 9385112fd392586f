// pyneal compatibility (docs/pyneal.md): the per-volume JSON header that pyneal's scanner-side adapters send
// ({"volIdx", "dtype", "shape", "affine", "TR"}), NumPy dtype names, the reorder of a C-ordered [x][y][z] array
// (z fastest) into rtfmri's x-fastest layout, and the translation of both into a protocol-1 VolumeHeader plus
// payload for the VolumeHandler seam. Parsing never throws; every rejection is a ProtocolError with a reason.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/image/image.hpp"
#include "stream/protocol/volume_header.hpp"

namespace rtf::stream::pyneal {

// A NumPy dtype as pyneal names it: str(array.dtype) ("int16", "float64") or an array-protocol type string with
// a byte-order character ("<i2", ">f8", "|u1", "=u2"). Only the six sample types rtfmri records are accepted.
struct NumpyDtype {
  DataType type = DataType::kInt16;
  size_t bytes = 2;         // bytes per sample
  bool big_endian = false;  // '>' prefix: samples are swapped to little-endian while reordering
};

// nullopt for names that are not one of uint8/int16/uint16/int32/float32/float64 (in either spelling). '=' and no
// prefix mean the sender's native order, taken as little-endian (every scanner console pyneal runs on is x86).
std::optional<NumpyDtype> parse_numpy_dtype(std::string_view name);

// TR values at or above this are taken as milliseconds (pyneal's own simulator sends str(TR*1000)); below, seconds.
inline constexpr double kTrMillisecondThreshold = 50.0;
// Longest accepted "affine" string (json.dumps of a 4x4 list of doubles is ~400 characters).
inline constexpr size_t kMaxAffineChars = 4096;
// Longest accepted "TR" string.
inline constexpr size_t kMaxTrChars = 64;

// The header exactly as pyneal sent it, validated.
struct PynealHeader {
  int64_t vol_idx = 0;
  std::string dtype_name;                 // as sent
  NumpyDtype dtype;                       // parsed
  std::array<int64_t, 3> shape{1, 1, 1};  // NumPy shape: (nx, ny, nz), C order, so z varies fastest in the bytes
  std::array<std::array<double, 4>, 4> affine{};  // row-major, voxel (i, j, k, 1) -> RAS+ mm
  std::optional<double> tr_s;                     // seconds; absent when the header had no "TR"
  bool tr_was_milliseconds = false;               // "TR" was >= kTrMillisecondThreshold and was divided by 1000
  std::vector<std::string> ignored_fields;        // keys other than the five above (kept out of the volume)

  uint64_t payload_bytes() const;  // shape product * dtype.bytes
};

// What rtfmri adds to a pyneal header to make a protocol-1 volume.
struct PynealParseOptions {
  std::string session = "pyneal";       // VolumeHeader::session (must satisfy valid_id)
  std::string run = "run-01";           // VolumeHeader::run (must satisfy valid_id)
  std::optional<double> tr_override_s;  // used instead of the header's TR when set (and when the header has none)
  ProtocolLimits limits;                // max_volumes bounds volIdx; max_payload_bytes; max_header_bytes
};

// Parses and validates one pyneal header frame (JSON text). Never throws. Errors: kTooLarge (frame above
// max_header_bytes, or payload above max_payload_bytes), kMalformed (not a JSON object, duplicate key, ...),
// kMissingField, kInvalidField, kIndexOutOfRange.
Parsed<PynealHeader> parse_pyneal_header(std::string_view json, const ProtocolLimits& limits = {});

// Reorders a C-ordered array of shape (nx, ny, nz) (byte offset ((i*ny + j)*nz + k)*sample_bytes) into x-fastest
// order (((k*ny + j)*nx + i)*sample_bytes), swapping the bytes of each sample when swap_bytes is set.
// sample_bytes is 1, 2, 4 or 8; in and out hold nx*ny*nz samples each and do not overlap.
void c_order_to_x_fastest(std::span<const std::byte> in, const std::array<int64_t, 3>& shape, size_t sample_bytes,
                          bool swap_bytes, std::span<std::byte> out);

// A volume ready for the VolumeHandler: header (checksum = crc32 of payload, computed here) and payload
// (little-endian, x fastest).
struct PynealVolume {
  VolumeHeader header;
  std::vector<std::byte> payload;
};

// Checks the data frame against the header (kPayloadSize), reorders it, and builds the protocol-1 header:
// session/run from options, index = volIdx, dims = shape, voxel_mm = column norms of the affine's 3x3 part,
// affine, datatype, tr_s (options.tr_override_s, else the header's TR; neither: kMissingField), payload_bytes,
// checksum. Never throws.
Parsed<PynealVolume> to_volume(const PynealHeader& header, std::span<const std::byte> data,
                               const PynealParseOptions& options);

// parse_pyneal_header followed by to_volume.
Parsed<PynealVolume> parse_pyneal_volume(std::string_view header_json, std::span<const std::byte> data,
                                         const PynealParseOptions& options);

}  // namespace rtf::stream::pyneal
