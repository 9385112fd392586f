// Geometry from the affine (dcm2niix's convention inverted), the voxels checked and packed as 16-bit integers, the data
// set built element by element with GDCM and written by gdcm::Writer.
#include "scanner/dicom/enhanced_writer.hpp"

#include <fmt/format.h>
#include <gdcmDataSet.h>
#include <gdcmItem.h>
#include <gdcmSequenceOfItems.h>
#include <gdcmWriter.h>

#include <Eigen/Dense>
#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include "scanner/dicom/dicom_header.hpp"

namespace rtf::dicom {

namespace {

static_assert(std::endian::native == std::endian::little, "the writer packs little-endian values by memcpy");

namespace fs = std::filesystem;

// ---- Values -------------------------------------------------------------------------------------------------------

// A DS value: the most precise decimal that fits DICOM's 16 characters.
std::string decimal(double v) {
  if (std::abs(v) < 1e-12) return "0";
  for (int precision = 15; precision > 1; --precision) {
    std::string s = fmt::format("{:.{}g}", v, precision);
    if (s.size() <= 16) return s;
  }
  return fmt::format("{:.1e}", v);
}

std::string decimals(const std::vector<double>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) out += (i ? "\\" : "") + decimal(values[i]);
  return out;
}

void put_text(gdcm::DataSet& ds, uint16_t group, uint16_t element, gdcm::VR vr, std::string value) {
  if (value.size() % 2 != 0) value.push_back(vr == gdcm::VR::UI ? '\0' : ' ');
  gdcm::DataElement de(gdcm::Tag(group, element));
  de.SetVR(vr);
  de.SetByteValue(value.data(), static_cast<uint32_t>(value.size()));
  ds.Replace(de);
}

template <typename T>
void put_binary(gdcm::DataSet& ds, uint16_t group, uint16_t element, gdcm::VR vr, const std::vector<T>& values) {
  std::vector<char> bytes(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  gdcm::DataElement de(gdcm::Tag(group, element));
  de.SetVR(vr);
  de.SetByteValue(bytes.data(), static_cast<uint32_t>(bytes.size()));
  ds.Replace(de);
}

void put_us(gdcm::DataSet& ds, uint16_t group, uint16_t element, int value) {
  put_binary<uint16_t>(ds, group, element, gdcm::VR::US, {static_cast<uint16_t>(value)});
}

void put_ul(gdcm::DataSet& ds, uint16_t group, uint16_t element, const std::vector<uint32_t>& values) {
  put_binary<uint32_t>(ds, group, element, gdcm::VR::UL, values);
}

// An AT value: the group, then the element.
void put_tag(gdcm::DataSet& ds, uint16_t group, uint16_t element, const gdcm::Tag& value) {
  put_binary<uint16_t>(ds, group, element, gdcm::VR::AT, {value.GetGroup(), value.GetElement()});
}

void put_sequence(gdcm::DataSet& ds, uint16_t group, uint16_t element, const std::vector<gdcm::DataSet>& items) {
  gdcm::SmartPointer<gdcm::SequenceOfItems> sq = new gdcm::SequenceOfItems();
  sq->SetLengthToUndefined();
  for (const gdcm::DataSet& nested : items) {
    gdcm::Item item;
    item.SetVLToUndefined();
    item.SetNestedDataSet(nested);
    sq->AddItem(item);
  }
  gdcm::DataElement de(gdcm::Tag(group, element));
  de.SetVR(gdcm::VR::SQ);
  de.SetValue(*sq);
  de.SetVLToUndefined();
  ds.Replace(de);
}

// ---- UIDs ---------------------------------------------------------------------------------------------------------

bool valid_uid(const std::string& uid) {
  if (uid.empty() || uid.size() > 64 || uid.front() == '.' || uid.back() == '.') return false;
  for (size_t i = 0; i < uid.size(); ++i) {
    const char c = uid[i];
    if (c == '.') {
      if (uid[i - 1] == '.') return false;
    } else if (c < '0' || c > '9') {
      return false;
    } else if (c == '0' && (i == 0 || uid[i - 1] == '.') && i + 1 < uid.size() && uid[i + 1] != '.') {
      return false;  // a component with a leading zero
    }
  }
  return true;
}

// `base`.`suffix` where that fits 64 characters, else a 2.25 UID from a hash of both (deterministic either way).
std::string derived_uid(const std::string& base, const std::string& suffix) {
  std::string uid = base + "." + suffix;
  if (uid.size() <= 64) return uid;
  uint64_t hash = 14695981039346656037ull;  // FNV-1a
  for (const char c : uid) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return "2.25." + std::to_string(hash);
}

// ---- Time ---------------------------------------------------------------------------------------------------------

constexpr int64_t kSeriesStartMicroseconds = (8LL * 3600) * 1000000;  // 08:00:00 on 2000-01-01

std::string datetime(int64_t microseconds) {  // microseconds from 2000-01-01 00:00
  const int64_t day = microseconds / 86400000000LL, in_day = microseconds % 86400000000LL;
  const int64_t seconds = in_day / 1000000;
  const std::chrono::year_month_day date{std::chrono::sys_days{std::chrono::year{2000} / 1 / 1} +
                                         std::chrono::days{day}};
  return fmt::format("{:04d}{:02d}{:02d}{:02d}{:02d}{:02d}.{:06d}", static_cast<int>(date.year()),
                     static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()), seconds / 3600,
                     seconds / 60 % 60, seconds % 60, in_day % 1000000);
}

// ---- Geometry -----------------------------------------------------------------------------------------------------

struct Geometry {
  std::array<double, 6> orientation{};
  double row_spacing = 0, column_spacing = 0, slice_spacing = 0;
  std::vector<std::array<double, 3>> positions;  // per slice k, LPS
};

Geometry geometry_of(const ImageHeader& h, const fs::path& file) {
  Eigen::Matrix4d lps = h.affine;  // RAS -> LPS
  lps.row(0) *= -1.0;
  lps.row(1) *= -1.0;
  const Eigen::Vector3d col0 = lps.block<3, 1>(0, 0), col1 = lps.block<3, 1>(0, 1), col2 = lps.block<3, 1>(0, 2);
  Geometry g;
  g.column_spacing = col0.norm();
  g.row_spacing = col1.norm();
  g.slice_spacing = col2.norm();
  if (!(g.column_spacing > 0 && g.row_spacing > 0 && g.slice_spacing > 0) || !lps.allFinite()) {
    throw DicomError(file, "the volume's affine has a zero or non-finite column");
  }
  const Eigen::Vector3d r = col0 / g.column_spacing, c = -col1 / g.row_spacing;  // NIfTI rows run bottom-up
  if (std::abs(r.dot(c)) > 1e-4) {
    throw DicomError(file, fmt::format("the affine's first two axes are not orthogonal (cosine {:.2g}): a DICOM plane "
                                       "has square corners",
                                       r.dot(c)));
  }
  if (std::abs(std::abs(r.cross(c).normalized().dot(col2 / g.slice_spacing)) - 1.0) > 1e-6) {
    throw DicomError(file, "the affine's third axis is not along the slice normal (a sheared stack DICOM cannot hold)");
  }
  g.orientation = {r(0), r(1), r(2), c(0), c(1), c(2)};
  const double last_row = static_cast<double>(h.dims[1] - 1);
  for (int64_t k = 0; k < h.dims[2]; ++k) {
    const Eigen::Vector4d p = lps * Eigen::Vector4d(0.0, last_row, static_cast<double>(k), 1.0);
    g.positions.push_back({p(0), p(1), p(2)});
  }
  return g;
}

// ---- Voxels -------------------------------------------------------------------------------------------------------

// The frames' pixel data: frame k is NIfTI slice k, its DICOM row r NIfTI row ny - 1 - r; int16 or uint16.
std::vector<char> pixel_bytes(const Image& v, bool is_signed) {
  const int64_t nx = v.nx(), ny = v.ny(), nz = v.nz();
  std::vector<char> out(static_cast<size_t>(v.header().total_voxels()) * 2);
  size_t at = 0;
  for (int64_t t = 0; t < v.nt(); ++t) {
    for (int64_t z = 0; z < nz; ++z) {
      for (int64_t r = 0; r < ny; ++r) {
        for (int64_t x = 0; x < nx; ++x, at += 2) {
          const float value = v.at(x, ny - 1 - r, z, t);
          if (is_signed) {
            const auto s = static_cast<int16_t>(value);
            std::memcpy(out.data() + at, &s, 2);
          } else {
            const auto u = static_cast<uint16_t>(value);
            std::memcpy(out.data() + at, &u, 2);
          }
        }
      }
    }
  }
  return out;
}

// Whether the voxels are stored signed; throws where they are not all integers in int16's or uint16's range.
bool signed_storage(const Image& v, const fs::path& file) {
  float low = 0, high = 0;
  for (size_t i = 0; i < v.data().size(); ++i) {
    const float value = v.data()[i];
    if (!std::isfinite(value) || value != std::nearbyint(value)) {
      throw DicomError(file,
                       fmt::format("voxel {} is {}: enhanced MR is written as 16-bit integers, exactly", i, value));
    }
    low = i == 0 ? value : std::min(low, value);
    high = i == 0 ? value : std::max(high, value);
  }
  const bool fits_unsigned = low >= 0 && high <= 65535, fits_signed = low >= -32768 && high <= 32767;
  if (!fits_unsigned && !fits_signed) {
    throw DicomError(file, fmt::format("voxels span {} .. {}, beyond int16 and uint16", low, high));
  }
  return !fits_unsigned || (fits_signed && v.header().source_type == DataType::kInt16);
}

// ---- The data set -------------------------------------------------------------------------------------------------

gdcm::DataSet frame_item(const Geometry& g, size_t k, int64_t index, const std::string& acquired) {
  gdcm::DataSet content, position, item;
  const auto slice = static_cast<uint32_t>(k + 1), temporal = static_cast<uint32_t>(index + 1);
  put_text(content, 0x0018, 0x9074, gdcm::VR::DT, acquired);  // FrameAcquisitionDateTime
  put_text(content, 0x0018, 0x9151, gdcm::VR::DT, acquired);  // FrameReferenceDateTime
  put_text(content, 0x0020, 0x9056, gdcm::VR::SH, "1");       // StackID
  put_ul(content, 0x0020, 0x9057, {slice});                   // InStackPositionNumber
  put_ul(content, 0x0020, 0x9128, {temporal});                // TemporalPositionIndex
  put_ul(content, 0x0020, 0x9157, {1, slice, temporal});      // DimensionIndexValues
  put_text(position, 0x0020, 0x0032, gdcm::VR::DS, decimals({g.positions[k][0], g.positions[k][1], g.positions[k][2]}));
  put_sequence(item, 0x0020, 0x9111, {content});   // FrameContentSequence
  put_sequence(item, 0x0020, 0x9113, {position});  // PlanePositionSequence
  return item;
}

gdcm::DataSet shared_item(const Geometry& g, double tr_s) {
  gdcm::DataSet measures, orientation, timing, transform, item;
  put_text(measures, 0x0028, 0x0030, gdcm::VR::DS, decimals({g.row_spacing, g.column_spacing}));  // PixelSpacing
  put_text(measures, 0x0018, 0x0050, gdcm::VR::DS, decimal(g.slice_spacing));                     // SliceThickness
  put_text(measures, 0x0018, 0x0088, gdcm::VR::DS, decimal(g.slice_spacing));  // SpacingBetweenSlices
  put_text(orientation, 0x0020, 0x0037, gdcm::VR::DS,
           decimals({g.orientation.begin(), g.orientation.end()}));        // ImageOrientationPatient
  put_text(timing, 0x0018, 0x0080, gdcm::VR::DS, decimal(tr_s * 1000.0));  // RepetitionTime, ms
  put_text(transform, 0x0028, 0x1052, gdcm::VR::DS, "0");                  // RescaleIntercept
  put_text(transform, 0x0028, 0x1053, gdcm::VR::DS, "1");                  // RescaleSlope
  put_text(transform, 0x0028, 0x1054, gdcm::VR::LO, "US");                 // RescaleType
  put_sequence(item, 0x0028, 0x9110, {measures});                          // PixelMeasuresSequence
  put_sequence(item, 0x0020, 0x9116, {orientation});                       // PlaneOrientationSequence
  put_sequence(item, 0x0018, 0x9112, {timing});                            // MRTimingAndRelatedParametersSequence
  put_sequence(item, 0x0028, 0x9145, {transform});                         // PixelValueTransformationSequence
  return item;
}

// DimensionIndexSequence: StackID, InStackPositionNumber, TemporalPositionIndex, all in FrameContentSequence.
void put_dimensions(gdcm::DataSet& ds, const std::string& organization_uid) {
  gdcm::DataSet organization;
  put_text(organization, 0x0020, 0x9164, gdcm::VR::UI, organization_uid);
  put_sequence(ds, 0x0020, 0x9221, {organization});
  std::vector<gdcm::DataSet> indices;
  for (const uint16_t element : {uint16_t{0x9056}, uint16_t{0x9057}, uint16_t{0x9128}}) {
    gdcm::DataSet index;
    put_text(index, 0x0020, 0x9164, gdcm::VR::UI, organization_uid);
    put_tag(index, 0x0020, 0x9165, gdcm::Tag(0x0020, element));  // DimensionIndexPointer
    put_tag(index, 0x0020, 0x9167, gdcm::Tag(0x0020, 0x9111));   // FunctionalGroupPointer
    indices.push_back(index);
  }
  put_sequence(ds, 0x0020, 0x9222, indices);
}

}  // namespace

void write_enhanced_volumes(const Image& volumes, const DicomWriteSeries& series, int64_t first_index,
                            const fs::path& file) {
  const ImageHeader& h = volumes.header();
  const int64_t index = first_index;
  if (volumes.nt() < 1) throw DicomError(file, "no volumes to write");
  if (h.dims[0] > 65535 || h.dims[1] > 65535 || h.dims[2] > 9999999) {
    throw DicomError(file,
                     fmt::format("{} x {} x {} does not fit DICOM's Rows/Columns", h.dims[0], h.dims[1], h.dims[2]));
  }
  if (index < 0) throw DicomError(file, fmt::format("volume index {}", index));
  if (!valid_uid(series.series_instance_uid)) {
    throw DicomError(file, fmt::format("series_instance_uid '{}' is not a DICOM UID", series.series_instance_uid));
  }
  if (!series.study_instance_uid.empty() && !valid_uid(series.study_instance_uid)) {
    throw DicomError(file, fmt::format("study_instance_uid '{}' is not a DICOM UID", series.study_instance_uid));
  }
  if (!series.slice_timing_s.empty() && series.slice_timing_s.size() != static_cast<size_t>(h.dims[2])) {
    throw DicomError(file, fmt::format("{} slice times for {} slices", series.slice_timing_s.size(), h.dims[2]));
  }
  if (!(series.tr_s > 0)) throw DicomError(file, fmt::format("TR {} s", series.tr_s));
  const Geometry g = geometry_of(h, file);
  const bool is_signed = signed_storage(volumes, file);
  const std::string& series_uid = series.series_instance_uid;
  const std::string study_uid =
      series.study_instance_uid.empty() ? derived_uid(series_uid, "1") : series.study_instance_uid;
  const auto start_of = [&](int64_t volume) {
    return kSeriesStartMicroseconds + std::llround(static_cast<double>(volume) * series.tr_s * 1e6);
  };
  const std::string start = datetime(start_of(index));

  gdcm::DataSet ds;
  put_text(ds, 0x0008, 0x0008, gdcm::VR::CS, "ORIGINAL\\PRIMARY\\M\\NONE");  // ImageType
  put_text(ds, 0x0008, 0x0016, gdcm::VR::UI, DicomHeader::kEnhancedMrImageStorage);
  put_text(ds, 0x0008, 0x0018, gdcm::VR::UI, derived_uid(series_uid, "2." + std::to_string(index + 1)));
  put_text(ds, 0x0008, 0x0020, gdcm::VR::DA, "20000101");          // StudyDate
  put_text(ds, 0x0008, 0x0021, gdcm::VR::DA, "20000101");          // SeriesDate
  put_text(ds, 0x0008, 0x0023, gdcm::VR::DA, start.substr(0, 8));  // ContentDate
  put_text(ds, 0x0008, 0x002A, gdcm::VR::DT, start);               // AcquisitionDateTime
  put_text(ds, 0x0008, 0x0030, gdcm::VR::TM, "080000");
  put_text(ds, 0x0008, 0x0031, gdcm::VR::TM, "080000");
  put_text(ds, 0x0008, 0x0033, gdcm::VR::TM, start.substr(8));  // ContentTime
  put_text(ds, 0x0008, 0x0050, gdcm::VR::SH, "");
  put_text(ds, 0x0008, 0x0060, gdcm::VR::CS, "MR");
  put_text(ds, 0x0008, 0x0070, gdcm::VR::LO, "SIEMENS");
  put_text(ds, 0x0008, 0x0090, gdcm::VR::PN, "");
  put_text(ds, 0x0008, 0x103E, gdcm::VR::LO, "rtfmri sim");
  put_text(ds, 0x0008, 0x1090, gdcm::VR::LO, "rtfmri");
  put_text(ds, 0x0008, 0x9205, gdcm::VR::CS, "MONOCHROME");  // PixelPresentation
  put_text(ds, 0x0008, 0x9206, gdcm::VR::CS, "VOLUME");      // VolumetricProperties
  put_text(ds, 0x0008, 0x9207, gdcm::VR::CS, "NONE");        // VolumeBasedCalculationTechnique
  put_text(ds, 0x0008, 0x9208, gdcm::VR::CS, "MAGNITUDE");   // ComplexImageComponent
  put_text(ds, 0x0008, 0x9209, gdcm::VR::CS, "UNKNOWN");     // AcquisitionContrast
  put_text(ds, 0x0010, 0x0010, gdcm::VR::PN, series.patient_name);
  put_text(ds, 0x0010, 0x0020, gdcm::VR::LO, series.patient_id);
  put_text(ds, 0x0010, 0x0030, gdcm::VR::DA, "");
  put_text(ds, 0x0010, 0x0040, gdcm::VR::CS, "");
  put_text(ds, 0x0018, 0x0023, gdcm::VR::CS, "2D");  // MRAcquisitionType
  put_text(ds, 0x0020, 0x000D, gdcm::VR::UI, study_uid);
  put_text(ds, 0x0020, 0x000E, gdcm::VR::UI, series_uid);
  put_text(ds, 0x0020, 0x0010, gdcm::VR::SH, "1");  // StudyID
  put_text(ds, 0x0020, 0x0011, gdcm::VR::IS, std::to_string(series.series_number));
  put_text(ds, 0x0020, 0x0012, gdcm::VR::IS, std::to_string(index + 1));     // AcquisitionNumber
  put_text(ds, 0x0020, 0x0013, gdcm::VR::IS, std::to_string(index + 1));     // InstanceNumber
  put_text(ds, 0x0020, 0x0052, gdcm::VR::UI, derived_uid(series_uid, "3"));  // FrameOfReferenceUID
  put_text(ds, 0x0020, 0x1040, gdcm::VR::LO, "");
  put_dimensions(ds, derived_uid(series_uid, "4"));
  put_us(ds, 0x0028, 0x0002, 1);  // SamplesPerPixel
  put_text(ds, 0x0028, 0x0004, gdcm::VR::CS, "MONOCHROME2");
  put_text(ds, 0x0028, 0x0008, gdcm::VR::IS, std::to_string(h.dims[2] * volumes.nt()));  // NumberOfFrames
  put_us(ds, 0x0028, 0x0010, static_cast<int>(h.dims[1]));                               // Rows
  put_us(ds, 0x0028, 0x0011, static_cast<int>(h.dims[0]));                               // Columns
  put_us(ds, 0x0028, 0x0100, 16);                                                        // BitsAllocated
  put_us(ds, 0x0028, 0x0101, 16);                                                        // BitsStored
  put_us(ds, 0x0028, 0x0102, 15);                                                        // HighBit
  put_us(ds, 0x0028, 0x0103, is_signed ? 1 : 0);                                         // PixelRepresentation
  put_text(ds, 0x0028, 0x0301, gdcm::VR::CS, "NO");                                      // BurnedInAnnotation
  put_text(ds, 0x0028, 0x2110, gdcm::VR::CS, "00");                                      // LossyImageCompression
  put_sequence(ds, 0x5200, 0x9229, {shared_item(g, series.tr_s)});
  std::vector<gdcm::DataSet> frames;
  for (int64_t t = 0; t < volumes.nt(); ++t) {
    for (size_t k = 0; k < g.positions.size(); ++k) {
      const double offset_s = series.slice_timing_s.empty() ? 0.0 : series.slice_timing_s[k];
      frames.push_back(frame_item(g, k, index + t, datetime(start_of(index + t) + std::llround(offset_s * 1e6))));
    }
  }
  put_sequence(ds, 0x5200, 0x9230, frames);
  const std::vector<char> pixels = pixel_bytes(volumes, is_signed);
  gdcm::DataElement pixel_data(gdcm::Tag(0x7FE0, 0x0010));
  pixel_data.SetVR(gdcm::VR::OW);
  pixel_data.SetByteValue(pixels.data(), static_cast<uint32_t>(pixels.size()));
  ds.Replace(pixel_data);

  const fs::path temporary = file.parent_path() / ("." + file.filename().string() + ".part");
  gdcm::Writer writer;
  writer.SetFileName(temporary.c_str());
  writer.GetFile().SetDataSet(ds);
  writer.GetFile().GetHeader().SetDataSetTransferSyntax(gdcm::TransferSyntax::ExplicitVRLittleEndian);
  if (!writer.Write()) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw DicomError(file, "cannot write the DICOM file");
  }
  std::error_code error;
  fs::rename(temporary, file, error);
  if (error) throw DicomError(file, "cannot rename the written file into place: " + error.message());
}

void write_enhanced_volume(const Image& volume3d, const DicomWriteSeries& series, int64_t index,
                           const std::filesystem::path& file) {
  if (volume3d.nt() != 1) throw DicomError(file, fmt::format("{} volumes given for one volume", volume3d.nt()));
  write_enhanced_volumes(volume3d, series, index, file);
}

}  // namespace rtf::dicom
