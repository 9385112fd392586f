// Decoding and validation of NIfTI-1/NIfTI-2 headers (encoding: nifti_header_encode.cpp).
//
// nifticlib provides the binary layouts (nifti_1_header, nifti_2_header), byte swapping, the quaternion <->
// matrix conversions and the nifti_image -> header encoding. Its whole-file readers (nifti_image_read/_load)
// are deliberately not used on untrusted files: they repair bad values silently (NaN voxels become 0), parse
// header extensions with quadratic cost and allocations bounded only by the file, and report errors on
// stderr instead of to the caller. Here every field that sizes an allocation or an offset is checked first.
#include "core/io/nifti_header.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>

extern "C" {
#include <nifti2_io.h>
}

namespace rtf::nifti_detail {
namespace {

static_assert(sizeof(nifti_1_header) == kNifti1HeaderSize);
static_assert(sizeof(nifti_2_header) == kNifti2HeaderSize);

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& problem) {
  throw NiftiError(path, problem);
}

// Magic bytes as text, with non-printable bytes escaped.
std::string printable(const char* bytes, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  return out;
}

std::optional<DataType> supported_datatype(int code) {
  switch (code) {
    case 2:
      return DataType::kUint8;
    case 4:
      return DataType::kInt16;
    case 8:
      return DataType::kInt32;
    case 16:
      return DataType::kFloat32;
    case 64:
      return DataType::kFloat64;
    case 256:
      return DataType::kInt8;
    case 512:
      return DataType::kUint16;
    case 768:
      return DataType::kUint32;
    case 1024:
      return DataType::kInt64;
    case 1280:
      return DataType::kUint64;
    default:
      return std::nullopt;
  }
}

const char* unsupported_datatype_name(int code) {
  switch (code) {
    case 1:
      return "binary (1 bit per voxel)";
    case 32:
      return "complex64";
    case 128:
      return "RGB24";
    case 1536:
      return "float128";
    case 1792:
      return "complex128";
    case 2048:
      return "complex256";
    case 2304:
      return "RGBA32";
    default:
      return nullptr;
  }
}

// The header fields we use, in native byte order and common types, before validation.
struct Fields {
  int version = 1;
  bool swapped = false;
  char magic[8] = {};
  int64_t dim[8] = {};
  int datatype = 0;
  int intent_code = 0;
  double pixdim[8] = {};
  double vox_offset_float = 0.0;  // NIfTI-1 (float on disk)
  int64_t vox_offset_int = 0;     // NIfTI-2 (int64 on disk)
  double scl_slope = 0.0;
  double scl_inter = 0.0;
  int xyzt_units = 0;
  int qform_code = 0;
  int sform_code = 0;
  double quatern[6] = {};  // b, c, d, qoffset x, y, z
  double srow[3][4] = {};
  std::string description;
};

std::string c_string(const char* chars, size_t max_len) {
  size_t n = 0;
  while (n < max_len && chars[n] != '\0') ++n;
  return std::string(chars, n);
}

template <typename Header>
void copy_common(const Header& h, Fields& f) {
  std::memcpy(f.magic, h.magic, sizeof(h.magic));
  for (int i = 0; i < 8; ++i) {
    f.dim[i] = h.dim[i];
    f.pixdim[i] = h.pixdim[i];
  }
  f.datatype = h.datatype;
  f.intent_code = h.intent_code;
  f.scl_slope = h.scl_slope;
  f.scl_inter = h.scl_inter;
  f.xyzt_units = static_cast<unsigned char>(h.xyzt_units);  // a bit field: never sign-extend
  f.qform_code = h.qform_code;
  f.sform_code = h.sform_code;
  const double q[6] = {h.quatern_b, h.quatern_c, h.quatern_d, h.qoffset_x, h.qoffset_y, h.qoffset_z};
  std::copy(q, q + 6, f.quatern);
  for (int c = 0; c < 4; ++c) {
    f.srow[0][c] = h.srow_x[c];
    f.srow[1][c] = h.srow_y[c];
    f.srow[2][c] = h.srow_z[c];
  }
  f.description = c_string(h.descrip, sizeof(h.descrip));
}

int32_t byte_swapped(int32_t v) {
  const auto u = static_cast<uint32_t>(v);
  return static_cast<int32_t>((u >> 24) | ((u >> 8) & 0xFF00u) | ((u << 8) & 0xFF0000u) | (u << 24));
}

Fields read_fields(std::span<const uint8_t> bytes, const std::filesystem::path& path) {
  if (bytes.size() >= 12 && std::memcmp(bytes.data(), "<nifti_image", 12) == 0) {
    fail(path, "ASCII NIfTI headers (.nia style) are not supported");
  }
  if (bytes.size() < 4) {
    fail(path, fmt::format("not a NIfTI file: only {} bytes long", bytes.size()));
  }
  int32_t sizeof_hdr = 0;
  std::memcpy(&sizeof_hdr, bytes.data(), 4);
  Fields f;
  if (sizeof_hdr == 348 || byte_swapped(sizeof_hdr) == 348) {
    f.version = 1;
  } else if (sizeof_hdr == 540 || byte_swapped(sizeof_hdr) == 540) {
    f.version = 2;
  } else {
    fail(path, fmt::format("not a NIfTI file: header size field is {} (NIfTI-1 has 348, NIfTI-2 540)", sizeof_hdr));
  }
  f.swapped = sizeof_hdr != 348 && sizeof_hdr != 540;
  const size_t need = f.version == 1 ? kNifti1HeaderSize : kNifti2HeaderSize;
  if (bytes.size() < need) {
    fail(path, fmt::format("truncated header: file ends after {} bytes, a NIfTI-{} header has {}", bytes.size(),
                           f.version, need));
  }
  if (f.version == 1) {
    nifti_1_header h;
    std::memcpy(&h, bytes.data(), sizeof(h));
    if (f.swapped) swap_nifti_header(&h, 1);
    copy_common(h, f);
    f.vox_offset_float = h.vox_offset;
  } else {
    nifti_2_header h;
    std::memcpy(&h, bytes.data(), sizeof(h));
    if (f.swapped) swap_nifti_header(&h, 2);
    copy_common(h, f);
    f.vox_offset_int = h.vox_offset;
  }
  return f;
}

bool checked_mul(uint64_t a, uint64_t b, uint64_t& out) {
  return !__builtin_mul_overflow(a, b, &out);
}

// Voxel spacing along axis i (0..2) from pixdim[i+1]: |pixdim|, with 0 (and unused axes' garbage) read as 1.
double spacing(const Fields& f, int i, const std::filesystem::path& path) {
  const double p = f.pixdim[i + 1];
  if (!std::isfinite(p)) {
    if (i + 1 <= f.dim[0]) fail(path, fmt::format("pixdim[{}] (voxel size) is {}", i + 1, p));
    return 1.0;
  }
  return p == 0.0 ? 1.0 : std::abs(p);
}

Eigen::Matrix4d choose_affine(const Fields& f, const std::array<double, 3>& voxel, const std::filesystem::path& path) {
  Eigen::Matrix4d a = Eigen::Matrix4d::Identity();
  if (f.sform_code > 0) {
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 4; ++c) a(r, c) = f.srow[r][c];
    }
    if (!a.allFinite()) fail(path, fmt::format("sform (sform_code {}) contains NaN or infinite values", f.sform_code));
    return a;
  }
  if (f.qform_code > 0) {
    for (double q : f.quatern) {
      if (!std::isfinite(q)) {
        fail(path, fmt::format("qform (qform_code {}) has NaN or infinite parameters", f.qform_code));
      }
    }
    const double qfac = f.pixdim[0] < 0.0 ? -1.0 : 1.0;
    const nifti_dmat44 m = nifti_quatern_to_dmat44(f.quatern[0], f.quatern[1], f.quatern[2], f.quatern[3], f.quatern[4],
                                                   f.quatern[5], voxel[0], voxel[1], voxel[2], qfac);
    for (int r = 0; r < 4; ++r) {
      for (int c = 0; c < 4; ++c) a(r, c) = m.m[r][c];
    }
    if (!a.allFinite()) fail(path, "qform yields a non-finite matrix");
    return a;
  }
  for (int i = 0; i < 3; ++i) a(i, i) = voxel[i];
  return a;
}

// Repetition time in seconds from pixdim[4] and the time units; 0 if absent or not a time axis.
double repetition_time(const Fields& f, const std::filesystem::path& path) {
  if (f.dim[0] < 4) return 0.0;  // no time axis
  const double p = f.pixdim[4];
  if (!std::isfinite(p) || p < 0.0) fail(path, fmt::format("pixdim[4] (repetition time) is {}", p));
  switch (f.xyzt_units & 0x38) {
    case 0:  // unknown: seconds, as FSL and nibabel assume
    case NIFTI_UNITS_SEC:
      return p;
    case NIFTI_UNITS_MSEC:
      return p * 1e-3;
    case NIFTI_UNITS_USEC:
      return p * 1e-6;
    default:
      return 0.0;  // Hz, ppm, rad/s: a spectral axis, not time
  }
}

uint64_t data_offset(const Fields& f, bool single_file, uint64_t header_size, const std::filesystem::path& path,
                     const NiftiReadLimits& limits) {
  uint64_t offset = 0;
  if (f.version == 1) {
    const double v = f.vox_offset_float;
    if (!std::isfinite(v) || v < 0.0) fail(path, fmt::format("vox_offset is {}", v));
    if (v > static_cast<double>(limits.max_bytes)) fail(path, fmt::format("vox_offset {} is absurdly large", v));
    offset = static_cast<uint64_t>(v);  // a fractional offset is truncated, as nifticlib does
  } else {
    const int64_t v = f.vox_offset_int;
    if (v < 0) fail(path, fmt::format("vox_offset is {}", v));
    if (static_cast<uint64_t>(v) > limits.max_bytes) fail(path, fmt::format("vox_offset {} is absurdly large", v));
    offset = static_cast<uint64_t>(v);
  }
  // In a .nii the data cannot start inside the header; nifticlib moves such offsets to the header's end.
  if (single_file && offset < header_size) offset = header_size;
  return offset;
}

}  // namespace

void quiet_nifticlib() {
  static const bool kQuieted = [] {
    nifti_set_debug_level(0);
    return true;
  }();
  (void)kQuieted;
}

DecodedHeader decode_nifti_header(std::span<const uint8_t> bytes, const std::filesystem::path& path,
                                  const NiftiReadLimits& limits) {
  quiet_nifticlib();
  const Fields f = read_fields(bytes, path);
  DecodedHeader out;
  out.version = f.version;
  out.swapped = f.swapped;

  // Magic: "n+1\0" / "ni1\0" (NIfTI-1), "n+2\0" / "ni2\0" + signature (NIfTI-2).
  const char version_char = f.version == 1 ? '1' : '2';
  const bool magic_ok =
      f.magic[0] == 'n' && (f.magic[1] == '+' || f.magic[1] == 'i') && f.magic[2] == version_char && f.magic[3] == '\0';
  if (!magic_ok) {
    fail(path, fmt::format("not a NIfTI-{0} file: magic is \"{1}\" (expected \"n+{0}\" or \"ni{0}\"; "
                           "ANALYZE 7.5 headers are not supported)",
                           f.version, printable(f.magic, 4)));
  }
  if (f.version == 2 && std::memcmp(f.magic + 4, kNifti2Signature, 4) != 0) {
    fail(path, fmt::format("NIfTI-2 signature damaged: magic[4..7] is \"{}\" (file transferred in text mode?)",
                           printable(f.magic + 4, 4)));
  }
  out.single_file = f.magic[1] == '+';

  // Dimensions: dim[0] axes, each positive; a 5th or higher axis must have length 1, except the 5th of a vector image
  // (intent 1007, a single time point: ITK's displacement fields), whose components become the volumes.
  const int64_t ndim = f.dim[0];
  if (ndim < 1 || ndim > 7) fail(path, fmt::format("dim[0] (number of dimensions) is {}, must be 1..7", ndim));
  const bool vector = ndim >= 5 && f.intent_code == kIntentVector && f.dim[4] == 1 && f.dim[5] > 1 &&
                      (ndim < 6 || f.dim[6] == 1) && (ndim < 7 || f.dim[7] == 1);
  for (int i = 1; i <= ndim; ++i) {
    if (f.dim[i] < 1) fail(path, fmt::format("dim[{}] = {} is not a positive size", i, f.dim[i]));
    if (vector && i == 5) {
      if (f.dim[i] > limits.max_dim) fail(path, fmt::format("dim[5] = {} exceeds the limit", f.dim[i]));
      continue;
    }
    if (i >= 5 && f.dim[i] != 1) {
      fail(path, fmt::format("dim[{}] = {}: images with more than 4 dimensions (vectors, tensors) are not supported", i,
                             f.dim[i]));
    }
    if (i <= 4 && f.dim[i] > limits.max_dim) {
      fail(path, fmt::format("dim[{}] = {} exceeds the limit of {}", i, f.dim[i], limits.max_dim));
    }
  }
  auto axis = [&](int i) {
    if (i == 4 && vector) return f.dim[5];  // the components take the place of the volumes
    return i <= ndim ? f.dim[i] : int64_t{1};
  };

  const std::optional<DataType> type = supported_datatype(f.datatype);
  if (!type) {
    if (const char* name = unsupported_datatype_name(f.datatype)) {
      fail(path, fmt::format("datatype {} ({}) is not supported", name, f.datatype));
    }
    fail(path, fmt::format("unknown datatype code {}", f.datatype));
  }
  out.bytes_per_voxel = bytes_per_voxel(*type);

  // Sizes, with overflow checks, within the limits.
  uint64_t voxels = 1;
  for (int i = 1; i <= 4; ++i) {
    if (!checked_mul(voxels, static_cast<uint64_t>(axis(i)), voxels)) fail(path, "voxel count overflows");
  }
  uint64_t data_bytes = 0;
  uint64_t float_bytes = 0;
  if (!checked_mul(voxels, static_cast<uint64_t>(out.bytes_per_voxel), data_bytes) ||
      !checked_mul(voxels, sizeof(float), float_bytes) || data_bytes > limits.max_bytes ||
      float_bytes > limits.max_bytes) {
    fail(path, fmt::format("image of {} voxels ({}x{}x{}x{} {}) exceeds the limit of {} bytes", voxels, axis(1),
                           axis(2), axis(3), axis(4), to_string(*type), limits.max_bytes));
  }
  out.voxel_count = voxels;
  out.data_bytes = data_bytes;
  const uint64_t header_size = f.version == 1 ? kNifti1HeaderSize : kNifti2HeaderSize;
  out.data_offset = data_offset(f, out.single_file, header_size, path, limits);
  uint64_t end = 0;
  if (__builtin_add_overflow(out.data_offset, out.data_bytes, &end)) fail(path, "data end offset overflows");

  // Scaling as nibabel reads it: slope 0 or non-finite (nibabel writes NaN for "unscaled") means no scaling;
  // a usable slope with a non-finite intercept is an error.
  if (std::isfinite(f.scl_slope) && f.scl_slope != 0.0) {
    if (!std::isfinite(f.scl_inter)) {
      fail(path, fmt::format("scl_slope is {} but scl_inter is {}", f.scl_slope, f.scl_inter));
    }
    if (f.scl_slope != 1.0 || f.scl_inter != 0.0) {  // identity scaling is skipped: keeps -0.0 and NaN payloads
      out.scl_slope = f.scl_slope;
      out.scl_inter = f.scl_inter;
    }
  }

  ImageHeader& h = out.image;
  h.dims = {axis(1), axis(2), axis(3)};
  h.num_volumes = axis(4);
  h.vector_components = vector;
  for (int i = 0; i < 3; ++i) h.voxel_mm[static_cast<size_t>(i)] = spacing(f, i, path);
  h.affine = choose_affine(f, h.voxel_mm, path);
  h.xform_code = f.sform_code > 0 ? f.sform_code : (f.qform_code > 0 ? f.qform_code : 0);
  h.tr_s = repetition_time(f, path);
  h.source_type = *type;
  h.description = f.description;
  return out;
}

}  // namespace rtf::nifti_detail
