// The live decoder: a model file's linear decoder applied to every volume of a run on the device
// (kernels/decoder_apply.cl, docs/algorithms/decoding.md "Live"). Causal preprocessing, the run so far standing in for
// the whole run the model was trained on: each feature voxel's value detrended against its least-squares line (or
// mean) over the run's volumes so far and z-scored by the residuals' SD so far (the model's "per run" scaling), or
// scaled by the model's fixed feature_mean / feature_scale. At a run's end the running line and SD are those of the
// whole run, so the last volume's features are the offline ones. Per volume: one kernel and a read of G x M doubles.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/decoding/decoder_model_file.hpp"
#include "core/device/buffer.hpp"
#include "core/device/device.hpp"

namespace rtf {

constexpr int kMaxLiveDecisionFunctions = 16;

struct LiveDecision {
  int64_t volume = -1;              // the volume's place in the run
  bool ready = false;               // false while the run is too short for its statistics (see warm_up_volumes)
  std::vector<double> decision;     // M
  std::vector<double> probability;  // K, logistic only (else empty)
  int predicted = -1;               // index into the model's classes
};

class LiveDecoder {
 public:
  // Throws std::invalid_argument naming the model for a grid that is not `epi`'s, a preprocessing the live path does
  // not reproduce (Legendre order above 1, a DCT high-pass), more than kMaxLiveDecisionFunctions decision functions.
  LiveDecoder(Device& device, DecoderModelFile model, const ImageHeader& epi, std::string model_name = "model");

  // A new run: the running sums start again.
  void start_run();

  // Volume t of the run (t = 0, 1, ... in order: call it for every volume, also those not analysed) is the one at
  // `offset` elements into `volumes` (a ring slot). Enqueued on the compute queue.
  void enqueue(const DeviceBuffer<float>& volumes, size_t offset);

  // The decision of the last enqueued volume (waits for it).
  LiveDecision read();

  // Volumes before the decision is `ready`: 3 with the line (a line and a spread need them), 2 with the mean, else 1.
  int warm_up_volumes() const;
  const DecoderModelFile& model() const { return model_; }

 private:
  Device& device_;
  DecoderModelFile model_;
  int detrend_ = 1, scale_ = 1;
  int64_t groups_ = 0, next_ = 0;
  DeviceBuffer<int> voxels_;
  DeviceBuffer<double> sums_, coef_, shift_, scale_buffer_, partial_;
  std::vector<double> partial_host_;
  ClKernel kernel_;
};

}  // namespace rtf
