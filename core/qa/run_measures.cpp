// measure_run_volumes: `slots` staging volumes on the device, each with a DeviceSliceMeans and a DeviceDvars of its
// own (each holds one pending result). Volume t is copied device-to-device from the run into slot t % slots and its
// measures enqueued; DVARS needs the volume before it as its instance's previous volume, so that instance is first
// handed volume t - 1 (still in its slot: a slot is refilled only `slots` volumes later, after this, in queue order).
// The host waits once per batch of `slots` volumes and takes the results in volume order.
#include "core/qa/run_measures.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "core/device/cl_error.hpp"
#include "core/motion/device_dvars.hpp"
#include "core/qa/slice_means.hpp"
#include "core/util/progress_log.hpp"

namespace rtf {

RunMeasures measure_run_volumes(Device& device, const DeviceBuffer<float>& run, int64_t volumes,
                                std::array<int64_t, 3> dims, std::span<const uint8_t> mask,
                                const SliceZScoreOptions& slices, int slots) {
  const int64_t voxels = dims[0] * dims[1] * dims[2];
  if (volumes < 0 || voxels <= 0 || run.size() < static_cast<size_t>(volumes) * static_cast<size_t>(voxels)) {
    throw std::invalid_argument(fmt::format("measure_run_volumes: {} values on the device for {} volumes of {} voxels",
                                            run.size(), volumes, voxels));
  }
  if (mask.size() != static_cast<size_t>(voxels)) {
    throw std::invalid_argument(
        fmt::format("measure_run_volumes: a mask of {} voxels for a grid of {}", mask.size(), voxels));
  }
  SliceZScores slice_z(slices);
  const auto count = static_cast<size_t>(std::clamp<int64_t>(volumes, 2, std::max(slots, 2)));
  const cl_command_queue q = device.queue();
  DeviceVoxelMoments moments(device, voxels);
  std::vector<DeviceBuffer<float>> staged;
  std::vector<std::unique_ptr<DeviceSliceMeans>> means;
  std::vector<std::unique_ptr<DeviceDvars>> dvars;
  staged.reserve(count);
  for (size_t k = 0; k < count; ++k) {
    staged.emplace_back(device, static_cast<size_t>(voxels));
    means.push_back(std::make_unique<DeviceSliceMeans>(device, dims, mask));
    dvars.push_back(std::make_unique<DeviceDvars>(device, mask));
  }
  const size_t volume_bytes = static_cast<size_t>(voxels) * sizeof(float);
  RunMeasures out;
  out.rows.resize(static_cast<size_t>(volumes));
  ProgressLog progress("qa volumes");
  for (size_t first = 0; first < out.rows.size(); first += count) {
    const size_t last = std::min(out.rows.size(), first + count);
    for (size_t t = first; t < last; ++t) {
      const size_t k = t % count;
      RTF_CL_CHECK(
          clEnqueueCopyBuffer(q, run.get(), staged[k].get(), t * volume_bytes, 0, volume_bytes, 0, nullptr, nullptr));
      moments.add(staged[k]);
      means[k]->enqueue(staged[k]);
      if (t > 0) dvars[k]->enqueue_next(staged[(t - 1) % count]);  // its previous volume: t - 1 (result unused)
      dvars[k]->enqueue_next(staged[k]);
    }
    RTF_CL_CHECK(clFinish(q));
    for (size_t t = first; t < last; ++t) {
      const size_t k = t % count;
      QaVolumeRow& r = out.rows[t];
      r.volume = static_cast<int64_t>(t);
      const SliceMeans m = means[k]->result();
      r.global = m.global;
      r.slices = slice_z.next(m.slice);
      r.dvars = dvars[k]->next_result();
      progress(static_cast<int64_t>(t) + 1, volumes);
    }
  }
  out.maps = moments.read_maps();
  return out;
}

}  // namespace rtf
