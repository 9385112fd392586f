// A DICOM image's pixels decoded by GDCM (every transfer syntax it decodes: uncompressed, JPEG, JPEG-LS, JPEG 2000,
// RLE), as float in stored order (row-major, the first transmitted row first; frames one after another) and rescaled by
// RescaleSlope/RescaleIntercept where present. Colour images and undecodable files are DicomErrors naming the file.
#pragma once

#include <filesystem>
#include <vector>

namespace rtf::dicom {

struct DicomPixels {
  int rows = 0, columns = 0, frames = 0;
  std::vector<float> values;  // [frame][row][column]
};

DicomPixels read_dicom_pixels(const std::filesystem::path& path);

}  // namespace rtf::dicom
