// AFNI real-time header commands -> geometry, following plug_realtime's reading of each command and its
// RT_start_dataset arithmetic (voxel sizes from FOV / matrix, centring, origin signs from XYZAXES and the direction
// letters), then DICOM (LPS) -> NIfTI RAS by negating x and y.
#include "stream/afni/afni_rt_header.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

namespace rtf::stream::afni {

namespace {

using Result = Parsed<AfniRtHeader>;

// AFNI's orientation codes: R-L, L-R, P-A, A-P, I-S, S-I. The DICOM axis of a code is code / 2 (0: x, 1: y, 2: z);
// a code whose index increases toward +x (L), +y (P) or +z (S) has sign +1.
constexpr std::array<std::string_view, 6> kShort{"R-L", "L-R", "P-A", "A-P", "I-S", "S-I"};
constexpr std::array<std::string_view, 6> kTiny{"RL", "LR", "PA", "AP", "IS", "SI"};
constexpr std::array<std::string_view, 6> kLong{"Right-to-Left",         "Left-to-Right",
                                                "Posterior-to-Anterior", "Anterior-to-Posterior",
                                                "Inferior-to-Superior",  "Superior-to-Inferior"};
constexpr std::array<int, 6> kSign{+1, -1, -1, +1, +1, -1};
constexpr std::string_view kDirectionLetters = "RLPAIS";  // letter -> code: its index

int axis_of(int code) {
  return code / 2;
}

std::optional<int> orientation_code(std::string_view s) {
  for (int i = 0; i < 6; ++i) {
    if (s == kShort[i] || s == kTiny[i] || s == kLong[i]) return i;
  }
  return std::nullopt;
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\f')) ++i;
    size_t j = i;
    while (j < line.size() && !(line[j] == ' ' || line[j] == '\t' || line[j] == '\r' || line[j] == '\f')) ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

std::optional<double> to_double(std::string_view s) {
  double v = 0;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<int64_t> to_int(std::string_view s) {
  int64_t v = 0;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// One axis's origin as plug_realtime keeps it: centred (no XYZFIRST/ZFIRST, or XYZOFF) or a distance with an
// optional direction letter.
struct AxisOrigin {
  bool centred = true;
  double value = 0.0;         // XYZFIRST / ZFIRST distance (mm)
  std::optional<int> letter;  // its direction code, if a letter followed the number
  double offset = 0.0;        // XYZOFF (mm), added to the centre
};

enum class ZOrder { kAlt, kSeq, kExplicit };
enum class TPattern { kNone, kAlt, kSeq, kExplicit };

struct State {
  std::optional<AcquisitionType> acquisition;
  int64_t nx = 0, ny = 0, nz = 0;
  double fov_x = 0, fov_y = 0, fov_z = 0, zdelta = 0, zgap = 0;
  std::array<AxisOrigin, 3> origin;
  std::optional<std::array<int, 3>> axes;
  std::optional<double> tr;
  ZOrder zorder = ZOrder::kAlt;
  bool zorder_lock = false;
  TPattern tpattern = TPattern::kNone;
  std::vector<double> explicit_times;
  std::string datum = "short";
  DataType datatype = DataType::kInt16;
  bool big_endian = false;
  int channels = 1;
  std::optional<std::array<double, 16>> oblique;
  std::optional<int64_t> num_volumes;
  std::vector<std::string> ignored;
};

class LineError {
 public:
  LineError(size_t line, std::string_view keyword) : line_(line), keyword_(keyword) {}
  ProtocolError operator()(ErrorCode code, const std::string& what) const {
    return {code, fmt::format("AFNI header line {} ({}): {}", line_, detail::sanitize(keyword_, 40), what)};
  }

 private:
  size_t line_;
  std::string_view keyword_;
};

// "10.5R" -> 10.5 and the code of R; "10.5" -> 10.5 and no letter.
std::optional<std::pair<double, std::optional<int>>> distance_with_letter(std::string_view token) {
  std::optional<int> letter;
  if (!token.empty()) {
    const size_t at = kDirectionLetters.find(token.back());
    if (at != std::string_view::npos) {
      letter = static_cast<int>(at);
      token.remove_suffix(1);
    }
  }
  const auto value = to_double(token);
  if (!value) return std::nullopt;
  return std::make_pair(*value, letter);
}

ProtocolError apply(State& s, std::string_view raw_line, const std::vector<std::string_view>& t, const LineError& err) {
  const std::string_view key = t[0];
  const size_t n = t.size() - 1;  // arguments
  auto malformed = [&](const std::string& what) { return err(ErrorCode::kMalformed, what); };
  auto invalid = [&](const std::string& what) { return err(ErrorCode::kInvalidField, what); };
  auto arity = [&](size_t lo, size_t hi) -> ProtocolError {
    if (n >= lo && n <= hi) return {};
    return malformed(lo == hi ? fmt::format("takes {} argument{}, got {}", lo, lo == 1 ? "" : "s", n)
                              : fmt::format("takes {} to {} arguments, got {}", lo, hi, n));
  };
  auto number = [&](size_t i, double& out) -> ProtocolError {
    const auto v = to_double(t[i]);
    if (!v) return malformed(fmt::format("'{}' is not a number", detail::sanitize(t[i], 40)));
    out = *v;
    return {};
  };
  auto integer = [&](size_t i, int64_t& out) -> ProtocolError {
    const auto v = to_int(t[i]);
    if (!v) return malformed(fmt::format("'{}' is not an integer", detail::sanitize(t[i], 40)));
    out = *v;
    return {};
  };
  ProtocolError e;

  if (key == "ACQUISITION_TYPE") {
    if (e = arity(1, 1); !e.ok()) return e;
    static constexpr std::array<std::pair<std::string_view, AcquisitionType>, 5> kTypes{
        {{"2D+z", AcquisitionType::k2DZ},
         {"2D+zt", AcquisitionType::k2DZT},
         {"3D", AcquisitionType::k3D},
         {"3D+t", AcquisitionType::k3DT},
         {"3D+timing", AcquisitionType::k3DTiming}}};
    for (const auto& [name, type] : kTypes) {
      if (t[1] == name) {
        s.acquisition = type;
        return {};
      }
    }
    return invalid(fmt::format("'{}' is not one of 2D+z, 2D+zt, 3D, 3D+t, 3D+timing", detail::sanitize(t[1], 40)));
  }
  if (key == "XYMATRIX") {
    if (e = arity(1, 3); !e.ok()) return e;
    int64_t v[3] = {0, 0, 0};
    for (size_t i = 1; i <= n; ++i) {
      if (e = integer(i, v[i - 1]); !e.ok()) return e;
    }
    if (v[0] < 2) return invalid(fmt::format("nx {} must be at least 2", v[0]));
    s.nx = v[0];
    s.ny = v[1] > 1 ? v[1] : v[0];  // plug_realtime: ny <= 1 means square images
    if (n == 3) {
      if (v[2] < 1) return invalid(fmt::format("nz {} must be at least 1", v[2]));
      s.nz = v[2];
    }
    return {};
  }
  if (key == "ZNUM") {
    if (e = arity(1, 1); !e.ok()) return e;
    int64_t v = 0;
    if (e = integer(1, v); !e.ok()) return e;
    if (v < 1) return invalid(fmt::format("nz {} must be at least 1", v));
    s.nz = v;
    return {};
  }
  if (key == "XYFOV") {
    if (e = arity(1, 3); !e.ok()) return e;
    double v[3] = {0, 0, 0};
    for (size_t i = 1; i <= n; ++i) {
      if (e = number(i, v[i - 1]); !e.ok()) return e;
      if (v[i - 1] < 0) return invalid(fmt::format("field of view {} mm is negative", v[i - 1]));
    }
    if (!(v[0] > 0)) return invalid("the x field of view must be positive");
    s.fov_x = v[0];
    s.fov_y = v[1] > 0 ? v[1] : v[0];  // plug_realtime: yy == 0 means square
    if (v[2] > 0) s.fov_z = v[2];
    return {};
  }
  if (key == "ZDELTA" || key == "ZGAP") {
    if (e = arity(1, 1); !e.ok()) return e;
    double v = 0;
    if (e = number(1, v); !e.ok()) return e;
    if (key == "ZDELTA") {
      if (!(v > 0)) return invalid(fmt::format("slice spacing {} mm must be positive", v));
      s.zdelta = v;
    } else {
      if (v < 0) return invalid(fmt::format("gap {} mm is negative", v));
      s.zgap = v;
    }
    return {};
  }
  if (key == "XYZAXES") {
    if (e = arity(3, 3); !e.ok()) return e;
    std::array<int, 3> codes{};
    for (size_t i = 0; i < 3; ++i) {
      const auto c = orientation_code(t[i + 1]);
      if (!c) {
        return invalid(fmt::format("'{}' is not an axis code (R-L, L-R, P-A, A-P, I-S, S-I, or RL ... forms)",
                                   detail::sanitize(t[i + 1], 40)));
      }
      codes[i] = *c;
    }
    if (axis_of(codes[0]) == axis_of(codes[1]) || axis_of(codes[0]) == axis_of(codes[2]) ||
        axis_of(codes[1]) == axis_of(codes[2])) {
      return invalid("the three axes must point along three different directions");
    }
    s.axes = codes;
    return {};
  }
  if (key == "XYZFIRST" || key == "ZFIRST") {
    const size_t want = key == "XYZFIRST" ? 3 : 1;
    if (e = arity(want, want); !e.ok()) return e;
    for (size_t i = 0; i < want; ++i) {
      const auto d = distance_with_letter(t[i + 1]);
      if (!d) {
        return malformed(fmt::format("'{}' is not a distance in mm with an optional direction letter R/L/A/P/I/S",
                                     detail::sanitize(t[i + 1], 40)));
      }
      AxisOrigin& o = s.origin[want == 3 ? i : 2];
      o.centred = false;
      o.value = d->first;
      o.letter = d->second;
    }
    return {};
  }
  if (key == "XYZOFF") {
    if (e = arity(3, 3); !e.ok()) return e;
    for (size_t i = 0; i < 3; ++i) {
      if (e = number(i + 1, s.origin[i].offset); !e.ok()) return e;
      s.origin[i].centred = true;
    }
    return {};
  }
  if (key == "OBLIQUE_XFORM") {
    if (e = arity(16, 16); !e.ok()) return e;
    std::array<double, 16> m{};
    for (size_t i = 0; i < 16; ++i) {
      if (e = number(i + 1, m[i]); !e.ok()) return e;
    }
    s.oblique = m;
    return {};
  }
  if (key == "DATUM") {
    if (e = arity(1, 1); !e.ok()) return e;
    static constexpr std::array<std::pair<std::string_view, DataType>, 5> kDatums{{{"byte", DataType::kUint8},
                                                                                   {"short", DataType::kInt16},
                                                                                   {"int", DataType::kInt32},
                                                                                   {"float", DataType::kFloat32},
                                                                                   {"double", DataType::kFloat64}}};
    for (const auto& [name, type] : kDatums) {
      if (t[1] == name) {
        s.datum = std::string(name);
        s.datatype = type;
        return {};
      }
    }
    if (t[1] == "complex" || t[1] == "rgb" || t[1] == "rgba") {
      return invalid(
          fmt::format("datum '{}' cannot be carried (rtfmri records real-valued scalar volumes: byte, short, "
                      "int, float, double)",
                      t[1]));
    }
    return invalid(fmt::format("'{}' is not an AFNI datum", detail::sanitize(t[1], 40)));
  }
  if (key == "BYTEORDER") {
    if (e = arity(1, 1); !e.ok()) return e;
    if (t[1] == "LSB_FIRST") {
      s.big_endian = false;
    } else if (t[1] == "MSB_FIRST") {
      s.big_endian = true;
    } else {
      return invalid(fmt::format("'{}' is neither LSB_FIRST nor MSB_FIRST", detail::sanitize(t[1], 40)));
    }
    return {};
  }
  if (key == "NUM_CHAN") {
    if (e = arity(1, 1); !e.ok()) return e;
    int64_t v = 0;
    if (e = integer(1, v); !e.ok()) return e;
    if (v < 1 || v > kMaxChannels) return invalid(fmt::format("{} channels is outside 1..{}", v, kMaxChannels));
    s.channels = static_cast<int>(v);
    return {};
  }
  if (key == "TR") {
    if (e = arity(1, 1); !e.ok()) return e;
    double v = 0;
    if (e = number(1, v); !e.ok()) return e;
    if (!(v > 0)) return invalid(fmt::format("TR {} s must be positive", v));
    s.tr = v;
    return {};
  }
  if (key == "LOCK_ZORDER") {
    s.zorder_lock = true;
    return {};
  }
  if (key == "ZORDER" || key == "TPATTERN") {
    if (s.zorder_lock) {
      s.ignored.emplace_back(fmt::format("{} (after LOCK_ZORDER)", detail::sanitize(raw_line, 200)));
      return {};
    }
    if (e = arity(1, n < 1 ? 1 : n); !e.ok()) return e;
    if (key == "ZORDER") {
      if (t[1] == "alt" && n == 1) {
        s.zorder = ZOrder::kAlt;
      } else if (t[1] == "seq" && n == 1) {
        s.zorder = ZOrder::kSeq;
      } else if (t[1] == "explicit") {
        s.zorder = ZOrder::kExplicit;
      } else {
        return invalid(fmt::format("'{}' is not alt, seq or explicit", detail::sanitize(raw_line, 80)));
      }
      return {};
    }
    if (t[1] == "alt+z" && n == 1) {
      s.tpattern = TPattern::kAlt;
    } else if (t[1] == "seq+z" && n == 1) {
      s.tpattern = TPattern::kSeq;
    } else if (t[1] == "explicit") {
      if (n < 2) return invalid("'explicit' needs one time per slice");
      std::vector<double> times(n - 1);
      for (size_t i = 2; i <= n; ++i) {
        if (e = number(i, times[i - 2]); !e.ok()) return e;
      }
      s.tpattern = TPattern::kExplicit;
      s.explicit_times = std::move(times);
    } else {
      return invalid(fmt::format("'{}' is not alt+z, seq+z or explicit (the patterns plug_realtime knows)",
                                 detail::sanitize(t[1], 40)));
    }
    return {};
  }
  if (key == "NUMVOL") {
    if (e = arity(1, 1); !e.ok()) return e;
    int64_t v = 0;
    if (e = integer(1, v); !e.ok()) return e;
    if (v < 1) return invalid(fmt::format("{} volumes must be at least 1", v));
    s.num_volumes = v;
    s.ignored.emplace_back(detail::sanitize(raw_line, 200));
    return {};
  }
  if (key == "ECHO_TIMES") {
    if (n < 1) return invalid("needs at least one echo time");
    for (size_t i = 1; i <= n; ++i) {
      double v = 0;
      if (e = number(i, v); !e.ok()) return e;
      if (!(v > 0)) return invalid(fmt::format("echo time {} must be positive", v));
    }
    s.ignored.emplace_back(detail::sanitize(raw_line, 200));
    return {};
  }
  // Display and naming commands: meaningful to AFNI's GUI only.
  static constexpr std::array<std::string_view, 8> kIgnored{"DRIVE_AFNI", "DRIVE_WAIT", "GRAPH_XRANGE", "GRAPH_YRANGE",
                                                            "GRAPH_EXPR", "NAME",       "PREFIX",       "NOTE"};
  if (std::find(kIgnored.begin(), kIgnored.end(), key) != kIgnored.end()) {
    s.ignored.emplace_back(detail::sanitize(raw_line, 200));
    return {};
  }
  return malformed(
      fmt::format("unknown command '{}' (docs/afni_rt.md lists the supported ones)", detail::sanitize(key, 40)));
}

// plug_realtime's slice offsets for an alternating (+z) or sequential pattern: slice k's time within the TR.
std::vector<double> pattern_times(int64_t nz, double tr, bool alternating) {
  std::vector<double> times(static_cast<size_t>(nz));
  const double frame = tr / static_cast<double>(nz);
  double at = 0.0;
  if (alternating) {
    for (int64_t k = 0; k < nz; k += 2, at += frame) times[static_cast<size_t>(k)] = at;
    for (int64_t k = 1; k < nz; k += 2, at += frame) times[static_cast<size_t>(k)] = at;
  } else {
    for (int64_t k = 0; k < nz; ++k, at += frame) times[static_cast<size_t>(k)] = at;
  }
  return times;
}

Result finish(State& s, const ProtocolLimits& limits) {
  auto missing = [](const std::string& what) {
    return Result::failure(ErrorCode::kMissingField, "AFNI header: " + what);
  };
  auto invalid = [](const std::string& what) {
    return Result::failure(ErrorCode::kInvalidField, "AFNI header: " + what);
  };
  if (s.nx == 0) return missing("no XYMATRIX command (the image size in pixels is required)");
  if (s.nz == 0) return missing("no slice count (give it as XYMATRIX's third value or with ZNUM)");
  if (s.fov_x == 0) return missing("no XYFOV command (the image size in mm is required)");
  if (!s.axes) return missing("no XYZAXES command (the orientation is required)");
  if (s.fov_z == 0 && s.zdelta == 0) {
    return missing("no slice spacing (give XYFOV's third value, the slab thickness, or ZDELTA)");
  }
  for (const int64_t d : {s.nx, s.ny, s.nz}) {
    if (d > kMaxDim) {
      return Result::failure(ErrorCode::kTooLarge, fmt::format("AFNI header: matrix {}x{}x{} exceeds {} per axis", s.nx,
                                                               s.ny, s.nz, kMaxDim));
    }
  }
  if (s.nx * s.ny * s.nz > kMaxVoxels) {
    return Result::failure(ErrorCode::kTooLarge,
                           fmt::format("AFNI header: matrix {}x{}x{} exceeds {} voxels", s.nx, s.ny, s.nz, kMaxVoxels));
  }

  AfniRtHeader h;
  h.acquisition = s.acquisition.value_or(AcquisitionType::k2DZT);
  h.dims = {s.nx, s.ny, s.nz};
  h.datatype = s.datatype;
  h.datum = s.datum;
  h.big_endian = s.big_endian;
  h.num_channels = s.channels;
  h.num_volumes = s.num_volumes;
  h.ignored = std::move(s.ignored);
  h.tr_defaulted = !s.tr.has_value();
  h.tr_s = s.tr.value_or(1.0);
  if (static_cast<uint64_t>(h.volume_bytes()) > limits.max_payload_bytes) {
    return Result::failure(ErrorCode::kTooLarge,
                           fmt::format("AFNI header: a volume of {} bytes is above the limit of {}", h.volume_bytes(),
                                       limits.max_payload_bytes));
  }
  if (h.per_slice() && h.num_channels > 1 &&
      static_cast<uint64_t>(h.volume_bytes()) * static_cast<uint64_t>(h.num_channels) > limits.max_payload_bytes) {
    return Result::failure(ErrorCode::kTooLarge,
                           fmt::format("AFNI header: {} channels of {}-byte volumes filled slice by slice at once are "
                                       "above the limit of {} bytes",
                                       h.num_channels, h.volume_bytes(), limits.max_payload_bytes));
  }
  if (s.zorder == ZOrder::kExplicit) {
    if (h.per_slice()) {
      return invalid(
          "ZORDER explicit is not supported (plug_realtime does not place slices sent in an explicit "
          "order); send ZORDER alt or seq");
    }
    h.ignored.emplace_back("ZORDER explicit (3D acquisition: slices arrive in place)");
  }
  // nz == 1: plug_realtime forces sequential order.
  const bool alternating = s.nz > 1 && (s.zorder == ZOrder::kAlt || s.tpattern == TPattern::kAlt);
  h.zorder = s.nz > 1 && s.zorder == ZOrder::kAlt ? SliceOrder::kAlternating : SliceOrder::kSequential;

  // Voxel sizes and origin, as RT_start_dataset computes them (in DICOM order: x = R->L, y = A->P, z = I->S).
  const std::array<int64_t, 3> n{s.nx, s.ny, s.nz};
  const std::array<double, 3> size{s.fov_x / static_cast<double>(s.nx), s.fov_y / static_cast<double>(s.ny),
                                   s.fov_z > 0 ? s.fov_z / static_cast<double>(s.nz) + s.zgap : s.zdelta};
  std::array<std::array<double, 4>, 4> dicom{};  // ijk -> DICOM (LPS) mm
  dicom[3][3] = 1.0;
  static constexpr std::array<std::string_view, 3> kFirstCommand{"XYZFIRST (x)", "XYZFIRST (y)", "XYZFIRST/ZFIRST (z)"};
  for (int a = 0; a < 3; ++a) {
    const int code = (*s.axes)[static_cast<size_t>(a)];
    const AxisOrigin& o = s.origin[static_cast<size_t>(a)];
    double origin =
        o.centred ? 0.5 * static_cast<double>(n[static_cast<size_t>(a)] - 1) * size[static_cast<size_t>(a)] + o.offset
                  : o.value;
    if (o.letter) {
      if (axis_of(*o.letter) != axis_of(code)) {
        return invalid(fmt::format(
            "{} direction letter {} is not along axis {} ({})", kFirstCommand[static_cast<size_t>(a)],
            kDirectionLetters[static_cast<size_t>(*o.letter)], "xyz"[a], kShort[static_cast<size_t>(code)]));
      }
      if (kSign[static_cast<size_t>(*o.letter)] > 0) origin = -origin;  // a distance toward R, A or I is negative
    } else if (kSign[static_cast<size_t>(code)] > 0) {
      origin = -origin;  // no letter: the distance is toward the side the axis starts from
    }
    const int row = axis_of(code);
    dicom[static_cast<size_t>(row)][static_cast<size_t>(a)] =
        kSign[static_cast<size_t>(code)] * size[static_cast<size_t>(a)];
    dicom[static_cast<size_t>(row)][3] = origin;
    h.voxel_mm[static_cast<size_t>(a)] = size[static_cast<size_t>(a)];
  }
  if (s.oblique) {
    const std::array<double, 16>& m = *s.oblique;
    if (std::abs(m[12]) > 1e-6 || std::abs(m[13]) > 1e-6 || std::abs(m[14]) > 1e-6 || std::abs(m[15] - 1.0) > 1e-6) {
      return invalid(fmt::format("OBLIQUE_XFORM's last row is {} {} {} {}, not 0 0 0 1", m[12], m[13], m[14], m[15]));
    }
    const double det =
        m[0] * (m[5] * m[10] - m[6] * m[9]) - m[1] * (m[4] * m[10] - m[6] * m[8]) + m[2] * (m[4] * m[9] - m[5] * m[8]);
    if (!(std::abs(det) > 1e-9)) return invalid("OBLIQUE_XFORM's 3x3 part is singular");
    for (size_t r = 0; r < 4; ++r) {
      for (size_t c = 0; c < 4; ++c) dicom[r][c] = m[r * 4 + c];
    }
    h.oblique = true;
    for (size_t c = 0; c < 3; ++c) {
      const double norm = std::hypot(m[c], m[4 + c], m[8 + c]);
      if (std::abs(norm - size[c]) > 0.01 * size[c]) {
        h.warnings.push_back(fmt::format(
            "OBLIQUE_XFORM gives {:.4g} mm along axis {}, XYFOV/XYMATRIX/ZDELTA {:.4g} mm; the transform is used", norm,
            "ijk"[c], size[c]));
      }
      h.voxel_mm[c] = norm;
    }
  }
  h.affine = dicom;
  for (size_t c = 0; c < 4; ++c) {  // LPS -> RAS
    h.affine[0][c] = -dicom[0][c];
    h.affine[1][c] = -dicom[1][c];
  }
  for (auto& row : h.affine) {
    for (double& v : row) v = v == 0.0 ? 0.0 : v;  // no -0 in logs and comparisons
  }

  // Slice timing, as plug_realtime sets the dataset's slice offsets.
  if (s.tpattern == TPattern::kExplicit) {
    if (static_cast<int64_t>(s.explicit_times.size()) != s.nz) {
      return invalid(
          fmt::format("TPATTERN explicit gives {} slice times for {} slices", s.explicit_times.size(), s.nz));
    }
    const double tr = h.tr_s;
    const auto outside = [tr](double t) { return !(t >= 0.0 && t < tr); };
    if (std::any_of(s.explicit_times.begin(), s.explicit_times.end(), outside)) {
      const double top = *std::max_element(s.explicit_times.begin(), s.explicit_times.end());
      const bool looks_ms = top >= 10.0 * tr && std::none_of(s.explicit_times.begin(), s.explicit_times.end(),
                                                             [&](double t) { return outside(t / 1000.0); });
      return invalid(fmt::format("TPATTERN explicit times must lie in [0, TR) = [0, {}) s (latest {}){}", tr, top,
                                 looks_ms ? "; these look like milliseconds, but plug_realtime reads seconds" : ""));
    }
  }
  const bool timed =
      h.acquisition == AcquisitionType::k3DTiming || (h.acquisition == AcquisitionType::k2DZT && s.nz > 1);
  if (timed) {
    if (s.tpattern == TPattern::kExplicit) {
      h.slice_timing_s = s.explicit_times;
    } else {
      h.slice_timing_s = pattern_times(s.nz, h.tr_s, alternating);
    }
  }
  return {std::move(h), {}};
}

}  // namespace

std::string_view to_string(AcquisitionType type) {
  switch (type) {
    case AcquisitionType::k2DZ:
      return "2D+z";
    case AcquisitionType::k2DZT:
      return "2D+zt";
    case AcquisitionType::k3D:
      return "3D";
    case AcquisitionType::k3DT:
      return "3D+t";
    case AcquisitionType::k3DTiming:
      return "3D+timing";
  }
  return "?";
}

int64_t AfniRtHeader::sample_bytes() const {
  return bytes_per_voxel(datatype);
}

int64_t AfniRtHeader::slice_position(int64_t arrival) const {
  if (zorder == SliceOrder::kSequential || dims[2] < 2) return arrival;
  const int64_t half = (dims[2] + 1) / 2;
  return arrival < half ? 2 * arrival : 1 + 2 * (arrival - half);
}

Parsed<AfniRtHeader> parse_afni_rt_header(std::string_view text, const ProtocolLimits& limits) {
  if (text.size() > kMaxHeaderBytes) {
    return Result::failure(ErrorCode::kTooLarge,
                           fmt::format("AFNI header: {} bytes, the limit is {}", text.size(), kMaxHeaderBytes));
  }
  State s;
  size_t line_number = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    ++line_number;
    start = end + 1;
    const auto tokens = split(line);
    if (tokens.empty()) continue;
    const LineError err(line_number, tokens[0]);
    for (const char c : line) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\t' && c != '\r' && c != '\f') || u >= 0x7f) {
        return Result::failure(ErrorCode::kMalformed,
                               fmt::format("AFNI header line {}: byte 0x{:02x} is not text", line_number, u));
      }
    }
    if (ProtocolError e = apply(s, line, tokens, err); !e.ok()) return {std::nullopt, std::move(e)};
  }
  return finish(s, limits);
}

}  // namespace rtf::stream::afni
