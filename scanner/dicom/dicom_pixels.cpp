// GDCM's ImageReader decodes; the buffer's scalar type is converted to float and rescaled.
#include "scanner/dicom/dicom_pixels.hpp"

#include <fmt/format.h>
#include <gdcmImageReader.h>

#include <cstdint>
#include <cstring>

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

}  // namespace

DicomPixels read_dicom_pixels(const std::filesystem::path& path, PixelValues values) {
  require_whole_dicom_file(path);
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
  std::vector<char> buffer(image.GetBufferLength());
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
