// Image and ImageHeader: construction checks and small geometry helpers.
#include "core/image/image.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace rtf {

std::string to_string(DataType type) {
  switch (type) {
    case DataType::kUint8:
      return "uint8";
    case DataType::kInt16:
      return "int16";
    case DataType::kInt32:
      return "int32";
    case DataType::kFloat32:
      return "float32";
    case DataType::kFloat64:
      return "float64";
    case DataType::kInt8:
      return "int8";
    case DataType::kUint16:
      return "uint16";
    case DataType::kUint32:
      return "uint32";
    case DataType::kInt64:
      return "int64";
    case DataType::kUint64:
      return "uint64";
  }
  return fmt::format("datatype({})", static_cast<int>(type));
}

int bytes_per_voxel(DataType type) {
  switch (type) {
    case DataType::kUint8:
    case DataType::kInt8:
      return 1;
    case DataType::kInt16:
    case DataType::kUint16:
      return 2;
    case DataType::kInt32:
    case DataType::kUint32:
    case DataType::kFloat32:
      return 4;
    case DataType::kFloat64:
    case DataType::kInt64:
    case DataType::kUint64:
      return 8;
  }
  return 0;
}

bool ImageHeader::same_grid(const ImageHeader& other, double tolerance_mm) const {
  if (dims != other.dims) return false;
  return (affine - other.affine).cwiseAbs().maxCoeff() <= tolerance_mm;
}

static void check_dims(const ImageHeader& header) {
  for (int64_t d : header.dims) {
    if (d < 1) throw std::invalid_argument(fmt::format("image dimension {} is not positive", d));
  }
  if (header.num_volumes < 1) {
    throw std::invalid_argument(fmt::format("image has {} volumes", header.num_volumes));
  }
}

Image::Image(ImageHeader header, float fill) : header_(std::move(header)) {
  check_dims(header_);
  data_.assign(static_cast<size_t>(header_.total_voxels()), fill);
}

Image::Image(ImageHeader header, std::vector<float> data) : header_(std::move(header)), data_(std::move(data)) {
  check_dims(header_);
  if (data_.size() != static_cast<size_t>(header_.total_voxels())) {
    throw std::invalid_argument(
        fmt::format("image data has {} values, header says {}", data_.size(), header_.total_voxels()));
  }
}

std::span<float> Image::volume(int64_t t) {
  if (t < 0 || t >= nt()) throw std::out_of_range(fmt::format("volume {} of {}", t, nt()));
  const auto n = static_cast<size_t>(header_.voxels_per_volume());
  return {data_.data() + static_cast<size_t>(t) * n, n};
}

std::span<const float> Image::volume(int64_t t) const {
  if (t < 0 || t >= nt()) throw std::out_of_range(fmt::format("volume {} of {}", t, nt()));
  const auto n = static_cast<size_t>(header_.voxels_per_volume());
  return {data_.data() + static_cast<size_t>(t) * n, n};
}

Image Image::extract_volume(int64_t t) const {
  ImageHeader h = header_;
  h.num_volumes = 1;
  auto v = volume(t);
  return Image(h, std::vector<float>(v.begin(), v.end()));
}

}  // namespace rtf
