// RunPipeline's live decoder: the model file read and fitted to the run's grid at the run's start, every uploaded
// volume fed to it in index order (the raw volume, before motion correction, as `rtfmri decode` sees a recorded run),
// the analysed volume's decision read for the feedback line. Whatever goes wrong turns the decoder off for the run,
// says why in every later line, and leaves the other stages alone. docs/algorithms/decoding.md ("Live").
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include "stream/pipeline/run_pipeline.hpp"

namespace rtf::stream {

void RunPipeline::start_decoder() {
  if (config_.decoder_model.empty()) return;
  try {
    decoder_ =
        std::make_unique<LiveDecoder>(device_, read_decoder_model(config_.decoder_model), grid_, config_.decoder_model);
    decoder_classes_ = std::make_shared<const std::vector<std::string>>(decoder_->model().classes);
    spdlog::info("run {}: decoder on ({}: {} over {} voxels, classes {})", run_, config_.decoder_model,
                 decoder_model_name(decoder_->model().model), decoder_->model().features(),
                 fmt::join(decoder_->model().classes, "/"));
  } catch (const std::exception& e) {
    decoder_off_ = e.what();
    spdlog::error("run {}: decoder off: {}", run_, decoder_off_);
  }
}

void RunPipeline::start_decoder_feedback() {
  if (config_.decoder_feedback.empty() || !decoder_) return;
  try {
    const std::vector<std::string>& classes = decoder_->model().classes;
    if (!config_.decoder_target.empty()) {
      decoder_target_ =
          static_cast<int>(std::find(classes.begin(), classes.end(), config_.decoder_target) - classes.begin());
    }
    std::optional<ConditionSchedule> schedule;
    if (config_.volumes > 0 && !events_.empty()) {
      schedule.emplace(events_, tr_s_, config_.volumes, config_.baseline_condition, std::vector<std::string>{},
                       config_.hrf_delay_s);
    }
    decoder_feedback_ = std::make_unique<DecoderFeedback>(
        DecoderFeedbackOptions{config_.feedback_protocol, config_.decoder_average_volumes}, std::move(schedule));
    spdlog::info("run {}: feedback value = the decoder's {} of '{}', the mean over {} volume(s){}", run_,
                 config_.decoder_feedback, classes.at(static_cast<size_t>(decoder_target_)),
                 config_.decoder_average_volumes,
                 config_.feedback_protocol == FeedbackProtocol::kIntermittent ? " at each regulation block's end" : "");
  } catch (const std::exception& e) {
    decoder_off_ = fmt::format("decoded feedback could not start: {}", e.what());
    decoder_.reset();
    spdlog::error("run {}: decoder off: {}", run_, decoder_off_);
  }
}

void RunPipeline::decoded_feedback(TrResult& r) {
  if (config_.decoder_feedback.empty()) return;
  double value = std::numeric_limits<double>::quiet_NaN();
  std::string why = r.decoder_status == "off" ? "decoder off: " + r.decoder_reason : "decoder " + r.decoder_status;
  if (r.decoder && r.decoder_status == "ok") {
    const LiveDecision& d = *r.decoder;
    const auto k = static_cast<size_t>(decoder_target_);
    if (config_.decoder_feedback == "probability") {
      value = d.probability.at(k);
    } else if (d.decision.size() == 1) {
      value = k == 1 ? d.decision[0] : -d.decision[0];  // positive towards the target class
    } else {
      value = d.decision.at(k);
    }
  }
  if (!decoder_feedback_) {
    r.feedback = FeedbackSample{};
    r.feedback->volume = r.index;
    r.feedback->status = FeedbackStatus::kDecoderOff;
    r.feedback->reason = why;
  } else {
    r.feedback = decoder_feedback_->process(r.index, value, why);
  }
  r.feedback_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void RunPipeline::update_decoder(int64_t index) {
  if (!decoder_) return;
  try {
    if (index != decoder_next_) {
      throw std::runtime_error(
          fmt::format("volume {} arrived where volume {} was due: the running statistics need every volume in order",
                      index, decoder_next_));
    }
    decoder_->enqueue(raw_ring_.data(), static_cast<size_t>(raw_ring_.slot_of(index) * voxels_));
    ++decoder_next_;
  } catch (const std::exception& e) {
    decoder_off_ = e.what();
    decoder_.reset();
    spdlog::error("run {}: decoder off: {}", run_, decoder_off_);
  }
}

void RunPipeline::read_decoder(TrResult& r) {
  if (config_.decoder_model.empty()) return;
  r.decoder_classes = decoder_classes_;
  if (decoder_) {
    try {
      LiveDecision d = decoder_->read();
      bool finite = true;
      for (const double v : d.decision) finite = finite && std::isfinite(v);
      if (!finite) {
        throw std::runtime_error(fmt::format(
            "volume {}: a decision value is not finite (a NaN or inf in a feature voxel): off for the rest of the "
            "run",
            d.volume));
      }
      r.decoder_status = d.ready ? "ok" : "warming-up";
      r.decoder = std::move(d);
      return;
    } catch (const std::exception& e) {
      decoder_off_ = e.what();
      decoder_.reset();
      spdlog::error("run {}: decoder off: {}", run_, decoder_off_);
    }
  }
  r.decoder_status = "off";
  r.decoder_reason = decoder_off_;
}

}  // namespace rtf::stream
