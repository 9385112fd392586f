// Internal to core/io: decoding, validating and encoding NIfTI-1/NIfTI-2 header bytes.
// decode_nifti_header() accepts untrusted bytes and either returns a header whose sizes are all
// checked (no overflow, within the limits) or throws NiftiError saying what is wrong.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "core/image/image.hpp"
#include "core/io/nifti_io.hpp"

namespace rtf::nifti_detail {

constexpr size_t kNifti1HeaderSize = 348;
constexpr int kIntentVector = 1007;  // NIFTI_INTENT_VECTOR
constexpr size_t kNifti2HeaderSize = 540;
constexpr size_t kMaxHeaderSize = kNifti2HeaderSize;
constexpr uint8_t kNifti2Signature[4] = {0x0D, 0x0A, 0x1A, 0x0A};  // magic[4..7] of NIfTI-2

struct DecodedHeader {
  int version = 1;           // 1 or 2
  bool swapped = false;      // stored in the other byte order than this machine's
  bool single_file = true;   // magic n+1/n+2 (.nii); false for ni1/ni2 (.hdr + .img)
  int bytes_per_voxel = 4;   // of the on-disk datatype
  uint64_t voxel_count = 0;  // nx * ny * nz * nt
  uint64_t data_offset = 0;  // byte offset of the voxel data in the data file
  uint64_t data_bytes = 0;   // voxel_count * bytes_per_voxel
  double scl_slope = 0.0;    // 0: no scaling
  double scl_inter = 0.0;
  ImageHeader image;  // dims, voxel size, affine, TR, datatype, description
};

// `bytes` are the first bytes of the header file (up to kMaxHeaderSize; fewer if the file is shorter).
DecodedHeader decode_nifti_header(std::span<const uint8_t> bytes, const std::filesystem::path& path,
                                  const NiftiReadLimits& limits);

// Header bytes for a single-file image (.nii): the header, then a 4-byte empty extender. The voxel data
// follow directly (vox_offset = returned size). Throws NiftiError if the image cannot be represented.
std::vector<uint8_t> encode_nifti_header(const ImageHeader& header, DataType out, int nifti_version,
                                         const std::filesystem::path& path);

// Silences nifticlib's diagnostics on stderr (once per process); our exceptions carry the reasons.
void quiet_nifticlib();

}  // namespace rtf::nifti_detail
