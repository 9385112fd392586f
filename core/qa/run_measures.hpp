// The volume-by-volume measures of `rtfmri qa` (core/qa/qa_command.hpp) over a run already on the device: per volume
// the global signal, the slice z-scores and DVARS; over the run the mean, SD and tSNR maps. The same numbers as
// uploading each volume and measuring it on its own (DeviceSliceMeans, DeviceDvars, DeviceVoxelMoments), without
// the uploads and with one wait for the host per batch of volumes.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/qa/qa_outputs.hpp"
#include "core/qa/slice_zscores.hpp"
#include "core/qa/voxel_moments.hpp"

namespace rtf {

struct RunMeasures {
  std::vector<QaVolumeRow> rows;  // volume, global, slices and dvars set; the other columns left as they are
  MomentMaps maps;
};

// `run`: `volumes` volumes of the dims grid, volume-major (volume t at t * voxels); `mask` one byte per voxel, non-zero
// inside. `slots` volumes are in flight between waits (at least 2). Throws std::invalid_argument for a run of fewer
// values than that, a mask of another size or bad slice options.
RunMeasures measure_run_volumes(Device& device, const DeviceBuffer<float>& run, int64_t volumes,
                                std::array<int64_t, 3> dims, std::span<const uint8_t> mask,
                                const SliceZScoreOptions& slices, int slots = 16);

}  // namespace rtf
