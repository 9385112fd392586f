// NIfTI affine -> DICOM plane (dcm2niix's reading inverted), exact integer pixels, a hand-made CSA header, then one
// GDCM data set per file written in Explicit VR Little Endian (GDCM fills the file meta information).
#include "scanner/dicom/dicom_writer.hpp"

#include <fmt/format.h>
#include <gdcmDataElement.h>
#include <gdcmDataSet.h>
#include <gdcmFile.h>
#include <gdcmTag.h>
#include <gdcmTransferSyntax.h>
#include <gdcmVR.h>
#include <gdcmWriter.h>

#include <Eigen/Dense>
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "core/dicom/mosaic_layout.hpp"

namespace rtf::dicom {

static_assert(std::endian::native == std::endian::little, "the DICOM writer stores little-endian values as they are");

namespace {

constexpr const char* kMrImageStorage = "1.2.840.10008.5.1.4.1.1.4";
// Nominal time of day at which every simulated series starts (AcquisitionTime = start + index * TR + slice time).
constexpr double kSeriesStartSeconds = 12 * 3600.0;

// ---- identity --------------------------------------------------------------------------------------------------

void check_uid(const std::string& uid, const char* what) {
  bool ok = !uid.empty() && uid.size() <= 64 && uid.front() != '.' && uid.back() != '.';
  for (size_t i = 0; ok && i < uid.size(); ++i) {
    const char ch = uid[i];
    const bool component_start = i == 0 || uid[i - 1] == '.';
    if (ch == '.') {
      ok = !component_start;
    } else {
      ok = ch >= '0' && ch <= '9' && !(component_start && ch == '0' && i + 1 < uid.size() && uid[i + 1] != '.');
    }
  }
  if (!ok)
    throw std::invalid_argument(fmt::format("{} '{}' is not a valid DICOM UID (digits and dots, <= 64)", what, uid));
}

// `base`.`suffix`, shortening `base` by whole components where the result would pass 64 characters.
std::string derived_uid(std::string base, const std::string& suffix) {
  while (base.size() + 1 + suffix.size() > 64) {
    const size_t dot = base.rfind('.');
    if (dot == std::string::npos || dot == 0) throw std::invalid_argument("SeriesInstanceUID too long to derive from");
    base.resize(dot);
  }
  return base + "." + suffix;
}

std::string study_uid(const DicomWriteSeries& s) {
  if (!s.study_instance_uid.empty()) {
    check_uid(s.study_instance_uid, "StudyInstanceUID");
    return s.study_instance_uid;
  }
  return derived_uid(s.series_instance_uid, "1");
}

// ---- text values -----------------------------------------------------------------------------------------------

// A decimal string (DS) of at most 16 characters with as many digits as fit.
std::string ds(double v) {
  if (!std::isfinite(v)) throw std::invalid_argument(fmt::format("{} cannot be written as a DICOM number", v));
  if (v == 0.0) return "0";
  for (int digits = 16; digits > 0; --digits) {
    std::string s = fmt::format("{:.{}g}", v, digits);
    if (s.size() <= 16) return s;
  }
  throw std::invalid_argument(fmt::format("{} does not fit a DICOM decimal string", v));
}

std::string ds_list(std::initializer_list<double> values) {
  std::string out;
  for (const double v : values) out += (out.empty() ? "" : "\\") + ds(v);
  return out;
}

// TM "HHMMSS.FFFFFF" of a time of day in seconds (wrapped to a day).
std::string tm(double seconds) {
  const auto micro = static_cast<int64_t>(std::llround(seconds * 1e6)) % (int64_t{86400} * 1000000);
  const int64_t s = micro / 1000000;
  return fmt::format("{:02}{:02}{:02}.{:06}", s / 3600, (s / 60) % 60, s % 60, micro % 1000000);
}

// ---- geometry --------------------------------------------------------------------------------------------------

// The DICOM geometry of a NIfTI grid as dcm2niix reads it back (core/dicom/dicom_affine.cpp inverted): LPS vectors,
// the centre of DICOM pixel (row 0, column 0) of slice 0, and the step from one slice to the next.
struct Geometry {
  Eigen::Vector3d row_dir, column_dir, normal;  // ImageOrientationPatient and r x c (unit, LPS)
  double column_spacing = 0, row_spacing = 0;   // along a row (x), along a column (y)
  double slice_spacing = 0;
  Eigen::Vector3d slice_step, top_left;  // LPS mm
};

Geometry geometry_of(const ImageHeader& h) {
  const Eigen::Matrix4d& a = h.affine;
  const auto lps = [&](int c) { return Eigen::Vector3d(-a(0, c), -a(1, c), a(2, c)); };
  Geometry g;
  g.column_spacing = lps(0).norm();
  g.row_spacing = lps(1).norm();
  g.slice_spacing = lps(2).norm();
  if (!(g.column_spacing > 0) || !(g.row_spacing > 0) || !(g.slice_spacing > 0)) {
    throw std::invalid_argument("the image's affine has a zero column: no DICOM geometry");
  }
  g.row_dir = lps(0) / g.column_spacing;
  g.column_dir = -lps(1) / g.row_spacing;  // NIfTI j runs against the DICOM rows (rows bottom-up)
  if (std::abs(g.row_dir.dot(g.column_dir)) > 1e-6) {
    throw std::invalid_argument("the affine's first two axes are not perpendicular: DICOM cannot store a sheared grid");
  }
  g.normal = g.row_dir.cross(g.column_dir).normalized();
  g.slice_step = lps(2);
  if (std::abs(std::abs(g.slice_step.dot(g.normal)) / g.slice_spacing - 1.0) > 1e-6) {
    throw std::invalid_argument(
        "the affine's slice axis is not perpendicular to its rows and columns: DICOM cannot store a sheared grid");
  }
  g.top_left = lps(3) + lps(1) * static_cast<double>(h.dims[1] - 1);
  return g;
}

std::string orientation_text(const Geometry& g) {
  return ds_list({g.row_dir(0), g.row_dir(1), g.row_dir(2), g.column_dir(0), g.column_dir(1), g.column_dir(2)});
}

std::string position_text(const Eigen::Vector3d& p) {
  return ds_list({p(0), p(1), p(2)});
}

// ---- pixels ----------------------------------------------------------------------------------------------------

enum class Vendor { kSiemens, kGe };

struct Pixels {
  bool is_signed = false;
  std::vector<uint16_t> bits;  // the stored 16-bit words (two's complement when signed), volume order
};

Pixels exact_pixels(const Image& volume, Vendor vendor, int64_t index) {
  const std::vector<float>& v = volume.data();
  double low = 0, high = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const double x = v[i];
    if (!std::isfinite(x) || x != std::nearbyint(x) || x < -32768.0 || x > 65535.0) {
      const auto nx = static_cast<size_t>(volume.nx()), ny = static_cast<size_t>(volume.ny());
      throw std::invalid_argument(fmt::format(
          "volume {}: voxel ({}, {}, {}) = {} is not an integer in the int16/uint16 range; the DICOM writer stores "
          "exact integers only (round or rescale the image first)",
          index, i % nx, (i / nx) % ny, i / (nx * ny), x));
    }
    low = i == 0 ? x : std::min(low, x);
    high = i == 0 ? x : std::max(high, x);
  }
  const bool fits_unsigned = low >= 0.0, fits_signed = high <= 32767.0;
  if (!fits_unsigned && !fits_signed) {
    throw std::invalid_argument(fmt::format(
        "volume {}: values from {} to {} fit neither int16 nor uint16 (the DICOM writer stores exact integers)", index,
        low, high));
  }
  Pixels p;
  p.is_signed = vendor == Vendor::kGe ? fits_signed : !fits_unsigned;
  p.bits.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    p.bits[i] = p.is_signed ? static_cast<uint16_t>(static_cast<int16_t>(v[i])) : static_cast<uint16_t>(v[i]);
  }
  return p;
}

// ---- data set --------------------------------------------------------------------------------------------------

class DataSetBuilder {
 public:
  explicit DataSetBuilder(gdcm::DataSet& ds) : ds_(ds) {}
  void text(uint16_t group, uint16_t element, gdcm::VR vr, std::string value) {
    if (value.size() % 2 != 0) value.push_back(vr == gdcm::VR::UI ? '\0' : ' ');
    bytes(group, element, vr, value);
  }
  void us(uint16_t group, uint16_t element, uint16_t value) {
    bytes(group, element, gdcm::VR::US, std::string(reinterpret_cast<const char*>(&value), sizeof value));
  }
  void fd(uint16_t group, uint16_t element, const std::vector<double>& values) {
    bytes(group, element, gdcm::VR::FD,
          std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(double)));
  }
  void bytes(uint16_t group, uint16_t element, gdcm::VR vr, const std::string& value) {
    gdcm::DataElement de(gdcm::Tag(group, element));
    de.SetVR(vr);
    de.SetByteValue(value.data(), static_cast<uint32_t>(value.size()));
    ds_.Replace(de);
  }

 private:
  gdcm::DataSet& ds_;
};

// What a mosaic and a GE slice share: identity, timing, the plane's size and spacing, the pixel format.
void common_elements(DataSetBuilder& b, const DicomWriteSeries& s, const Geometry& g, const Pixels& pixels,
                     const std::string& sop_instance_uid, double acquisition_s, int rows, int columns) {
  b.text(0x0008, 0x0005, gdcm::VR::CS, "ISO_IR 100");
  b.text(0x0008, 0x0016, gdcm::VR::UI, kMrImageStorage);
  b.text(0x0008, 0x0018, gdcm::VR::UI, sop_instance_uid);
  b.text(0x0008, 0x0020, gdcm::VR::DA, "20000101");
  b.text(0x0008, 0x0030, gdcm::VR::TM, tm(kSeriesStartSeconds));
  b.text(0x0008, 0x0031, gdcm::VR::TM, tm(kSeriesStartSeconds));
  b.text(0x0008, 0x0032, gdcm::VR::TM, tm(acquisition_s));
  b.text(0x0008, 0x0060, gdcm::VR::CS, "MR");
  b.text(0x0010, 0x0010, gdcm::VR::PN, s.patient_name);
  b.text(0x0010, 0x0020, gdcm::VR::LO, s.patient_id);
  b.text(0x0018, 0x0020, gdcm::VR::CS, "EP");
  b.text(0x0018, 0x0023, gdcm::VR::CS, "2D");
  b.text(0x0018, 0x0050, gdcm::VR::DS, ds(g.slice_spacing));
  b.text(0x0018, 0x0080, gdcm::VR::DS, ds(s.tr_s * 1000.0));
  b.text(0x0018, 0x0088, gdcm::VR::DS, ds(g.slice_spacing));
  b.text(0x0020, 0x000D, gdcm::VR::UI, study_uid(s));
  b.text(0x0020, 0x000E, gdcm::VR::UI, s.series_instance_uid);
  b.text(0x0020, 0x0011, gdcm::VR::IS, std::to_string(s.series_number));
  b.text(0x0020, 0x0037, gdcm::VR::DS, orientation_text(g));
  b.text(0x0020, 0x0052, gdcm::VR::UI, derived_uid(s.series_instance_uid, "3"));
  b.us(0x0028, 0x0002, 1);
  b.text(0x0028, 0x0004, gdcm::VR::CS, "MONOCHROME2");
  b.us(0x0028, 0x0010, static_cast<uint16_t>(rows));
  b.us(0x0028, 0x0011, static_cast<uint16_t>(columns));
  b.text(0x0028, 0x0030, gdcm::VR::DS, ds_list({g.row_spacing, g.column_spacing}));
  b.us(0x0028, 0x0100, 16);
  b.us(0x0028, 0x0101, 16);
  b.us(0x0028, 0x0102, 15);
  b.us(0x0028, 0x0103, pixels.is_signed ? 1 : 0);
}

void pixel_data(DataSetBuilder& b, const std::vector<uint16_t>& words) {
  b.bytes(0x7FE0, 0x0010, gdcm::VR::OW,
          std::string(reinterpret_cast<const char*>(words.data()), words.size() * sizeof(uint16_t)));
}

void write_file(gdcm::Writer& writer, const std::filesystem::path& file) {
  writer.GetFile().GetHeader().SetDataSetTransferSyntax(gdcm::TransferSyntax::ExplicitVRLittleEndian);
  writer.SetFileName(file.c_str());
  if (!writer.Write()) throw std::runtime_error(fmt::format("{}: cannot write the DICOM file", file.string()));
}

void check_volume(const Image& volume, const DicomWriteSeries& series, int64_t index) {
  if (volume.nt() != 1)
    throw std::invalid_argument(fmt::format("a DICOM volume must be 3D, not {} volumes", volume.nt()));
  if (volume.nx() < 1 || volume.ny() < 1 || volume.nz() < 1 || volume.nx() > 65535 || volume.ny() > 65535) {
    throw std::invalid_argument(
        fmt::format("a {} x {} x {} volume does not fit DICOM", volume.nx(), volume.ny(), volume.nz()));
  }
  if (index < 0) throw std::invalid_argument(fmt::format("volume index {} is negative", index));
  check_uid(series.series_instance_uid, "SeriesInstanceUID");
  if (!series.slice_timing_s.empty() && static_cast<int64_t>(series.slice_timing_s.size()) != volume.nz()) {
    throw std::invalid_argument(fmt::format("{} slice times for {} slices", series.slice_timing_s.size(), volume.nz()));
  }
  if (!(series.tr_s > 0)) throw std::invalid_argument(fmt::format("TR {} s is not positive", series.tr_s));
}

// ---- CSA -------------------------------------------------------------------------------------------------------

void put_int32(std::string& out, int32_t v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// One CSA2 element: name[64], VM, VR[4], SyngoDT, item count, 77; then per item four int32 (length, length, 77,
// length) and the text with its NUL, padded to 4 bytes. Siemens lists items in multiples of 6 (GDCM's reader insists),
// the unused ones empty (0, 0, 205, 0).
void csa_element(std::string& out, const std::string& name, int vm, const char* vr, int syngo_dt,
                 const std::vector<std::string>& values) {
  std::string name_field(64, '\0');
  std::memcpy(name_field.data(), name.data(), std::min<size_t>(name.size(), 63));
  out += name_field;
  put_int32(out, vm);
  std::string vr_field(4, '\0');
  std::memcpy(vr_field.data(), vr, std::strlen(vr));
  out += vr_field;
  put_int32(out, syngo_dt);
  const int items = (static_cast<int>(values.size()) + 5) / 6 * 6;
  put_int32(out, items);
  put_int32(out, items > 0 ? 77 : 205);
  for (int i = 0; i < items; ++i) {
    if (i < static_cast<int>(values.size())) {
      std::string data = values[static_cast<size_t>(i)];
      data.push_back('\0');
      const auto length = static_cast<int32_t>(data.size());
      for (const int32_t v : {length, length, 77, length}) put_int32(out, v);
      data.resize((data.size() + 3) / 4 * 4, '\0');
      out += data;
    } else {
      for (const int32_t v : {0, 0, 205, 0}) put_int32(out, v);
    }
  }
}

std::vector<std::string> fixed8(const std::vector<double>& values) {
  std::vector<std::string> out;
  for (const double v : values) out.push_back(fmt::format("{:.8f}", v));
  return out;
}

}  // namespace

std::string siemens_csa_image_header(int mosaic_slices, const std::array<double, 3>& slice_normal,
                                     const std::vector<double>& mosaic_ref_acq_times_ms) {
  std::string out = "SV10";
  out += std::string("\4\3\2\1", 4);
  const int elements = mosaic_ref_acq_times_ms.empty() ? 2 : 3;
  put_int32(out, elements);
  put_int32(out, 77);
  csa_element(out, "NumberOfImagesInMosaic", 1, "US", 10, {std::to_string(mosaic_slices)});
  csa_element(out, "SliceNormalVector", 3, "FD", 4, fixed8({slice_normal[0], slice_normal[1], slice_normal[2]}));
  if (!mosaic_ref_acq_times_ms.empty())
    csa_element(out, "MosaicRefAcqTimes", 0, "FD", 4, fixed8(mosaic_ref_acq_times_ms));
  put_int32(out, 0);  // Siemens ends the header with four zero bytes
  return out;
}

void write_mosaic_volume(const Image& volume3d, const DicomWriteSeries& series, int64_t index,
                         const std::filesystem::path& file) {
  check_volume(volume3d, series, index);
  const Geometry g = geometry_of(volume3d.header());
  const Pixels pixels = exact_pixels(volume3d, Vendor::kSiemens, index);
  const int nx = static_cast<int>(volume3d.nx()), ny = static_cast<int>(volume3d.ny()),
            nz = static_cast<int>(volume3d.nz());
  const int side = mosaic_tiles_per_side(nz);
  if (static_cast<int64_t>(side) * std::max(nx, ny) > 65535) {
    throw std::invalid_argument(
        fmt::format("a mosaic of {} x {} tiles of {} x {} does not fit DICOM", side, side, nx, ny));
  }
  const MosaicShape shape{side * ny, side * nx, nz};
  const std::vector<uint16_t> mosaic = pack_mosaic<uint16_t>(pixels.bits, shape);
  // The mosaic's ImagePositionPatient is its top-left corner: the first tile's less half the untiled extent.
  const Eigen::Vector3d corner = g.top_left - g.row_dir * g.column_spacing * ((shape.columns - nx) / 2.0) -
                                 g.column_dir * g.row_spacing * ((shape.rows - ny) / 2.0);
  const Eigen::Vector3d csa_normal = g.slice_step.dot(g.normal) >= 0 ? g.normal : Eigen::Vector3d(-g.normal);
  std::vector<double> times_ms;
  for (const double t : series.slice_timing_s) times_ms.push_back(t * 1000.0);

  gdcm::Writer writer;
  DataSetBuilder b(writer.GetFile().GetDataSet());
  const std::string instance = std::to_string(index + 1);
  common_elements(b, series, g, pixels, derived_uid(series.series_instance_uid, "2." + instance),
                  kSeriesStartSeconds + static_cast<double>(index) * series.tr_s, shape.rows, shape.columns);
  b.text(0x0008, 0x0008, gdcm::VR::CS, "ORIGINAL\\PRIMARY\\M\\ND\\MOSAIC");
  b.text(0x0008, 0x0070, gdcm::VR::LO, "SIEMENS");
  b.text(0x0019, 0x0010, gdcm::VR::LO, "SIEMENS MR HEADER");
  b.us(0x0019, 0x100A, static_cast<uint16_t>(nz));
  if (!times_ms.empty()) b.fd(0x0019, 0x1029, times_ms);
  b.text(0x0020, 0x0012, gdcm::VR::IS, instance);
  b.text(0x0020, 0x0013, gdcm::VR::IS, instance);
  b.text(0x0020, 0x0032, gdcm::VR::DS, position_text(corner));
  b.text(0x0029, 0x0010, gdcm::VR::LO, "SIEMENS CSA HEADER");
  b.text(0x0029, 0x1008, gdcm::VR::CS, "IMAGE NUM 4");
  b.text(0x0029, 0x1009, gdcm::VR::LO, "20100114");
  b.bytes(0x0029, 0x1010, gdcm::VR::OB,
          siemens_csa_image_header(nz, {csa_normal(0), csa_normal(1), csa_normal(2)}, times_ms));
  pixel_data(b, mosaic);
  write_file(writer, file);
}

namespace {

// Slice k of a checked volume, its geometry and pixels already worked out.
void write_ge_slice(const Image& volume3d, const Geometry& g, const Pixels& pixels, const DicomWriteSeries& series,
                    int64_t index, int64_t k, const std::filesystem::path& file) {
  const auto nx = static_cast<size_t>(volume3d.nx()), ny = static_cast<size_t>(volume3d.ny());
  const int64_t nz = volume3d.nz();
  std::vector<uint16_t> slice(nx * ny);
  for (size_t row = 0; row < ny; ++row) {  // DICOM row r holds NIfTI y = ny - 1 - r
    const uint16_t* src = pixels.bits.data() + (static_cast<size_t>(k) * ny + (ny - 1 - row)) * nx;
    std::copy(src, src + nx, slice.begin() + static_cast<std::ptrdiff_t>(row * nx));
  }
  const double slice_time = series.slice_timing_s.empty() ? 0.0 : series.slice_timing_s[static_cast<size_t>(k)];
  const Eigen::Vector3d position = g.top_left + g.slice_step * static_cast<double>(k);
  const std::string instance = std::to_string(index * nz + k + 1);

  gdcm::Writer writer;
  DataSetBuilder b(writer.GetFile().GetDataSet());
  common_elements(b, series, g, pixels, derived_uid(series.series_instance_uid, "2." + instance),
                  kSeriesStartSeconds + static_cast<double>(index) * series.tr_s + slice_time, static_cast<int>(ny),
                  static_cast<int>(nx));
  b.text(0x0008, 0x0008, gdcm::VR::CS, "ORIGINAL\\PRIMARY\\EPI\\NONE");
  b.text(0x0008, 0x0070, gdcm::VR::LO, "GE MEDICAL SYSTEMS");
  if (!series.slice_timing_s.empty()) b.text(0x0018, 0x1060, gdcm::VR::DS, ds(slice_time * 1000.0));
  b.text(0x0020, 0x0012, gdcm::VR::IS, "1");
  b.text(0x0020, 0x0013, gdcm::VR::IS, instance);
  b.text(0x0020, 0x0032, gdcm::VR::DS, position_text(position));
  b.text(0x0020, 0x0100, gdcm::VR::IS, std::to_string(index + 1));
  if (!series.slice_timing_s.empty()) {  // GE's RTIA timer: seconds from the series' start to this slice
    b.text(0x0021, 0x0010, gdcm::VR::LO, "GEMS_RELA_01");
    b.text(0x0021, 0x105E, gdcm::VR::DS, ds(static_cast<double>(index) * series.tr_s + slice_time));
  }
  b.text(0x0020, 0x1002, gdcm::VR::IS, std::to_string(nz));
  b.text(0x0020, 0x1041, gdcm::VR::DS, ds(position.dot(g.normal)));
  pixel_data(b, slice);
  write_file(writer, file);
}

}  // namespace

void write_slice_files(const Image& volume3d, const DicomWriteSeries& series, int64_t index,
                       const std::vector<std::filesystem::path>& files) {
  check_volume(volume3d, series, index);
  if (static_cast<int64_t>(files.size()) != volume3d.nz()) {
    throw std::invalid_argument(fmt::format("{} file names for {} slices", files.size(), volume3d.nz()));
  }
  const Geometry g = geometry_of(volume3d.header());
  const Pixels pixels = exact_pixels(volume3d, Vendor::kGe, index);
  for (int64_t k = 0; k < volume3d.nz(); ++k) {
    write_ge_slice(volume3d, g, pixels, series, index, k, files[static_cast<size_t>(k)]);
  }
}

void write_slice_file(const Image& volume3d, const DicomWriteSeries& series, int64_t index, int64_t slice,
                      const std::filesystem::path& file) {
  check_volume(volume3d, series, index);
  if (slice < 0 || slice >= volume3d.nz()) {
    throw std::invalid_argument(fmt::format("slice {} of a volume of {} slices", slice, volume3d.nz()));
  }
  write_ge_slice(volume3d, geometry_of(volume3d.header()), exact_pixels(volume3d, Vendor::kGe, index), series, index,
                 slice, file);
}

}  // namespace rtf::dicom
