// Header (geometry) + pixels (decoded) -> rows flipped into NIfTI order -> Image with dcm2niix's affine.
#include "scanner/assemble/dicom_volume.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/dicom/mosaic_layout.hpp"
#include "scanner/dicom/dicom_header.hpp"
#include "scanner/dicom/dicom_pixels.hpp"

namespace rtf::dicom {

namespace {

ImageHeader volume_header(const DicomHeader& h, int nx, int ny, int nz, const Eigen::Matrix4d& affine) {
  return dicom_volume_header(nx, ny, nz, affine, h.repetition_time_ms / 1000.0, h.pixel_representation == 1);
}

// GE's slice times: each slice's RTIA timer less the volume's earliest, in stacked order. Used only where they are
// plausible — one distinct time per slice, all within the TR —, which the first volume of a series is not (its timers
// are mostly 0), as dcm2niix finds too.
std::vector<double> rtia_slice_times(const std::vector<DicomHeader>& headers, const std::vector<size_t>& order) {
  std::vector<double> times;
  for (const size_t k : order) {
    if (!headers[k].ge_rtia_timer_s) return {};
    times.push_back(*headers[k].ge_rtia_timer_s);
  }
  const double earliest = *std::min_element(times.begin(), times.end());
  for (double& t : times) t -= earliest;
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const double tr_s = headers.front().repetition_time_ms / 1000.0;
  for (size_t k = 1; k < sorted.size(); ++k) {
    if (sorted[k] - sorted[k - 1] < 1e-4) return {};
  }
  if (!(tr_s > 0) || sorted.back() >= tr_s) return {};
  return times;
}

}  // namespace

ImageHeader dicom_volume_header(int nx, int ny, int nz, const Eigen::Matrix4d& affine, double tr_s, bool is_signed) {
  ImageHeader out;
  out.dims = {nx, ny, nz};
  out.num_volumes = 1;
  out.affine = affine;
  for (int c = 0; c < 3; ++c) out.voxel_mm[static_cast<size_t>(c)] = affine.block<3, 1>(0, c).norm();
  out.xform_code = 1;
  out.tr_s = tr_s;
  out.source_type = is_signed ? DataType::kInt16 : DataType::kUint16;
  return out;
}

DicomVolume mosaic_volume(const std::filesystem::path& file) {
  return mosaic_volume(file, read_dicom_header(file));
}

DicomVolume mosaic_volume(const std::filesystem::path& file, const DicomHeader& h) {
  if (!h.is_mosaic() || !h.csa_slice_normal)
    throw DicomError(file, "not a Siemens mosaic (no MOSAIC image type or CSA)");
  const MosaicShape shape{h.plane.rows, h.plane.columns, h.mosaic_slices};
  const double spacing = h.spacing_between_slices > 0 ? h.spacing_between_slices : h.slice_thickness;
  Eigen::Matrix4d affine;
  std::vector<float> volume;
  try {
    affine = mosaic_affine(h.plane, h.mosaic_slices, spacing, *h.csa_slice_normal);
    const DicomPixels pixels = read_dicom_pixels(file);
    volume = unpack_mosaic<float>(pixels.values, shape);
  } catch (const std::invalid_argument& e) {
    throw DicomError(file, e.what());
  }
  DicomVolume out{
      Image(volume_header(h, shape.tile_columns(), shape.tile_rows(), h.mosaic_slices, affine), std::move(volume)), {}};
  if (static_cast<int>(h.mosaic_ref_acq_times_ms.size()) == h.mosaic_slices) {
    for (const double t : h.mosaic_ref_acq_times_ms) out.slice_timing_s.push_back(t / 1000.0);
  }
  return out;
}

DicomVolume slice_stack_volume(const std::vector<std::filesystem::path>& files) {
  if (files.empty()) throw std::invalid_argument("slice_stack_volume: no files");
  std::vector<DicomHeader> headers;
  for (const auto& f : files) headers.push_back(read_dicom_header(f));
  const DicomHeader& first_header = headers.front();
  const std::array<double, 3> n = slice_normal(first_header.plane);
  const auto along = [&](const DicomHeader& h) {
    return h.plane.position[0] * n[0] + h.plane.position[1] * n[1] + h.plane.position[2] * n[2];
  };
  std::vector<size_t> order(files.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return along(headers[a]) < along(headers[b]); });
  const DicomHeader& lowest = headers[order.front()];
  for (size_t k = 0; k < order.size(); ++k) {
    const DicomHeader& h = headers[order[k]];
    if (h.plane.rows != lowest.plane.rows || h.plane.columns != lowest.plane.columns ||
        h.plane.orientation != lowest.plane.orientation) {
      throw DicomError(files[order[k]], "its size or orientation differs from the other slices of the volume");
    }
    if (k > 0 && along(h) - along(headers[order[k - 1]]) < 1e-4) {
      throw DicomError(files[order[k]], "two slices of the volume at the same position");
    }
  }
  const double spacing = order.size() > 1 ? slice_spacing(lowest.plane.position, headers[order[1]].plane.position)
                                          : (lowest.spacing_between_slices > 0 ? lowest.spacing_between_slices
                                                                               : std::max(lowest.slice_thickness, 1.0));
  const int nx = lowest.plane.columns, ny = lowest.plane.rows, nz = static_cast<int>(files.size());
  std::vector<float> volume(static_cast<size_t>(nx) * static_cast<size_t>(ny) * static_cast<size_t>(nz));
  for (size_t k = 0; k < order.size(); ++k) {
    const DicomPixels pixels = read_dicom_pixels(files[order[k]]);
    if (pixels.rows != ny || pixels.columns != nx || pixels.frames != 1) {
      throw DicomError(files[order[k]], "not a single frame of the volume's size");
    }
    for (int y = 0; y < ny; ++y) {  // NIfTI row y = DICOM row ny - 1 - y
      const float* src = pixels.values.data() + static_cast<size_t>(ny - 1 - y) * static_cast<size_t>(nx);
      std::copy(src, src + nx,
                volume.begin() + static_cast<std::ptrdiff_t>((k * static_cast<size_t>(ny) + static_cast<size_t>(y)) *
                                                             static_cast<size_t>(nx)));
    }
  }
  return {Image(volume_header(lowest, nx, ny, nz, stack_affine(lowest.plane, spacing)), std::move(volume)),
          rtia_slice_times(headers, order)};
}

}  // namespace rtf::dicom
