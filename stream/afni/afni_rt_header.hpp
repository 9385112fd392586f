// AFNI real-time protocol (docs/afni_rt.md): the header an image source (Dimon, rtfeedme) sends on the data channel
// before its images: text command lines ('\n'-separated, the whole block ended by '\0'), as AFNI's README.realtime and
// plug_realtime define them. Parsing turns them into the dataset geometry AFNI would build (dims, voxel size, NIfTI
// RAS affine, datum, byte order, TR, slice order and timing, channels). Parsing never throws and never trusts the
// input: each unsupported, malformed or inconsistent command is a ProtocolError naming the line and the command.
//
// Supported subset (every command plug_realtime knows; keywords are matched exactly, arguments as plug_realtime reads
// them, last occurrence wins):
//   geometry   XYMATRIX nx [ny [nz]], ZNUM nz, XYFOV fx [fy [fz]], ZDELTA dz, ZGAP gap, XYZAXES a b c (R-L, RL or
//              Right-to-Left style), XYZFIRST x[d] y[d] z[d], ZFIRST z[d], XYZOFF x y z, OBLIQUE_XFORM (16 numbers:
//              the 4x4 row-major ijk -> DICOM/LPS mm matrix; it replaces the cardinal geometry, as in AFNI)
//   data       ACQUISITION_TYPE 2D+z | 2D+zt | 3D | 3D+t | 3D+timing, DATUM byte | short | int | float | double,
//              BYTEORDER LSB_FIRST | MSB_FIRST, NUM_CHAN n (1..32: images go to the channels in turn)
//   timing     TR seconds (default 1.0, flagged), ZORDER alt | seq (order slices are sent in in 2D modes; default
//              alt), TPATTERN alt+z | seq+z | explicit t0 t1 ... (explicit times in SECONDS, one per slice, in
//              [0, TR), as plug_realtime stores them as the dataset's slice offsets), LOCK_ZORDER
//   ignored    DRIVE_AFNI, DRIVE_WAIT, GRAPH_XRANGE, GRAPH_YRANGE, GRAPH_EXPR, NAME, PREFIX, NOTE, NUMVOL,
//              ECHO_TIMES (accepted and listed in AfniRtHeader::ignored so that the receiver can log them)
// Refused with an error: unknown commands, DATUM complex/rgb/rgba, ZORDER explicit (plug_realtime does not place
// such slices), a direction letter on another axis than XYZAXES gives, missing XYMATRIX / slice count / XYFOV /
// slice spacing / XYZAXES, explicit slice times whose count is not the slice count or that lie outside [0, TR).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/image/image.hpp"
#include "stream/protocol/volume_header.hpp"

namespace rtf::stream::afni {

// AFNI's defaults (README.realtime): the control channel port, and the data port Dimon/rtfeedme name by default.
inline constexpr uint16_t kDefaultControlPort = 7954;
inline constexpr uint16_t kDefaultDataPort = 7953;
// The header block must end ('\0') within this many bytes (plug_realtime's INFO_SIZE).
inline constexpr size_t kMaxHeaderBytes = 32 * 1024;
// A block (one image's size) starting with these 30 bytes ends the run; the source may then send a new header.
inline constexpr std::string_view kEndMarker = "Et Earello Endorenna utulien!!";
inline constexpr int kMaxChannels = 32;  // plug_realtime's MAX_CHAN

enum class AcquisitionType {
  k2DZ,      // "2D+z": one volume, slice by slice
  k2DZT,     // "2D+zt": volumes, slice by slice (AFNI's default)
  k3D,       // "3D": one volume, all at once
  k3DT,      // "3D+t": volumes, each all at once, no slice timing
  k3DTiming  // "3D+timing": volumes, each all at once, with slice timing (Dimon)
};
std::string_view to_string(AcquisitionType type);

enum class SliceOrder { kAlternating, kSequential };  // ZORDER alt / seq

struct AfniRtHeader {
  AcquisitionType acquisition = AcquisitionType::k2DZT;
  std::array<int64_t, 3> dims{1, 1, 1};  // nx, ny, nz
  std::array<double, 3> voxel_mm{1, 1, 1};
  std::array<std::array<double, 4>, 4> affine{};  // row-major, voxel (i, j, k, 1) -> NIfTI RAS+ mm
  bool oblique = false;                           // affine came from OBLIQUE_XFORM
  DataType datatype = DataType::kInt16;
  std::string datum = "short";  // as sent (or the default)
  bool big_endian = false;      // BYTEORDER MSB_FIRST; absent: the sender's order, taken as little-endian
  double tr_s = 1.0;            // TR (s)
  bool tr_defaulted = true;     // no TR command: AFNI's default of 1 s is used
  SliceOrder zorder = SliceOrder::kAlternating;  // order of slices within a volume in the 2D modes
  std::vector<double> slice_timing_s;            // per slice (k), seconds in [0, TR); empty when AFNI sets none
  int num_channels = 1;
  std::optional<int64_t> num_volumes;  // NUMVOL, if given (informational)
  std::vector<std::string> ignored;    // lines accepted but without effect here (DRIVE_AFNI ..., GRAPH_* ...)
  std::vector<std::string> warnings;   // accepted oddities worth a log line (e.g. OBLIQUE_XFORM vs XYFOV sizes)

  bool per_slice() const { return acquisition == AcquisitionType::k2DZ || acquisition == AcquisitionType::k2DZT; }
  bool single_volume() const { return acquisition == AcquisitionType::k2DZ || acquisition == AcquisitionType::k3D; }
  int64_t sample_bytes() const;
  int64_t volume_bytes() const { return dims[0] * dims[1] * dims[2] * sample_bytes(); }
  // Bytes of one image on the wire: a slice in the 2D modes, a volume otherwise.
  int64_t image_bytes() const { return per_slice() ? dims[0] * dims[1] * sample_bytes() : volume_bytes(); }
  // Slice index k of the n-th slice of a volume sent in the 2D modes (plug_realtime's placement for ZORDER).
  int64_t slice_position(int64_t n) const;
};

// Parses the header text (without its terminating '\0'). Errors: kMalformed (a line that is not a command with
// valid arguments, an unknown command), kMissingField (a required command absent), kInvalidField (a value out of
// range or inconsistent with another command), kTooLarge (text above kMaxHeaderBytes, a volume above
// limits.max_payload_bytes or dims above kMaxDim / kMaxVoxels). Never throws.
Parsed<AfniRtHeader> parse_afni_rt_header(std::string_view text, const ProtocolLimits& limits = {});

}  // namespace rtf::stream::afni
