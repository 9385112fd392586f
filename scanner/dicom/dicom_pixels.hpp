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

enum class PixelValues {
  kRescaled,  // RescaleSlope * stored + RescaleIntercept (the file's top-level rescale)
  kStored,    // as stored (enhanced files rescale per frame: scanner/assemble/enhanced_volume.cpp)
};

// Values as float: exact for stored integers of up to 24 bits (every MR export's 8 and 16).
DicomPixels read_dicom_pixels(const std::filesystem::path& path, PixelValues values = PixelValues::kRescaled);

}  // namespace rtf::dicom
