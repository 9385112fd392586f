// LiveDecoder: the model's arrays uploaded once; per volume one launch, then the work-groups' sums added in double.
#include "core/decoding/live_decoder.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "core/device/launch.hpp"

namespace rtf {

namespace {
constexpr int kGroup = 128;
}  // namespace

LiveDecoder::LiveDecoder(Device& device, DecoderModelFile model, const ImageHeader& epi, std::string model_name)
    : device_(device), model_(std::move(model)) {
  require_model_grid(model_, model_name, epi, "the run");
  if (model_.highpass_cutoff_s) {
    throw std::invalid_argument(fmt::format(
        "{}: trained with a DCT high-pass ({} s); the live decoder detrends by a line over the run so far: train "
        "with --poly 1 and no --highpass",
        model_name, *model_.highpass_cutoff_s));
  }
  const int poly = model_.detrend_poly_order.value_or(-1);
  if (poly > 1) {
    throw std::invalid_argument(fmt::format(
        "{}: trained with Legendre detrending of order {}; the live decoder fits a line (order 1) or the mean (0)",
        model_name, poly));
  }
  const auto m = model_.decision_functions();
  if (m > kMaxLiveDecisionFunctions) {
    throw std::invalid_argument(fmt::format("{}: {} decision functions, the live decoder takes at most {}", model_name,
                                            m, kMaxLiveDecisionFunctions));
  }
  scale_ = model_.scaling == FeatureScaling::kPerRun ? 1 : model_.scaling == FeatureScaling::kFeatureScale ? 2 : 0;
  // Without detrending, z-scoring still removes the mean (as the offline features do).
  detrend_ = poly >= 0 ? poly : (scale_ == 1 ? 0 : -1);
  const auto p = static_cast<size_t>(model_.features());
  groups_ = static_cast<int64_t>((p + kGroup - 1) / kGroup);
  const cl_command_queue q = device.queue();
  voxels_ = DeviceBuffer<int>(device, p);
  voxels_.write(q, model_.voxels);
  sums_ = DeviceBuffer<double>(device, 4 * p);
  std::vector<double> coef(p * static_cast<size_t>(m));
  for (Eigen::Index k = 0; k < m; ++k) {
    for (size_t f = 0; f < p; ++f) coef[static_cast<size_t>(k) * p + f] = model_.coef(static_cast<Eigen::Index>(f), k);
  }
  coef_ = DeviceBuffer<double>(device, coef.size());
  coef_.write(q, coef);
  shift_ = DeviceBuffer<double>(device, p);
  scale_buffer_ = DeviceBuffer<double>(device, p);
  if (scale_ == 2) {
    shift_.write(q, model_.feature_mean);
    scale_buffer_.write(q, model_.feature_scale);
  }
  partial_ = DeviceBuffer<double>(device, static_cast<size_t>(groups_ * m));
  partial_host_.resize(static_cast<size_t>(groups_ * m));
  kernel_ = device.kernel("decoder_apply.cl", "decoder_apply",
                          {fmt::format("P={}", p), fmt::format("M={}", m), fmt::format("WG={}", kGroup),
                           fmt::format("DETREND={}", detrend_), fmt::format("SCALE={}", scale_)});
  start_run();
}

void LiveDecoder::start_run() {
  sums_.fill(device_.queue(), 0.0);
  next_ = 0;
}

int LiveDecoder::warm_up_volumes() const {
  if (scale_ != 1) return detrend_ == 1 ? 2 : 1;
  return detrend_ == 1 ? 3 : 2;
}

void LiveDecoder::enqueue(const DeviceBuffer<float>& volumes, size_t offset) {
  const auto t = static_cast<int>(next_++);
  const cl_ulong at = offset;
  set_args(kernel_, volumes, at, t, voxels_, sums_, coef_, shift_, scale_buffer_, partial_);
  launch<1>(device_.queue(), kernel_, {static_cast<size_t>(groups_ * kGroup)}, {static_cast<size_t>(kGroup)}, {},
            EventMode::kNone);
}

LiveDecision LiveDecoder::read() {
  LiveDecision d;
  d.volume = next_ - 1;
  if (d.volume < 0) return d;
  partial_.read(device_.queue(), partial_host_);
  const auto m = model_.decision_functions();
  Eigen::MatrixXd decisions(1, m);
  for (Eigen::Index k = 0; k < m; ++k) {
    double sum = model_.intercept[k];
    for (int64_t g = 0; g < groups_; ++g) sum += partial_host_[static_cast<size_t>(g * m + k)];
    decisions(0, k) = sum;
  }
  d.ready = next_ >= warm_up_volumes();
  d.decision.assign(decisions.data(), decisions.data() + m);
  d.predicted = predicted_classes(decisions).front();
  if (has_probabilities(model_.model)) {
    const Eigen::MatrixXd p = class_probabilities(decisions);
    d.probability.assign(p.data(), p.data() + p.size());
  }
  return d;
}

}  // namespace rtf
