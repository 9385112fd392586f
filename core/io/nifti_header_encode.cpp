// Encoding of NIfTI-1/NIfTI-2 headers for writing: validation of what the format can hold, sform and
// (where it reproduces the affine) qform, through nifticlib's nifti_image -> header conversion.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "core/io/nifti_header.hpp"

extern "C" {
#include <nifti2_io.h>
}

namespace rtf::nifti_detail {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& problem) {
  throw NiftiError(path, problem);
}

}  // namespace

std::vector<uint8_t> encode_nifti_header(const ImageHeader& header, DataType out, int nifti_version,
                                         const std::filesystem::path& path) {
  quiet_nifticlib();
  if (nifti_version != 1 && nifti_version != 2) {
    fail(path, fmt::format("NIfTI version must be 1 or 2, not {}", nifti_version));
  }
  if (bytes_per_voxel(out) == 0) fail(path, fmt::format("cannot write datatype code {}", static_cast<int>(out)));
  const int64_t max_dim = nifti_version == 1 ? std::numeric_limits<int16_t>::max() : int64_t{1} << 40;
  const int64_t sizes[4] = {header.dims[0], header.dims[1], header.dims[2], header.num_volumes};
  for (int64_t s : sizes) {
    if (s < 1) fail(path, fmt::format("cannot write an image with a dimension of {}", s));
    if (s > max_dim) {
      fail(path,
           fmt::format("dimension {} does not fit NIfTI-{} (at most {}); write NIfTI-2", s, nifti_version, max_dim));
    }
  }
  if (!header.affine.allFinite()) fail(path, "cannot write an affine with NaN or infinite values");
  for (double v : header.voxel_mm) {
    if (!std::isfinite(v) || v <= 0.0) fail(path, fmt::format("cannot write a voxel size of {}", v));
  }
  if (!std::isfinite(header.tr_s) || header.tr_s < 0.0) {
    fail(path, fmt::format("cannot write a repetition time of {}", header.tr_s));
  }
  if (nifti_version == 1) {  // NIfTI-1 keeps geometry and TR as float32
    auto fits_float = [](double v) { return std::abs(v) <= std::numeric_limits<float>::max(); };
    bool fits = header.affine.cwiseAbs().maxCoeff() <= std::numeric_limits<float>::max() && fits_float(header.tr_s);
    for (double v : header.voxel_mm) fits = fits && fits_float(v) && static_cast<float>(v) > 0.0f;
    if (!fits) fail(path, "voxel size, affine or TR does not fit NIfTI-1's float32 fields; write NIfTI-2");
  }

  // A time axis when there are several volumes or a TR to keep; a vector image puts its components on the 5th axis.
  int64_t dims[8] = {sizes[3] > 1 || header.tr_s > 0.0 ? 4 : 3, sizes[0], sizes[1], sizes[2], sizes[3], 1, 1, 1};
  if (header.vector_components) {
    dims[0] = 5;
    dims[4] = 1;
    dims[5] = sizes[3];
  }
  std::unique_ptr<nifti_image, void (*)(nifti_image*)> nim(nifti_make_new_nim(dims, static_cast<int>(out), 0),
                                                           nifti_image_free);
  if (!nim) fail(path, "nifticlib could not create an image header");
  nim->dx = nim->pixdim[1] = header.voxel_mm[0];
  nim->dy = nim->pixdim[2] = header.voxel_mm[1];
  nim->dz = nim->pixdim[3] = header.voxel_mm[2];
  nim->dt = nim->pixdim[4] = header.tr_s;
  if (header.vector_components) nim->intent_code = kIntentVector;
  nim->xyz_units = NIFTI_UNITS_MM;
  nim->time_units = NIFTI_UNITS_SEC;
  nim->scl_slope = 1.0;
  nim->scl_inter = 0.0;

  nifti_dmat44 affine;
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 4; ++c) affine.m[r][c] = header.affine(r, c);
  }
  // The space the affine maps into is kept (an MNI-152 template stays code 4); an affine that came from
  // voxel sizes alone (code 0) is written as scanner space so that readers use it.
  const int xform_code = header.xform_code > 0 ? header.xform_code : NIFTI_XFORM_SCANNER_ANAT;
  nim->sform_code = xform_code;
  nim->sto_xyz = affine;

  // qform only where it reproduces the affine (rotation times these voxel sizes; no shear).
  double qb = 0, qc = 0, qd = 0, qx = 0, qy = 0, qz = 0, dx = 0, dy = 0, dz = 0, qfac = 1;
  nifti_dmat44_to_quatern(affine, &qb, &qc, &qd, &qx, &qy, &qz, &dx, &dy, &dz, &qfac);
  const nifti_dmat44 q =
      nifti_quatern_to_dmat44(qb, qc, qd, qx, qy, qz, header.voxel_mm[0], header.voxel_mm[1], header.voxel_mm[2], qfac);
  double worst = 0.0;
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 4; ++c) worst = std::max(worst, std::abs(q.m[r][c] - affine.m[r][c]));
  }
  const double scale = 1.0 + header.affine.topLeftCorner<3, 3>().cwiseAbs().maxCoeff();
  if (std::isfinite(worst) && worst <= 1e-5 * scale) {
    nim->qform_code = xform_code;
    nim->quatern_b = qb;
    nim->quatern_c = qc;
    nim->quatern_d = qd;
    nim->qoffset_x = qx;
    nim->qoffset_y = qy;
    nim->qoffset_z = qz;
    nim->qfac = qfac;
    nim->qto_xyz = q;
  } else {
    nim->qform_code = NIFTI_XFORM_UNKNOWN;
  }

  std::memset(nim->descrip, 0, sizeof(nim->descrip));
  std::memcpy(nim->descrip, header.description.data(), std::min(header.description.size(), sizeof(nim->descrip) - 1));

  const size_t header_size = nifti_version == 1 ? kNifti1HeaderSize : kNifti2HeaderSize;
  nim->nifti_type = nifti_version == 1 ? NIFTI_FTYPE_NIFTI1_1 : NIFTI_FTYPE_NIFTI2_1;
  nim->iname_offset = static_cast<int64_t>(header_size + 4);

  std::vector<uint8_t> bytes(header_size + 4, 0);  // the 4 trailing zero bytes: "no extensions"
  if (nifti_version == 1) {
    nifti_1_header h;
    if (nifti_convert_nim2n1hdr(nim.get(), &h) != 0) fail(path, "nifticlib could not encode the NIfTI-1 header");
    std::memcpy(h.magic, "n+1\0", 4);
    std::memcpy(bytes.data(), &h, sizeof(h));
  } else {
    nifti_2_header h;
    if (nifti_convert_nim2n2hdr(nim.get(), &h) != 0) fail(path, "nifticlib could not encode the NIfTI-2 header");
    std::memcpy(h.magic, "n+2\0", 4);
    std::memcpy(h.magic + 4, kNifti2Signature, 4);
    std::memcpy(bytes.data(), &h, sizeof(h));
  }
  return bytes;
}

}  // namespace rtf::nifti_detail
