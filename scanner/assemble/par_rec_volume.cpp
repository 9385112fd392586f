// PAR -> the kept image type's lines, one per slice -> dcm2niix's geometry -> REC images (by "index in REC") scaled and
// flipped into NIfTI order.
#include "scanner/assemble/par_rec_volume.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <numbers>
#include <sstream>

#include "core/dicom/dicom_affine.hpp"

namespace rtf::dicom {

namespace fs = std::filesystem;

ParRecIncomplete::ParRecIncomplete(const fs::path& file, const std::string& problem, std::uintmax_t expected_bytes,
                                   std::uintmax_t actual_bytes)
    : ParError(file.string(), 0, problem), expected_bytes_(expected_bytes), actual_bytes_(actual_bytes) {}

fs::path rec_path_for(const fs::path& par) {
  fs::path upper = par, lower = par;
  upper.replace_extension(".REC");
  lower.replace_extension(".rec");
  if (fs::exists(upper)) return upper;
  if (fs::exists(lower)) return lower;
  const std::string ext = par.extension().string();
  return (!ext.empty() && ext == ".par") ? lower : upper;
}

int default_image_type(const ParHeader& header) {
  if (header.images.empty()) throw ParError("PAR", 0, "no image lines");
  int lowest = header.images.front().image_type;
  for (const ParImage& im : header.images) {
    if (im.image_type == 0) return 0;
    lowest = std::min(lowest, im.image_type);
  }
  return lowest;
}

namespace {

// A PAR is text of some kB (a whole 4D scan's: a few MB): a larger ".par" is not one, and is not read (issue 35).
constexpr std::uintmax_t kMaxParBytes = std::uintmax_t{64} << 20;

std::string read_text(const fs::path& file) {
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(file, ec);
  if (!ec && size > kMaxParBytes) {
    throw ParError(
        file.string(), 0,
        fmt::format("{} bytes: not a PAR header (a PAR is text of at most {} MiB)", size, kMaxParBytes >> 20));
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ParRecIncomplete(file, "cannot open the PAR file (not written yet?)", 0, 0);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool has_end_marker(const std::string& text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("end of data description file") != std::string::npos;
}

Eigen::Vector3d lps(const std::array<double, 3>& ap_fh_rl) {
  return {ap_fh_rl[2], ap_fh_rl[0], ap_fh_rl[1]};
}

// The kept type's images ordered by slice number, checked to be one per slice, contiguous, of one size.
std::vector<const ParImage*> kept_images(const ParHeader& h, int type, const fs::path& par) {
  std::vector<const ParImage*> kept;
  for (const ParImage& im : h.images) {
    if (im.image_type == type) kept.push_back(&im);
  }
  if (kept.empty()) {
    std::string present;
    for (const ParImage& im : h.images) {
      const std::string t = std::to_string(im.image_type);
      if (present.find(" " + t + " ") == std::string::npos) present += " " + t + " ";
    }
    throw ParError(par.string(), 0, fmt::format("no images of type {} (types present:{})", type, present));
  }
  std::stable_sort(kept.begin(), kept.end(), [](const ParImage* a, const ParImage* b) { return a->slice < b->slice; });
  for (size_t k = 1; k < kept.size(); ++k) {
    if (kept[k]->slice == kept[k - 1]->slice) {
      throw ParError(par.string(), kept[k]->line,
                     fmt::format("a second image of type {} for slice {} (line {}): several dynamics, echoes or "
                                 "phases in one PAR are not read as one volume",
                                 type, kept[k]->slice, kept[k - 1]->line));
    }
    if (kept[k]->slice != kept[k - 1]->slice + 1) {
      throw ParError(par.string(), kept[k]->line,
                     fmt::format("slice {} follows slice {}: slices are missing", kept[k]->slice, kept[k - 1]->slice));
    }
  }
  const ParImage& first = h.images.front();
  for (const ParImage& im : h.images) {
    if (im.recon_resolution != first.recon_resolution || im.pixel_bits != first.pixel_bits) {
      throw ParError(par.string(), im.line,
                     fmt::format("image size {} x {} x {} bits differs from the first image's {} x {} x {} bits",
                                 im.recon_resolution[0], im.recon_resolution[1], im.pixel_bits,
                                 first.recon_resolution[0], first.recon_resolution[1], first.pixel_bits));
    }
  }
  if (first.pixel_bits != 8 && first.pixel_bits != 16) {
    throw ParError(par.string(), first.line, fmt::format("{} bits per pixel (8 or 16 are read)", first.pixel_bits));
  }
  if (first.recon_resolution[0] < 1 || first.recon_resolution[1] < 1) {
    throw ParError(par.string(), first.line,
                   fmt::format("recon resolution {} x {}", first.recon_resolution[0], first.recon_resolution[1]));
  }
  return kept;
}

// Rotation from PAR's angulation (ap, fh, rl; degrees) as dcm2niix (after dicm2nii) builds it: Rx(rl) Ry(ap) Rz(fh),
// axes x = RL (L+), y = AP (P+), z = FH (H+), i.e. DICOM's LPS. Then columns permuted and signed per slice
// orientation so that they are (row direction, column direction, slice direction).
Eigen::Matrix3d slice_axes(const std::array<double, 3>& angulation, int orientation, const fs::path& par, int line) {
  const double to_rad = std::numbers::pi / 180.0;
  const double rl = angulation[2] * to_rad, ap = angulation[0] * to_rad, fh = angulation[1] * to_rad;
  Eigen::Matrix3d rx, ry, rz;
  rx << 1, 0, 0, 0, std::cos(rl), -std::sin(rl), 0, std::sin(rl), std::cos(rl);
  ry << std::cos(ap), 0, std::sin(ap), 0, 1, 0, -std::sin(ap), 0, std::cos(ap);
  rz << std::cos(fh), -std::sin(fh), 0, std::sin(fh), std::cos(fh), 0, 0, 0, 1;
  const Eigen::Matrix3d r = rx * ry * rz;
  Eigen::Matrix3d axes;
  switch (static_cast<ParSliceOrientation>(orientation)) {
    case ParSliceOrientation::kTransversal:
      axes = r;
      break;
    case ParSliceOrientation::kSagittal:
      axes << r.col(1), -r.col(2), -r.col(0);
      break;
    case ParSliceOrientation::kCoronal:
      axes << r.col(0), -r.col(2), r.col(1);
      break;
    default:
      throw ParError(par.string(), line,
                     fmt::format("slice orientation {} (1 transversal, 2 sagittal, 3 coronal)", orientation));
  }
  return axes;
}

struct StackGeometry {
  Eigen::Matrix4d affine;       // NIfTI RAS, slices ascending along the slice normal
  bool slice_one_first = true;  // NIfTI slice 0 is PAR's lowest slice number (else the highest)
};

StackGeometry stack_geometry(const ParHeader& h, const std::vector<const ParImage*>& kept, const fs::path& par) {
  if (!h.general.off_centre_mm) {
    throw ParError(par.string(), 0, "no 'Off Centre midslice(ap,fh,rl) [mm]' in the general information");
  }
  const ParImage& line0 = **std::min_element(kept.begin(), kept.end(), [](const ParImage* a, const ParImage* b) {
    return a->line < b->line;
  });  // the kept type's first line in the file: dcm2niix takes angulation, orientation and sizes from it
  const int nx = line0.recon_resolution[0], ny = line0.recon_resolution[1], nz = static_cast<int>(kept.size());
  const Eigen::Matrix3d axes = slice_axes(line0.angulation_deg, line0.slice_orientation, par, line0.line);
  // The first and last slices' positions (dcm2niix takes the first line's and the highest slice number's: the same
  // where the file lists slice 1 first, as Philips writes it; where a file lists them the other way round, dcm2niix
  // ends with a slice spacing of 0, and the lowest slice number is taken here instead).
  Eigen::Vector3d first = lps(kept.front()->offcentre_mm), last = lps(kept.back()->offcentre_mm);
  double dz = line0.slice_thickness_mm + line0.slice_gap_mm;
  if (nz > 1 && kept.front()->slice == 1) {  // dcm2niix's issue 273: trust the positions over thickness + gap
    const double measured = (first - last).norm() / (kept.back()->slice - kept.front()->slice);
    if (std::fabs(measured - dz) > 1e-4) dz = measured;
  }
  if (!(dz > 0.0)) throw ParError(par.string(), line0.line, fmt::format("slice spacing {} mm", dz));
  const Eigen::Vector3d centre = lps(*h.general.off_centre_mm);
  // Philips' offcentre-order bug (dcm2niix): where the middle of the first and last slices is more than 1 mm from the
  // stack's offcentre and closer once read as (rl, ap, fh), the image lines' offcentres are taken in that order.
  if (nz > 1) {
    const Eigen::Vector3d middle = (first + last) / 2.0;
    const Eigen::Vector3d rotated(middle(1), middle(2), middle(0));
    const double error = (middle - centre).norm(), rotated_error = (rotated - centre).norm();
    if (error > 1.0 && rotated_error < error * (1.0 - 1e-6)) {
      first = Eigen::Vector3d(first(1), first(2), first(0));
      last = Eigen::Vector3d(last(1), last(2), last(0));
    }
  }
  // The stack centred on the offcentre: V4.1 and later put it on voxel (n - 1) / 2, V4 on n / 2 in plane.
  const bool v4 = h.version == ParVersion::kV4;
  const Eigen::Vector3d middle_voxel(v4 ? nx / 2.0 : (nx - 1) / 2.0, v4 ? ny / 2.0 : (ny - 1) / 2.0, (nz - 1) / 2.0);
  const double dx = line0.pixel_spacing_mm[0], dy = line0.pixel_spacing_mm[1];
  if (!(dx > 0.0) || !(dy > 0.0)) {
    throw ParError(par.string(), line0.line, fmt::format("pixel spacing {} x {} mm", dx, dy));
  }
  Eigen::Matrix3d scaled;
  scaled << axes.col(0) * dx, axes.col(1) * dy, axes.col(2) * dz;
  const Eigen::Vector3d corner = centre - scaled * middle_voxel;  // voxel (0, 0, 0): the lowest along the normal
  // Which end PAR's slice 1 is at (dcm2niix: head first supine assumed; sagittal counts the other way).
  const int axis = line0.slice_orientation == 2 ? 0 : (line0.slice_orientation == 3 ? 1 : 2);
  const double rise = first(axis) - last(axis);
  const bool slice_one_at_corner = axis == 0 ? rise > 0.0 : rise <= 0.0;

  DicomPlane plane;
  for (int i = 0; i < 3; ++i) {
    plane.orientation[static_cast<size_t>(i)] = axes(i, 0);
    plane.orientation[static_cast<size_t>(i + 3)] = axes(i, 1);
    plane.position[static_cast<size_t>(i)] = corner(i);
  }
  plane.pixel_spacing = {dy, dx};
  plane.rows = ny;
  plane.columns = nx;
  return {stack_affine(plane, dz), slice_one_at_corner};
}

// Per-image scaling: value = float(PV) * slope + intercept, in the precision dcm2niix's file gives.
struct Scale {
  double slope = 1.0, intercept = 0.0;
  bool float_arithmetic = false;  // DV per image in float32 arithmetic, as dcm2niix converts varying scalings
};

bool same_scaling(const std::vector<const ParImage*>& kept) {
  const ParImage& a = *kept.front();
  return std::all_of(kept.begin(), kept.end(), [&](const ParImage* b) {
    return b->rescale_intercept == a.rescale_intercept && b->rescale_slope == a.rescale_slope &&
           b->scale_slope == a.scale_slope;
  });
}

// dcm2niix's Philips "precise" scl_slope / scl_inter: FP(0) and FP(1) - FP(0) in float32; DV's where RS * SS is 0.
Scale dcm2niix_precise(const ParImage& im) {
  const float rs = static_cast<float>(im.rescale_slope), ri = static_cast<float>(im.rescale_intercept),
              ss = static_cast<float>(im.scale_slope);
  const auto fp = [&](float pv) -> float {
    const float divisor = rs * ss;
    return divisor == 0.0f ? 0.0f : (pv * rs + ri) / divisor;
  };
  const float at0 = fp(0.0f), at1 = fp(1.0f);
  if (at0 == at1) return {rs, ri, false};
  return {static_cast<double>(at1 - at0), static_cast<double>(at0), false};
}

float scaled_value(double pv, const ParImage& im, ParScaling scaling, const Scale& uniform, bool is_uniform) {
  switch (scaling) {
    case ParScaling::kDisplayValue:
      return static_cast<float>(im.display_value(pv));
    case ParScaling::kFloatingPoint:
      return static_cast<float>(im.floating_point_value(pv));
    case ParScaling::kAsDcm2niix:
      break;
  }
  if (is_uniform) return static_cast<float>(pv * uniform.slope + uniform.intercept);
  float v = static_cast<float>(pv) * static_cast<float>(im.rescale_slope);
  v += static_cast<float>(im.rescale_intercept);
  return v;
}

}  // namespace

DicomVolume par_rec_volume(const fs::path& par, const ParRecOptions& options) {
  const std::string text = read_text(par);
  if (!has_end_marker(text)) {
    throw ParRecIncomplete(par, "no END OF DATA DESCRIPTION FILE line: the PAR is not completely written", 0, 0);
  }
  const ParHeader h = parse_par(text, par.string());
  if (h.images.empty()) throw ParError(par.string(), 0, "no image lines");
  const int type = options.image_type.value_or(default_image_type(h));
  const std::vector<const ParImage*> kept = kept_images(h, type, par);
  const ParImage& any = *kept.front();
  const int nx = any.recon_resolution[0], ny = any.recon_resolution[1], nz = static_cast<int>(kept.size());
  const size_t bytes_per_pixel = any.pixel_bits == 16 ? 2 : 1;
  const size_t image_bytes = static_cast<size_t>(nx) * static_cast<size_t>(ny) * bytes_per_pixel;
  int max_index = 0;
  for (const ParImage& im : h.images) max_index = std::max(max_index, im.index_in_rec);
  const std::uintmax_t expected = static_cast<std::uintmax_t>(max_index + 1) * image_bytes;

  const StackGeometry geometry = stack_geometry(h, kept, par);

  const fs::path rec = rec_path_for(par);
  std::error_code ec;
  const std::uintmax_t actual = fs::file_size(rec, ec);
  if (ec) throw ParRecIncomplete(rec, "no REC file beside the PAR (not written yet?)", expected, 0);
  if (actual < expected) {
    throw ParRecIncomplete(rec, fmt::format("{} bytes, the PAR's {} images need {}", actual, max_index + 1, expected),
                           expected, actual);
  }
  if (actual > expected) {
    throw ParError(rec.string(), 0,
                   fmt::format("{} bytes, more than the {} the PAR's {} images need: not this PAR's REC?", actual,
                               expected, max_index + 1));
  }
  std::vector<char> bytes(static_cast<size_t>(actual));
  {
    std::ifstream in(rec, std::ios::binary);
    if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()))) {
      throw ParRecIncomplete(rec, "could not read the whole REC", expected, actual);
    }
  }

  const bool uniform = same_scaling(kept);
  const Scale uniform_scale = dcm2niix_precise(any);
  const size_t plane = static_cast<size_t>(nx) * static_cast<size_t>(ny);
  std::vector<float> volume(plane * static_cast<size_t>(nz));
  for (int z = 0; z < nz; ++z) {
    const ParImage& im = *kept[static_cast<size_t>(geometry.slice_one_first ? z : nz - 1 - z)];
    const char* src = bytes.data() + static_cast<size_t>(im.index_in_rec) * image_bytes;
    for (int y = 0; y < ny; ++y) {
      const size_t row = static_cast<size_t>(ny - 1 - y);  // NIfTI rows bottom-up
      float* out = volume.data() + static_cast<size_t>(z) * plane + static_cast<size_t>(y) * static_cast<size_t>(nx);
      for (int x = 0; x < nx; ++x) {
        const size_t at = row * static_cast<size_t>(nx) + static_cast<size_t>(x);
        double pv = 0.0;
        if (bytes_per_pixel == 2) {  // little-endian, signed as dcm2niix reads it
          const auto lo = static_cast<uint16_t>(static_cast<unsigned char>(src[2 * at]));
          const auto hi = static_cast<uint16_t>(static_cast<unsigned char>(src[2 * at + 1]));
          pv = static_cast<int16_t>(static_cast<uint16_t>(lo | (hi << 8)));
        } else {
          pv = static_cast<unsigned char>(src[at]);
        }
        out[x] = scaled_value(pv, im, options.scaling, uniform_scale, uniform);
      }
    }
  }

  ImageHeader header;
  header.dims = {nx, ny, nz};
  header.num_volumes = 1;
  header.affine = geometry.affine;
  for (int c = 0; c < 3; ++c) header.voxel_mm[static_cast<size_t>(c)] = geometry.affine.block<3, 1>(0, c).norm();
  header.xform_code = 1;
  header.tr_s = h.general.repetition_time_ms.empty() ? 0.0 : h.general.repetition_time_ms.front() / 1000.0;
  header.source_type = bytes_per_pixel == 1                                      ? DataType::kUint8
                       : (options.scaling == ParScaling::kAsDcm2niix && uniform) ? DataType::kInt16
                                                                                 : DataType::kFloat32;
  header.description = fmt::format("PAR/REC image type {}", type);
  return {Image(std::move(header), std::move(volume)), {}};
}

}  // namespace rtf::dicom
