// GDCM's ImageReader decodes; the buffer's scalar type is converted to float and rescaled.
#include "scanner/dicom/dicom_pixels.hpp"

#include <fmt/format.h>
#include <gdcmImageReader.h>
#include <gdcmReader.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>

#include "scanner/dicom/dicom_header.hpp"

namespace rtf::dicom {

namespace {

template <typename T>
void convert(const std::vector<char>& buffer, std::vector<float>& out, double slope, double intercept) {
  const size_t n = buffer.size() / sizeof(T);
  out.resize(n);
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, buffer.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<float>(static_cast<double>(v) * slope + intercept);
  }
}

// GDCM's ImageReader asserts (aborting the process) on SamplesPerPixel > 4 and reads the image pixel module's US
// fields without checking their length: read them first, GDCM's plain Reader stopping before group 0028 ends. Returns
// the bytes of native pixel data that Rows x Columns x NumberOfFrames x BitsAllocated / 8 make (0 where one is absent).
uint64_t require_sane_pixel_module(const std::filesystem::path& path) {
  gdcm::Reader reader;
  reader.SetFileName(path.c_str());
  // GDCM reads the value of the element it stops at: where that is the pixel data, they are skipped over.
  const gdcm::Tag pixel_data(0x7FE0, 0x0010);
  if (!reader.ReadUpToTag(gdcm::Tag(0x0028, 0x0104), std::set<gdcm::Tag>{pixel_data})) {
    throw DicomError(path, "not a readable DICOM image");
  }
  const gdcm::DataSet& data = reader.GetFile().GetDataSet();
  uint64_t rows = 0, columns = 0, bits = 0;
  for (const uint16_t element : {0x0002, 0x0006, 0x0010, 0x0011, 0x0100, 0x0101, 0x0102, 0x0103}) {
    const gdcm::Tag tag(0x0028, element);
    if (!data.FindDataElement(tag) || data.GetDataElement(tag).IsEmpty()) continue;
    const gdcm::ByteValue* value = data.GetDataElement(tag).GetByteValue();
    if (value == nullptr || value->GetLength() != 2) {
      throw DicomError(path, fmt::format("(0028,{:04X}) is not one 2-byte number", element));
    }
    uint16_t number = 0;
    std::memcpy(&number, value->GetPointer(), 2);  // as stored: little endian (the caller skips big-endian files)
    if (element == 0x0010) rows = number;
    if (element == 0x0011) columns = number;
    if (element == 0x0100) bits = number;
    if (element == 0x0002) {
      uint16_t samples = 0;
      std::memcpy(&samples, value->GetPointer(), 2);
      if (samples != 1 && samples != 0x0100) {  // 1 in either byte order
        throw DicomError(path, fmt::format("{} samples per pixel (only monochrome images)", samples));
      }
    }
  }
  uint64_t frames = 1;
  const gdcm::Tag frames_tag(0x0028, 0x0008);
  if (data.FindDataElement(frames_tag) && data.GetDataElement(frames_tag).GetByteValue() != nullptr) {
    const gdcm::ByteValue* text = data.GetDataElement(frames_tag).GetByteValue();
    const std::string digits(text->GetPointer(), std::min<size_t>(text->GetLength(), 12));
    frames = std::max<uint64_t>(1, std::strtoull(digits.c_str(), nullptr, 10));
  }
  return rows * columns * frames * ((bits + 7) / 8);
}

}  // namespace

DicomPixels read_dicom_pixels(const std::filesystem::path& path, PixelValues values) {
  const DicomFileCheck check = require_whole_dicom_file(path);
  const uint64_t native_needed = require_sane_pixel_module(path);
  // GDCM reads the whole pixel data element: native data far longer than the image needs are refused unread (issue
  // 35: what a file costs is what its image needs, whatever the file's size).
  const bool big_endian = check.transfer_syntax == "1.2.840.10008.1.2.2";  // retired; its numbers read swapped here
  if (!big_endian && native_needed > 0 && check.native_pixel_bytes > 2 * native_needed + (uint64_t{1} << 20)) {
    throw DicomError(path,
                     fmt::format("its pixel data hold {} bytes, far more than the {} its Rows, Columns, frames and "
                                 "BitsAllocated need: not read",
                                 check.native_pixel_bytes, native_needed));
  }
  gdcm::ImageReader reader;
  reader.SetFileName(path.c_str());
  if (!reader.Read()) throw DicomError(path, "not a readable DICOM image");
  const gdcm::Image& image = reader.GetImage();
  const gdcm::PixelFormat& format = image.GetPixelFormat();
  if (format.GetSamplesPerPixel() != 1) {
    throw DicomError(path, fmt::format("{} samples per pixel (only monochrome images)", format.GetSamplesPerPixel()));
  }
  const unsigned int* dims = image.GetDimensions();
  DicomPixels out;
  out.columns = static_cast<int>(dims[0]);
  out.rows = static_cast<int>(dims[1]);
  out.frames = image.GetNumberOfDimensions() > 2 ? static_cast<int>(dims[2]) : 1;
  // GDCM copies Rows x Columns x Frames x BitsAllocated / 8 bytes of native pixel data without looking at how many the
  // file holds (a segfault past them), and allocates that much for encapsulated data: check it against the file first
  // (a lossless codec that shrinks a real image 1000-fold does not exist).
  const gdcm::DataElement& pixel_data = image.GetDataElement();
  const gdcm::SequenceOfFragments* fragments = pixel_data.GetSequenceOfFragments();
  const gdcm::ByteValue* native = fragments == nullptr ? pixel_data.GetByteValue() : nullptr;
  size_t stored = 0;
  if (fragments != nullptr) stored = fragments->ComputeByteLength();
  if (native != nullptr) stored = native->GetLength();
  const size_t needed = image.GetBufferLength();
  if (fragments == nullptr ? needed > stored : needed > 1000 * stored + (size_t{1} << 20)) {
    throw DicomError(path, fmt::format("{} x {} x {} pixels of {} bits do not fit the {} bytes of its pixel data",
                                       out.columns, out.rows, out.frames, format.GetBitsAllocated(), stored));
  }
  std::vector<char> buffer(needed);
  if (!image.GetBuffer(buffer.data())) {
    throw DicomError(
        path, fmt::format("cannot decode the pixel data (transfer syntax {})", image.GetTransferSyntax().GetString()));
  }
  const bool rescale = values == PixelValues::kRescaled;
  const double slope = rescale ? image.GetSlope() : 1.0, intercept = rescale ? image.GetIntercept() : 0.0;
  switch (format.GetScalarType()) {
    case gdcm::PixelFormat::UINT8:
      convert<uint8_t>(buffer, out.values, slope, intercept);
      break;
    case gdcm::PixelFormat::INT8:
      convert<int8_t>(buffer, out.values, slope, intercept);
      break;
    case gdcm::PixelFormat::UINT16:
      convert<uint16_t>(buffer, out.values, slope, intercept);
      break;
    case gdcm::PixelFormat::INT16:
      convert<int16_t>(buffer, out.values, slope, intercept);
      break;
    case gdcm::PixelFormat::UINT32:
      convert<uint32_t>(buffer, out.values, slope, intercept);
      break;
    case gdcm::PixelFormat::INT32:
      convert<int32_t>(buffer, out.values, slope, intercept);
      break;
    case gdcm::PixelFormat::FLOAT32:
      convert<float>(buffer, out.values, slope, intercept);
      break;
    case gdcm::PixelFormat::FLOAT64:
      convert<double>(buffer, out.values, slope, intercept);
      break;
    default:
      throw DicomError(path, fmt::format("unsupported pixel type {}", format.GetScalarTypeAsString()));
  }
  const size_t expected =
      static_cast<size_t>(out.rows) * static_cast<size_t>(out.columns) * static_cast<size_t>(out.frames);
  if (out.values.size() != expected) {
    throw DicomError(
        path, fmt::format("{} pixels decoded for {} x {} x {}", out.values.size(), out.rows, out.columns, out.frames));
  }
  return out;
}

}  // namespace rtf::dicom
