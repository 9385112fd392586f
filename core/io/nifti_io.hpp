// NIfTI-1 / NIfTI-2 reading and writing (.nii, .nii.gz; reading also .hdr/.img pairs) to and from rtf::Image.
// Reading converts every supported datatype to float32 and applies scl_slope/scl_inter. Untrusted input is
// safe: every problem (missing file, not NIfTI, truncated, absurd sizes, unsupported datatype, ...) is a
// NiftiError naming the file and the problem; nothing is allocated before the header has been validated.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "core/image/image.hpp"

namespace rtf {

class NiftiError : public std::runtime_error {
 public:
  NiftiError(const std::filesystem::path& file, const std::string& problem);
  const std::filesystem::path& file() const { return file_; }

 private:
  std::filesystem::path file_;
};

// Bounds a header must respect before any voxel memory is allocated.
struct NiftiReadLimits {
  int64_t max_dim = int64_t{1} << 16;  // largest nx, ny, nz or nt accepted
  uint64_t max_bytes = 32ull << 30;    // largest on-disk voxel data, and largest float32 result
};

// Reads and validates the header only (for uncompressed files, the file size is checked as well).
ImageHeader read_nifti_header(const std::filesystem::path& path, const NiftiReadLimits& limits = {});

// The header of a file whose voxel data are all there, for a file whose grid is used but not its voxels (apply's
// reference, a live run's T1 checked at start): as read_nifti_header, and a compressed file's data are decompressed to
// their end and its gzip CRC checked, without being kept (memory: one 16 kB buffer). A file cut short is a NiftiError
// naming it ("file is truncated: ..."), never taken for its intact header.
ImageHeader read_complete_nifti_header(const std::filesystem::path& path, const NiftiReadLimits& limits = {});

// Reads a 3D or 4D image as float32, scaled by scl_slope/scl_inter when scl_slope != 0.
// Affine: sform if sform_code > 0, else qform if qform_code > 0, else diag(pixdim).
// TR: pixdim[4] in seconds (ms and us units are converted). NaN/inf voxel values are kept as they are.
Image read_nifti(const std::filesystem::path& path, const NiftiReadLimits& limits = {});

// Writes .nii or .nii.gz (chosen by the extension) as NIfTI-1 or NIfTI-2, with sform (code: header.xform_code, e.g. 4
// for MNI; 0 is written as 1) and, when the affine is a rotation times voxel scaling, the matching qform. Integer
// outputs round to nearest and clamp to the type's range (NaN becomes 0). float32 round-trips bit for bit. The file
// appears atomically (written to a temporary name beside it, fsynced, then renamed); a failed write is a NiftiError
// with the system's reason ("No space left on device") and removes the temporary.
void write_nifti(const std::filesystem::path& path, const Image& image, DataType out = DataType::kFloat32,
                 int nifti_version = 1);

}  // namespace rtf
