// LiveMotionCorrection: reference selection, registration from the previous estimate, reslice into the ring, FD/DVARS.
#include "core/motion/live_motion.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace rtf {

LiveMotionCorrection::LiveMotionCorrection(Device& device, const ImageHeader& grid, LiveMotionOptions options)
    : device_(device),
      grid_(grid),
      options_(std::move(options)),
      registration_(device, grid, options_.registration),
      corrected_(device, static_cast<size_t>(grid.voxels_per_volume())) {
  if (options_.reference_image) {
    const Image& ref = *options_.reference_image;
    if (ref.nt() != 1 || !ref.header().same_grid(grid, 1e-3)) {
      throw std::invalid_argument("motion reference image: a 3D image on the run's grid is needed");
    }
    registration_.set_reference(ref.data());
    mask_ = compute_brain_mask(device, ref).inside;
  }
}

VolumeMotion LiveMotionCorrection::process(DeviceRingBuffer& ring, int64_t index) {
  const auto voxels = static_cast<size_t>(grid_.voxels_per_volume());
  const size_t offset = static_cast<size_t>(ring.slot_of(index)) * voxels;
  VolumeMotion m;
  if (!registration_.has_reference()) {
    if (index < options_.reference_index) {
      m.converged = false;
      m.failure = fmt::format("before the reference volume {}", options_.reference_index);
      history_.push_back(m);
      return m;
    }
    // The reference volume itself, or (if it never reached this stage) the first volume after it.
    registration_.set_reference(ring.data(), offset);
    host_volume_.resize(voxels);
    ring.data().read(device_.queue(), host_volume_, offset);
    Image ref(grid_, host_volume_);
    ref.header().num_volumes = 1;
    mask_ = compute_brain_mask(device_, ref).inside;
  }
  const RegistrationResult r = registration_.register_volume(ring.data(), offset, estimate_);
  m.iterations = r.iterations;
  m.rms_residual = r.rms_residual;
  m.converged = r.converged;
  m.failure = r.failure;
  if (r.converged) estimate_ = r.transform;  // else: flagged, resliced with the previous estimate
  m.params = rigid_params(estimate_, registration_.centre(), 1e-5);
  const ClEvent resliced = registration_.reslice(ring.data(), offset, estimate_, corrected_);
  ring.replace_volume(index, corrected_, &resliced);
  if (!dvars_) dvars_ = std::make_unique<DeviceDvars>(device_, mask_);
  const double change = dvars_->next(corrected_);  // in-order queue: after the reslice
  if (previous_params_) {
    m.fd_mm = framewise_displacement(*previous_params_, m.params);
    m.dvars = change;
  }
  previous_params_ = m.params;
  history_.push_back(m);
  return m;
}

}  // namespace rtf
