// GDCM's reader up to the pixel data; each frame's attributes are looked up in its Per-frame functional group item,
// then in the Shared one; GDCM's StringFilter turns string and binary VRs alike into text.
#include "scanner/dicom/enhanced_frames.hpp"

#include <fmt/format.h>
#include <gdcmReader.h>
#include <gdcmSequenceOfItems.h>
#include <gdcmStringFilter.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "scanner/dicom/dicom_text.hpp"

namespace rtf::dicom {

namespace {

const gdcm::Tag kSharedGroups(0x5200, 0x9229), kPerFrameGroups(0x5200, 0x9230);
const gdcm::Tag kPlanePosition(0x0020, 0x9113), kPlaneOrientation(0x0020, 0x9116), kPixelMeasures(0x0028, 0x9110);
const gdcm::Tag kFrameContent(0x0020, 0x9111), kMrTiming(0x0018, 0x9112), kPixelValueTransform(0x0028, 0x9145);

std::string tag_name(const gdcm::Tag& tag) {
  return fmt::format("({:04X},{:04X})", tag.GetGroup(), tag.GetElement());
}

// The functional groups of one file: the Shared item and one Per-frame item per frame. The sequences are held here so
// that the item data sets stay alive whatever GDCM had to convert.
class FunctionalGroups {
 public:
  FunctionalGroups(const std::filesystem::path& path, const gdcm::File& file) : path_(path) {
    filter_.SetFile(file);
    const gdcm::DataSet& top = file.GetDataSet();
    shared_ = first_item(top, kSharedGroups);
    if (!top.FindDataElement(kPerFrameGroups)) {
      throw DicomError(path, "no Per-frame Functional Groups Sequence (5200,9230)");
    }
    const gdcm::SmartPointer<gdcm::SequenceOfItems> per_frame = hold(top.GetDataElement(kPerFrameGroups));
    if (!per_frame) throw DicomError(path, "Per-frame Functional Groups Sequence (5200,9230) is not a sequence");
    for (gdcm::SequenceOfItems::SizeType i = 1; i <= per_frame->GetNumberOfItems(); ++i) {
      per_frame_.push_back(&per_frame->GetItem(i).GetNestedDataSet());
    }
  }

  size_t frames() const { return per_frame_.size(); }

  // The attribute `tag` of macro `macro` for frame f (per-frame first, then shared) as text; empty where absent.
  std::string text(size_t f, const gdcm::Tag& macro, const gdcm::Tag& tag) {
    for (const gdcm::DataSet* group : {per_frame_[f], shared_}) {
      if (group == nullptr) continue;
      const gdcm::DataSet* item = first_item(*group, macro);
      if (item == nullptr || !item->FindDataElement(tag)) continue;
      const gdcm::DataElement& de = item->GetDataElement(tag);
      if (de.IsEmpty()) continue;
      return trimmed(filter_.ToString(de));
    }
    return {};
  }
  std::vector<double> values(size_t f, const gdcm::Tag& macro, const gdcm::Tag& tag) {
    return numbers(text(f, macro, tag));
  }
  double number(size_t f, const gdcm::Tag& macro, const gdcm::Tag& tag, double fallback) {
    const std::vector<double> v = values(f, macro, tag);
    return v.empty() ? fallback : v[0];
  }
  // Geometry that must be there: exactly `count` numbers, else a DicomError naming the frame, macro and attribute.
  std::vector<double> required(size_t f, const gdcm::Tag& macro, const gdcm::Tag& tag, size_t count, const char* name,
                               const char* macro_name) {
    std::vector<double> v = values(f, macro, tag);
    if (v.size() != count) {
      throw DicomError(path_, fmt::format("frame {} of {}: {} {} in {} {} has {} of {} values", f + 1, frames(), name,
                                          tag_name(tag), macro_name, tag_name(macro), v.size(), count));
    }
    return v;
  }

 private:
  gdcm::SmartPointer<gdcm::SequenceOfItems> hold(const gdcm::DataElement& de) {
    gdcm::SmartPointer<gdcm::SequenceOfItems> sq = de.GetValueAsSQ();
    if (sq) held_.push_back(sq);
    return sq;
  }
  const gdcm::DataSet* first_item(const gdcm::DataSet& ds, const gdcm::Tag& tag) {
    if (!ds.FindDataElement(tag)) return nullptr;
    const gdcm::SmartPointer<gdcm::SequenceOfItems> sq = hold(ds.GetDataElement(tag));
    if (!sq || sq->GetNumberOfItems() < 1) return nullptr;
    return &sq->GetItem(1).GetNestedDataSet();
  }

  const std::filesystem::path& path_;
  gdcm::StringFilter filter_;
  std::vector<gdcm::SmartPointer<gdcm::SequenceOfItems>> held_;
  const gdcm::DataSet* shared_ = nullptr;
  std::vector<const gdcm::DataSet*> per_frame_;
};

// A top-level attribute as a number (rescale and TR fallbacks).
double top_number(const gdcm::DataSet& ds, const gdcm::StringFilter& filter, const gdcm::Tag& tag, double fallback) {
  if (!ds.FindDataElement(tag) || ds.GetDataElement(tag).IsEmpty()) return fallback;
  const std::vector<double> v = numbers(filter.ToString(tag));
  return v.empty() ? fallback : v[0];
}

}  // namespace

std::optional<double> dicom_datetime_seconds(const std::string& dt_text) {
  const std::string dt = trimmed(dt_text);
  const size_t digits =
      static_cast<size_t>(std::find_if(dt.begin(), dt.end(), [](char c) { return c < '0' || c > '9'; }) - dt.begin());
  if (digits < 8) return std::nullopt;
  const auto field = [&](size_t at, size_t length) {
    return at + length <= digits ? std::stoi(dt.substr(at, length)) : 0;
  };
  const std::chrono::year_month_day date{std::chrono::year{field(0, 4)},
                                         std::chrono::month{static_cast<unsigned>(field(4, 2))},
                                         std::chrono::day{static_cast<unsigned>(field(6, 2))}};
  if (!date.ok()) return std::nullopt;
  const int hours = field(8, 2), minutes = field(10, 2), seconds = field(12, 2);
  if (hours > 23 || minutes > 59 || seconds > 60) return std::nullopt;
  double fraction = 0;
  if (digits == 14 && dt.size() > 15 && dt[14] == '.') {
    size_t end = 15;
    while (end < dt.size() && dt[end] >= '0' && dt[end] <= '9') ++end;
    if (end > 15) fraction = std::stod("0" + dt.substr(14, end - 14));
  }
  const double days = static_cast<double>(std::chrono::sys_days(date).time_since_epoch().count());
  return days * 86400.0 + hours * 3600.0 + minutes * 60.0 + seconds + fraction;
}

EnhancedFrames read_enhanced_frames(const std::filesystem::path& path) {
  return read_enhanced_frames(path, read_dicom_header(path));
}

EnhancedFrames read_enhanced_frames(const std::filesystem::path& path, const DicomHeader& header) {
  EnhancedFrames out{header, {}};
  if (!out.header.is_enhanced()) {
    throw DicomError(path, fmt::format("SOP class {} is not Enhanced MR Image Storage ({})", out.header.sop_class_uid,
                                       DicomHeader::kEnhancedMrImageStorage));
  }
  gdcm::Reader reader;
  reader.SetFileName(path.c_str());
  if (!read_up_to_pixel_data(reader)) throw DicomError(path, "not a readable DICOM file");
  const gdcm::DataSet& top = reader.GetFile().GetDataSet();
  gdcm::StringFilter filter;
  filter.SetFile(reader.GetFile());
  FunctionalGroups groups(path, reader.GetFile());
  if (groups.frames() != static_cast<size_t>(out.header.number_of_frames)) {
    throw DicomError(path, fmt::format("{} Per-frame Functional Group items for NumberOfFrames (0028,0008) {}",
                                       groups.frames(), out.header.number_of_frames));
  }
  const double top_tr_ms = out.header.repetition_time_ms;
  const double top_slope = top_number(top, filter, gdcm::Tag(0x0028, 0x1053), 1.0);
  const double top_intercept = top_number(top, filter, gdcm::Tag(0x0028, 0x1052), 0.0);
  for (size_t f = 0; f < groups.frames(); ++f) {
    EnhancedFrame frame;
    frame.plane.rows = out.header.plane.rows;
    frame.plane.columns = out.header.plane.columns;
    const std::vector<double> ipp = groups.required(f, kPlanePosition, gdcm::Tag(0x0020, 0x0032), 3,
                                                    "ImagePositionPatient", "PlanePositionSequence");
    const std::vector<double> iop = groups.required(f, kPlaneOrientation, gdcm::Tag(0x0020, 0x0037), 6,
                                                    "ImageOrientationPatient", "PlaneOrientationSequence");
    const std::vector<double> spacing =
        groups.required(f, kPixelMeasures, gdcm::Tag(0x0028, 0x0030), 2, "PixelSpacing", "PixelMeasuresSequence");
    std::copy(ipp.begin(), ipp.end(), frame.plane.position.begin());
    std::copy(iop.begin(), iop.end(), frame.plane.orientation.begin());
    std::copy(spacing.begin(), spacing.end(), frame.plane.pixel_spacing.begin());
    if (!(spacing[0] > 0 && spacing[1] > 0)) {
      throw DicomError(path, fmt::format("frame {}: PixelSpacing {} x {} mm", f + 1, spacing[0], spacing[1]));
    }
    frame.slice_thickness = groups.number(f, kPixelMeasures, gdcm::Tag(0x0018, 0x0050), 0.0);
    frame.spacing_between_slices = groups.number(f, kPixelMeasures, gdcm::Tag(0x0018, 0x0088), 0.0);
    frame.temporal_position = static_cast<int>(groups.number(f, kFrameContent, gdcm::Tag(0x0020, 0x9128), 0.0));
    frame.stack_id = groups.text(f, kFrameContent, gdcm::Tag(0x0020, 0x9056));
    frame.in_stack_position = static_cast<int>(groups.number(f, kFrameContent, gdcm::Tag(0x0020, 0x9057), 0.0));
    for (const double v : groups.values(f, kFrameContent, gdcm::Tag(0x0020, 0x9157))) {
      frame.dimension_index_values.push_back(static_cast<int>(v));
    }
    frame.acquisition_datetime = groups.text(f, kFrameContent, gdcm::Tag(0x0018, 0x9074));
    if (frame.acquisition_datetime.empty()) {
      frame.acquisition_datetime = groups.text(f, kFrameContent, gdcm::Tag(0x0018, 0x9151));
    }
    frame.acquisition_time_s = dicom_datetime_seconds(frame.acquisition_datetime);
    frame.repetition_time_ms = groups.number(f, kMrTiming, gdcm::Tag(0x0018, 0x0080), top_tr_ms);
    frame.rescale_slope = groups.number(f, kPixelValueTransform, gdcm::Tag(0x0028, 0x1053), top_slope);
    frame.rescale_intercept = groups.number(f, kPixelValueTransform, gdcm::Tag(0x0028, 0x1052), top_intercept);
    out.frames.push_back(std::move(frame));
  }
  return out;
}

}  // namespace rtf::dicom
