// LiveMotionCorrection: the per-TR motion stage. Each volume arriving in the device ring buffer is registered to the
// run's reference (by default its first volume; a chosen volume index or an external image as options), starting
// from the previous volume's estimate, resliced, and written back into its ring slot; FD and DVARS are computed
// against the previous volume. A volume whose registration fails or does not converge is flagged and resliced with
// the previous estimate. docs/algorithms/motion_correction.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/device/device.hpp"
#include "core/mask/brain_mask.hpp"
#include "core/motion/device_dvars.hpp"
#include "core/motion/motion_metrics.hpp"
#include "core/registration/rigid_registration.hpp"
#include "core/ring/device_ring_buffer.hpp"

namespace rtf {

struct LiveMotionOptions {
  RegistrationOptions registration;
  int64_t reference_index = 0;           // volume of the run used as reference (ignored with reference_image)
  std::optional<Image> reference_image;  // an external 3D reference on the run's grid
};

class LiveMotionCorrection {
 public:
  LiveMotionCorrection(Device& device, const ImageHeader& grid, LiveMotionOptions options = {});

  // Processes volume `index`, which must be held by `ring`. Volumes before the reference index are left as they are
  // and reported with failure "before the reference"; the reference is the volume at reference_index, or the first
  // one after it to arrive (if that one was skipped).
  VolumeMotion process(DeviceRingBuffer& ring, int64_t index);

  bool has_reference() const { return registration_.has_reference(); }
  const std::vector<VolumeMotion>& history() const { return history_; }

 private:
  Device& device_;
  ImageHeader grid_;
  LiveMotionOptions options_;
  RigidRegistration registration_;
  DeviceBuffer<float> corrected_;
  std::vector<uint8_t> mask_;           // DVARS voxels (brain mask of the reference)
  std::unique_ptr<DeviceDvars> dvars_;  // against the previous corrected volume, on the device
  std::optional<RigidParams> previous_params_;
  Eigen::Matrix4d estimate_ = Eigen::Matrix4d::Identity();
  std::vector<VolumeMotion> history_;
  std::vector<float> host_volume_;
};

}  // namespace rtf
