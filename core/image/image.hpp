// Image: a 3D volume or a 4D time series of float32 voxels with its geometry.
// Memory layout: volume-major, x fastest: data[((t * nz + z) * ny + y) * nx + x] (NIfTI's order).
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rtf {

// On-disk voxel type of a NIfTI file (values as in nifti1.h's DT_* codes).
enum class DataType : int {
  kUint8 = 2,
  kInt16 = 4,
  kInt32 = 8,
  kFloat32 = 16,
  kFloat64 = 64,
  kInt8 = 256,
  kUint16 = 512,
  kUint32 = 768,
  kInt64 = 1024,
  kUint64 = 1280,
};

std::string to_string(DataType type);

// Bytes per voxel of a datatype; 0 for a value that is not a DataType.
int bytes_per_voxel(DataType type);

struct ImageHeader {
  std::array<int64_t, 3> dims{1, 1, 1};                  // nx, ny, nz
  int64_t num_volumes = 1;                               // nt (1 for a 3D image)
  std::array<double, 3> voxel_mm{1.0, 1.0, 1.0};         // voxel size in mm
  Eigen::Matrix4d affine = Eigen::Matrix4d::Identity();  // voxel (i,j,k,1) -> scanner/world mm
  // Space the affine maps into, as a NIfTI xform code: 0 unknown (affine from voxel sizes only),
  // 1 scanner, 2 aligned, 3 Talairach, 4 MNI-152, 5 other template. Written back as sform/qform code.
  int xform_code = 1;
  double tr_s = 0.0;                          // repetition time in seconds (0 if unknown / 3D)
  DataType source_type = DataType::kFloat32;  // datatype the data had on disk
  std::string description;                    // NIfTI descrip field
  // The volumes are the components of one vector per voxel (NIfTI intent 1007, stored as 5D: x, y, z, 1, components;
  // ITK's displacement fields), not time points.
  bool vector_components = false;

  int64_t voxels_per_volume() const { return dims[0] * dims[1] * dims[2]; }
  int64_t total_voxels() const { return voxels_per_volume() * num_volumes; }
  bool same_grid(const ImageHeader& other, double tolerance_mm = 1e-4) const;
};

class Image {
 public:
  Image() = default;
  // Allocates data for the header's dims, filled with `fill`.
  explicit Image(ImageHeader header, float fill = 0.0f);
  Image(ImageHeader header, std::vector<float> data);  // throws if data.size() mismatches

  const ImageHeader& header() const { return header_; }
  ImageHeader& header() { return header_; }
  int64_t nx() const { return header_.dims[0]; }
  int64_t ny() const { return header_.dims[1]; }
  int64_t nz() const { return header_.dims[2]; }
  int64_t nt() const { return header_.num_volumes; }

  std::vector<float>& data() { return data_; }
  const std::vector<float>& data() const { return data_; }
  std::span<float> volume(int64_t t);
  std::span<const float> volume(int64_t t) const;

  float& at(int64_t x, int64_t y, int64_t z, int64_t t = 0) { return data_[index(x, y, z, t)]; }
  float at(int64_t x, int64_t y, int64_t z, int64_t t = 0) const { return data_[index(x, y, z, t)]; }

  // A 3D image holding volume t (same geometry, nt = 1).
  Image extract_volume(int64_t t) const;

 private:
  size_t index(int64_t x, int64_t y, int64_t z, int64_t t) const {
    return static_cast<size_t>(((t * nz() + z) * ny() + y) * nx() + x);
  }
  ImageHeader header_;
  std::vector<float> data_;
};

}  // namespace rtf
