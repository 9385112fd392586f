// Frames (enhanced_frames) -> volumes by temporal position -> sorted along the normal -> raw pixels decoded by GDCM,
// rescaled per frame and rows flipped into NIfTI order -> Images with dcm2niix's affine.
#include "scanner/assemble/enhanced_volume.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>

#include "scanner/dicom/dicom_pixels.hpp"
#include "scanner/dicom/enhanced_frames.hpp"

namespace rtf::dicom {

namespace {

namespace fs = std::filesystem;

double along(const std::array<double, 3>& position, const std::array<double, 3>& normal) {
  return position[0] * normal[0] + position[1] * normal[1] + position[2] * normal[2];
}

bool same_orientation(const DicomPlane& a, const DicomPlane& b) {
  for (size_t i = 0; i < 6; ++i) {
    if (std::abs(a.orientation[i] - b.orientation[i]) > 1e-4) return false;
  }
  return std::abs(a.pixel_spacing[0] - b.pixel_spacing[0]) < 1e-4 &&
         std::abs(a.pixel_spacing[1] - b.pixel_spacing[1]) < 1e-4;
}

// Frame indices per volume, in temporal order.
std::vector<std::vector<size_t>> frames_by_volume(const fs::path& path, const std::vector<EnhancedFrame>& frames,
                                                  const std::array<double, 3>& normal) {
  std::map<int, std::vector<size_t>> volumes;
  const bool indexed =
      std::any_of(frames.begin(), frames.end(), [](const EnhancedFrame& f) { return f.temporal_position > 0; });
  std::vector<double> seen;  // positions along the normal, one entry per frame so far
  for (size_t f = 0; f < frames.size(); ++f) {
    const double z = along(frames[f].plane.position, normal);
    int key = 0;
    if (indexed) {
      if (frames[f].temporal_position < 1) {
        throw DicomError(path, fmt::format("frame {} has no TemporalPositionIndex (0020,9128) where others do", f + 1));
      }
      key = frames[f].temporal_position;
    } else {
      key = static_cast<int>(std::count_if(seen.begin(), seen.end(), [&](double s) { return std::abs(s - z) < 1e-4; }));
    }
    seen.push_back(z);
    volumes[key].push_back(f);
  }
  std::vector<std::vector<size_t>> out;
  for (auto& [key, members] : volumes) out.push_back(std::move(members));
  return out;
}

}  // namespace

std::vector<DicomVolume> enhanced_volumes(const fs::path& file) {
  return enhanced_volumes(file, read_dicom_header(file));
}

std::vector<DicomVolume> enhanced_volumes(const fs::path& file, const DicomHeader& header) {
  const EnhancedFrames e = read_enhanced_frames(file, header);
  const std::vector<EnhancedFrame>& frames = e.frames;
  if (frames.empty()) throw DicomError(file, "an enhanced MR file without frames");
  const DicomPlane& first = frames.front().plane;
  for (size_t f = 0; f < frames.size(); ++f) {
    if (frames[f].stack_id != frames.front().stack_id) {
      throw DicomError(file, fmt::format("frame {} is in stack '{}', frame 1 in '{}' (one stack per file only)", f + 1,
                                         frames[f].stack_id, frames.front().stack_id));
    }
    if (!same_orientation(frames[f].plane, first)) {
      throw DicomError(file, fmt::format("frame {}'s orientation or pixel spacing differs from frame 1's", f + 1));
    }
  }
  const std::array<double, 3> normal = slice_normal(first);
  std::vector<std::vector<size_t>> volumes = frames_by_volume(file, frames, normal);
  const size_t nz = volumes.front().size(), nx = static_cast<size_t>(first.columns),
               ny = static_cast<size_t>(first.rows);
  for (auto& members : volumes) {
    if (members.size() != nz) {
      throw DicomError(file, fmt::format("volumes of {} and {} frames in one file", nz, members.size()));
    }
    std::stable_sort(members.begin(), members.end(), [&](size_t a, size_t b) {
      return along(frames[a].plane.position, normal) < along(frames[b].plane.position, normal);
    });
    for (size_t k = 1; k < nz; ++k) {
      if (along(frames[members[k]].plane.position, normal) - along(frames[members[k - 1]].plane.position, normal) <
          1e-4) {
        throw DicomError(file, fmt::format("frames {} and {} of one volume at the same position", members[k - 1] + 1,
                                           members[k] + 1));
      }
    }
  }
  // GDCM reads a cut Pixel Data element short (with a warning) and still decodes a full-size buffer from it:
  // read_dicom_pixels checks the file whole first.
  const DicomPixels stored = read_dicom_pixels(file, PixelValues::kStored);
  if (static_cast<size_t>(stored.rows) != ny || static_cast<size_t>(stored.columns) != nx ||
      static_cast<size_t>(stored.frames) != frames.size()) {
    throw DicomError(file, fmt::format("pixel data of {} frames of {} x {} for {} frames of {} x {}", stored.frames,
                                       stored.rows, stored.columns, frames.size(), ny, nx));
  }
  std::vector<DicomVolume> out;
  for (const std::vector<size_t>& members : volumes) {
    const EnhancedFrame& lowest = frames[members.front()];
    const double spacing = nz > 1 ? slice_spacing(lowest.plane.position, frames[members[1]].plane.position)
                                  : (lowest.spacing_between_slices > 0 ? lowest.spacing_between_slices
                                                                       : std::max(lowest.slice_thickness, 1.0));
    std::vector<float> voxels(nx * ny * nz);
    for (size_t k = 0; k < nz; ++k) {
      const EnhancedFrame& frame = frames[members[k]];
      const float* src = stored.values.data() + members[k] * nx * ny;
      for (size_t y = 0; y < ny; ++y) {  // NIfTI row y = DICOM row ny - 1 - y
        const float* row = src + (ny - 1 - y) * nx;
        float* dst = voxels.data() + (k * ny + y) * nx;
        for (size_t x = 0; x < nx; ++x) {
          dst[x] = static_cast<float>(static_cast<double>(row[x]) * frame.rescale_slope + frame.rescale_intercept);
        }
      }
    }
    DicomVolume volume{
        Image(dicom_volume_header(static_cast<int>(nx), static_cast<int>(ny), static_cast<int>(nz),
                                  stack_affine(lowest.plane, spacing), frames.front().repetition_time_ms / 1000.0,
                                  e.header.pixel_representation == 1),
              std::move(voxels)),
        {}};
    std::vector<double> times;
    for (const size_t f : members) {
      if (frames[f].acquisition_time_s) times.push_back(*frames[f].acquisition_time_s);
    }
    if (times.size() == nz) {
      const double start = *std::min_element(times.begin(), times.end());
      const double end = *std::max_element(times.begin(), times.end());
      if (end - start > 1e-6) {
        for (const double t : times) volume.slice_timing_s.push_back(t - start);
      }
    }
    out.push_back(std::move(volume));
  }
  return out;
}

}  // namespace rtf::dicom
