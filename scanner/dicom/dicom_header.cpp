// GDCM's reader up to the pixel data, its StringFilter for the standard fields, its CSAHeader for Siemens' private one.
#include "scanner/dicom/dicom_header.hpp"

#include <fmt/format.h>
#include <gdcmCSAHeader.h>
#include <gdcmReader.h>
#include <gdcmStringFilter.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "scanner/dicom/csa_check.hpp"
#include "scanner/dicom/dicom_file_check.hpp"
#include "scanner/dicom/dicom_text.hpp"

namespace rtf::dicom {

DicomError::DicomError(const std::filesystem::path& file, const std::string& problem)
    : std::runtime_error(fmt::format("{}: {}", file.string(), problem)) {}

namespace {

struct Fields {
  const std::filesystem::path& path;
  gdcm::StringFilter filter;
  const gdcm::DataSet& data;

  std::string text(uint16_t group, uint16_t element) {
    const gdcm::Tag tag(group, element);
    if (!data.FindDataElement(tag) || data.GetDataElement(tag).IsEmpty()) return {};
    // StringFilter asserts (aborting the process) on a value that is not plain bytes (an undefined-length UN) or has a
    // binary VR it does not convert (OD, OL, OV, SV, UV).
    const gdcm::DataElement& de = data.GetDataElement(tag);
    const gdcm::VR::VRType vr = de.GetVR();
    const bool converts = vr == gdcm::VR::INVALID || vr == gdcm::VR::UN || gdcm::VR::IsASCII(vr) ||
                          (vr & (gdcm::VR::AT | gdcm::VR::FL | gdcm::VR::FD | gdcm::VR::OF | gdcm::VR::SL |
                                 gdcm::VR::SS | gdcm::VR::UL | gdcm::VR::US | gdcm::VR::OB | gdcm::VR::OW)) != 0;
    if (de.GetByteValue() == nullptr || !converts) {
      throw DicomError(path, fmt::format("({:04X},{:04X}) is not a value of a type it can have (VR {})", group, element,
                                         gdcm::VR::GetVRString(vr)));
    }
    return trimmed(filter.ToString(tag));
  }
  std::vector<double> values(uint16_t group, uint16_t element, size_t count, const char* name) {
    std::vector<double> v = numbers(text(group, element));
    if (v.size() != count) {
      throw DicomError(path,
                       fmt::format("{} ({:04X},{:04X}) has {} of {} values", name, group, element, v.size(), count));
    }
    return v;
  }
  double number(uint16_t group, uint16_t element, double fallback = 0.0) {
    const std::vector<double> v = numbers(text(group, element));
    return v.empty() ? fallback : v[0];
  }
};

// A CSA element's items as numbers (GDCM joins an element's items with backslashes); their text in *text.
std::vector<double> csa_numbers(gdcm::CSAHeader& csa, const char* name, std::string* text = nullptr) {
  if (!csa.FindCSAElementByName(name)) return {};
  const gdcm::ByteValue* bytes = csa.GetCSAElementByName(name).GetByteValue();
  if (bytes == nullptr) return {};
  const std::string value(bytes->GetPointer(), bytes->GetLength());
  if (text != nullptr) *text = trimmed(value);
  return numbers(value);
}

}  // namespace

DicomFileCheck require_whole_dicom_file(const std::filesystem::path& path) {
  DicomFileCheck check = check_dicom_file(path);
  if (check.status == DicomFileCheck::Status::kTruncated) throw DicomIncomplete(path, check.reason);
  if (!check.complete()) throw DicomError(path, check.reason);
  return check;
}

bool read_up_to_pixel_data(gdcm::Reader& reader) {
  const gdcm::Tag pixel_data(0x7FE0, 0x0010);
  return reader.ReadUpToTag(pixel_data, std::set<gdcm::Tag>{pixel_data});
}

DicomHeader read_dicom_header(const std::filesystem::path& path) {
  require_whole_dicom_file(path);
  gdcm::Reader reader;
  reader.SetFileName(path.c_str());
  if (!read_up_to_pixel_data(reader)) {
    const std::string syntax = check_dicom_file(path).transfer_syntax;
    throw DicomError(path, syntax.empty() ? "not a readable DICOM file"
                                          : fmt::format("not a DICOM file GDCM can read (transfer syntax {})", syntax));
  }
  const gdcm::File& file = reader.GetFile();
  Fields f{path, {}, file.GetDataSet()};
  f.filter.SetFile(file);
  DicomHeader h;
  h.transfer_syntax_uid = trimmed(file.GetHeader().GetDataSetTransferSyntax().GetString());
  h.sop_class_uid = f.text(0x0008, 0x0016);
  h.sop_instance_uid = f.text(0x0008, 0x0018);
  h.acquisition_time = f.text(0x0008, 0x0032);
  h.images_in_acquisition = static_cast<int>(f.number(0x0020, 0x1002));
  h.temporal_position = static_cast<int>(f.number(0x0020, 0x0100));
  h.number_of_temporal_positions = static_cast<int>(f.number(0x0020, 0x0105));
  h.number_of_frames = std::max(1, static_cast<int>(f.number(0x0028, 0x0008, 1.0)));
  h.modality = f.text(0x0008, 0x0060);
  h.image_type = f.text(0x0008, 0x0008);
  h.series_instance_uid = f.text(0x0020, 0x000E);
  h.series_number = static_cast<int>(f.number(0x0020, 0x0011));
  h.acquisition_number = static_cast<int>(f.number(0x0020, 0x0012));
  h.instance_number = static_cast<int>(f.number(0x0020, 0x0013));
  h.plane.rows = static_cast<int>(f.number(0x0028, 0x0010));
  h.plane.columns = static_cast<int>(f.number(0x0028, 0x0011));
  if (h.plane.rows < 1 || h.plane.columns < 1) throw DicomError(path, "no Rows/Columns (not an image)");
  h.bits_allocated = static_cast<int>(f.number(0x0028, 0x0100));
  h.pixel_representation = static_cast<int>(f.number(0x0028, 0x0103));
  h.repetition_time_ms = f.number(0x0018, 0x0080);
  if (h.is_enhanced()) return h;
  const std::vector<double> iop = f.values(0x0020, 0x0037, 6, "ImageOrientationPatient");
  const std::vector<double> ipp = f.values(0x0020, 0x0032, 3, "ImagePositionPatient");
  const std::vector<double> spacing = f.values(0x0028, 0x0030, 2, "PixelSpacing");
  std::copy(iop.begin(), iop.end(), h.plane.orientation.begin());
  std::copy(ipp.begin(), ipp.end(), h.plane.position.begin());
  std::copy(spacing.begin(), spacing.end(), h.plane.pixel_spacing.begin());
  h.slice_thickness = f.number(0x0018, 0x0050);
  h.spacing_between_slices = f.number(0x0018, 0x0088);
  if (h.image_type.find("MOSAIC") == std::string::npos) {
    const std::vector<double> rtia = numbers(f.text(0x0021, 0x105E));
    if (rtia.size() == 1) h.ge_rtia_timer_s = rtia[0];
  }
  // A CSA header GDCM would abort on (scanner/dicom/csa_check.hpp) is never handed to it; a mosaic then has no slice
  // count and is refused below.
  const bool mosaic_type = h.image_type.find("MOSAIC") != std::string::npos;
  std::string csa_problem = "no Siemens CSA image header (0029,1010)";
  std::string slices_text;
  gdcm::CSAHeader csa;
  const gdcm::PrivateTag& csa_tag = gdcm::CSAHeader::GetCSAImageHeaderInfoTag();
  if (f.data.FindDataElement(csa_tag)) {
    const gdcm::DataElement& csa_element = f.data.GetDataElement(csa_tag);
    const gdcm::ByteValue* bytes = csa_element.GetByteValue();
    const CsaCheck check =
        bytes == nullptr ? CsaCheck{false, "no bytes"} : check_csa_header({bytes->GetPointer(), bytes->GetLength()});
    if (!check.ok) {
      csa_problem = "a malformed Siemens CSA image header (0029,1010): " + check.problem;
    } else if (csa.LoadFromDataElement(csa_element)) {
      csa_problem = "no NumberOfImagesInMosaic in its CSA image header";
      const std::vector<double> n = csa_numbers(csa, "NumberOfImagesInMosaic", &slices_text);
      if (n.size() == 1 && n[0] >= 1 && n[0] <= 1e8 && n[0] == std::floor(n[0]))
        h.mosaic_slices = static_cast<int>(n[0]);
      if (!slices_text.empty()) csa_problem = fmt::format("CSA NumberOfImagesInMosaic '{}'", slices_text);
      const std::vector<double> normal = csa_numbers(csa, "SliceNormalVector");
      if (normal.size() == 3) h.csa_slice_normal = std::array<double, 3>{normal[0], normal[1], normal[2]};
      h.mosaic_ref_acq_times_ms = csa_numbers(csa, "MosaicRefAcqTimes");
    }
  }
  if (mosaic_type && h.mosaic_slices < 1) {
    throw DicomError(path, fmt::format("a MOSAIC image with {}: its slices cannot be unpacked", csa_problem));
  }
  return h;
}

}  // namespace rtf::dicom
